import type { FerryPlugin } from '@ferry/core';
import { kafka } from '@ferry/kafka';
import { postgres } from '@ferry/postgres';
import { s3 } from '@ferry/s3';
import { snowflake } from '@ferry/snowflake';
import { webhook } from '@ferry/webhook';
import type { ServerSettings } from './settings.js';

/**
 * The connector plugins `ferry serve` registers: `webhook`, `postgres`, `s3`, `kafka` and
 * `snowflake`. None takes an allow list of its own: every connector applies the engine's
 * outbound policy (`FERRY_OUTBOUND_ALLOW`, given to the engine once), which reaches plugins
 * through their context. The parameter stays for callers that pass the settings.
 */
export function serverPlugins(_settings?: Pick<ServerSettings, 'outboundAllow'>): FerryPlugin[] {
  return [webhook(), postgres(), s3(), kafka(), snowflake()];
}

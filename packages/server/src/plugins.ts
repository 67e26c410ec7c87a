import type { FerryPlugin } from '@ferry/core';
import { kafka } from '@ferry/kafka';
import { postgres } from '@ferry/postgres';
import { s3 } from '@ferry/s3';
import { snowflake } from '@ferry/snowflake';
import { webhook } from '@ferry/webhook';
import type { ServerSettings } from './settings.js';

/**
 * The connector plugins `ferry serve` registers: `webhook`, `postgres`, `s3`, `kafka` and `snowflake`.
 */
export function serverPlugins(settings: Pick<ServerSettings, 'outboundAllow'>): FerryPlugin[] {
  return [webhook({ allowHttp: settings.outboundAllow }), postgres(), s3(), kafka(), snowflake()];
}

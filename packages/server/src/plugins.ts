import type { FerryPlugin } from '@ferry/core';
import { postgres } from '@ferry/postgres';
import { s3 } from '@ferry/s3';
import { webhook } from '@ferry/webhook';
import type { ServerSettings } from './settings.js';

/**
 * The connector plugins `ferry serve` registers. Today: `webhook`, `postgres` and `s3`. The
 * kafka and snowflake plugins join this list as they are published.
 */
export function serverPlugins(settings: Pick<ServerSettings, 'outboundAllow'>): FerryPlugin[] {
  return [webhook({ allowHttp: settings.outboundAllow }), postgres(), s3()];
}

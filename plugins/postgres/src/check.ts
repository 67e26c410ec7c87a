import { ConnectorError, type ConnectorDirection } from '@ferry/core';
import type pg from 'pg';
import type { PostgresConfig } from './config.js';
import { describeTable, destinationSettings } from './destination.js';
import { readSql, sourceSettings } from './source.js';

/**
 * What a check proves beyond the connection, for the side the connector was created as: a
 * source's read runs with no rows (`LIMIT 0`), so the table or query, the cursor column and the
 * mapped columns exist and the role may read them; a destination's table exists with the written
 * columns and the role may insert into it (with `create_table` and no table yet, the first
 * write creates it: nothing more to prove). Throws a non-retryable {@link ConnectorError}
 * naming what is missing; server errors are the caller's to classify.
 */
export async function checkSide(client: pg.Client, config: PostgresConfig, direction: ConnectorDirection): Promise<void> {
  if (direction === 'source') {
    const settings = sourceSettings(config);
    const result = await client.query(readSql(settings, false), [0]);
    const names = new Set(result.fields.map((f) => f.name));
    for (const column of [settings.typeColumn, settings.occurredAtColumn]) {
      if (column !== undefined && !names.has(column)) {
        throw new ConnectorError('configuration_invalid', `The source has no column ${column}.`, { retryable: false });
      }
    }
    return;
  }
  const settings = destinationSettings(config);
  if (settings.createTable) {
    const exists = await client.query<{ found: boolean }>('SELECT to_regclass($1) IS NOT NULL AS found', [settings.table]);
    if (!exists.rows[0]!.found) return;
  }
  await describeTable(client, settings);
}

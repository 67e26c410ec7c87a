import { ConnectorError, type ConnectorDirection } from '@ferry/core';
import { DESTINATION_COLUMNS, type SnowflakeConfig } from './config.js';
import { errorCode, type SnowflakeSession } from './connection.js';
import { destinationSettings } from './destination.js';
import { CURSOR_KINDS, cursorTypeError, readSql, sourceSettings } from './source.js';

/**
 * What a check proves beyond the login, for the side the connector was created as: a source's
 * read runs with no rows (`LIMIT 0`), so the table or query and its cursor exist and the role
 * may read them, the cursor is of a type a read can resume from exactly, and the type and
 * occurred_at columns are among its columns; a destination's
 * table has the four written columns (with `create_table` and no table yet, the first write
 * creates it: nothing more to prove). Throws a non-retryable {@link ConnectorError} naming what
 * is missing; server errors are the caller's to classify.
 */
export async function checkSide(session: SnowflakeSession, config: SnowflakeConfig, direction: ConnectorDirection): Promise<void> {
  if (direction === 'source') {
    const settings = sourceSettings(config);
    const { columns, kinds } = await session.run(readSql(settings, false, 0));
    const names = new Set(columns.map((c) => c.toUpperCase()));
    const cursor = columns.find((c) => c === settings.cursor) ?? columns.find((c) => c === settings.cursor.toUpperCase());
    const kind = cursor === undefined ? undefined : kinds.get(cursor);
    if (kind !== undefined && !CURSOR_KINDS.has(kind)) {
      throw cursorTypeError(settings.cursor, kind);
    }
    for (const column of [settings.typeColumn, settings.occurredAtColumn]) {
      if (column !== undefined && !names.has(column.toUpperCase())) {
        throw new ConnectorError('configuration_invalid', `The source has no column ${column}.`, { retryable: false });
      }
    }
    return;
  }
  const settings = destinationSettings(config);
  try {
    await session.run(`SELECT ${DESTINATION_COLUMNS.join(', ')} FROM ${settings.table} LIMIT 0`);
  } catch (error) {
    if (errorCode(error) === '002003') {
      if (settings.createTable) return;
      throw new ConnectorError('table_not_found', `The destination table ${settings.table} does not exist, or the role may not see it; create it or set create_table.`, { retryable: false, cause: error });
    }
    if (errorCode(error) === '000904') {
      throw new ConnectorError('configuration_invalid', `The destination table ${settings.table} lacks a column of ${DESTINATION_COLUMNS.join(', ')}.`, { retryable: false, cause: error });
    }
    throw error;
  }
}

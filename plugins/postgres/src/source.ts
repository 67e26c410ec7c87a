import { ConnectorError, type Checkpoint, type JsonObject, type JsonValue, type PullSource, type SourceRecord } from '@ferry/core';
import type pg from 'pg';
import { DEFAULT_SOURCE_BATCH_SIZE, type PostgresConfig } from './config.js';
import { classifyError } from './connection.js';
import { parseTableName, quoteIdent, quoteTable } from './identifiers.js';

/**
 * The column alias under which the cursor is read a second time, as text. The cursor value is
 * taken from the server's own text form, never from the parsed JS value: a `timestamptz` parsed
 * to a Date loses its microseconds, and a position rebuilt from it would re-read or skip rows.
 */
const CURSOR_ALIAS = '__ferry_cursor';

/** What a source needs, resolved from its config. */
export interface SourceSettings {
  /** The FROM item: a quoted table, or the query as a parenthesised subquery. */
  readonly from: string;
  readonly cursor: string;
  readonly type?: string;
  readonly typeColumn?: string;
  readonly occurredAtColumn?: string;
  readonly batchSize: number;
}

/** Resolves a validated source config; throws a non-retryable error when it cannot. */
export function sourceSettings(config: PostgresConfig): SourceSettings {
  const invalid = (message: string) => new ConnectorError('configuration_invalid', message, { retryable: false });
  if (config.cursor_column === undefined) throw invalid('A postgres source needs a cursor_column.');
  if (config.type === undefined && config.type_column === undefined) throw invalid('A postgres source needs a type or a type_column.');
  let from: string;
  if (config.table !== undefined) {
    const table = parseTableName(config.table);
    if (table === null) throw invalid('table is not a valid table name.');
    from = quoteTable(table);
  } else if (config.query !== undefined) {
    // The query is the user's own SQL, run as a subquery; a trailing semicolon would end the
    // statement early, and a trailing `--` comment would swallow the closing parenthesis without
    // the newline. Several statements cannot sneak in: a query with parameters is one
    // statement by protocol.
    from = `(${config.query.trim().replace(/;+\s*$/, '')}\n)`;
  } else {
    throw invalid('A postgres source needs a table or a query.');
  }
  return {
    from,
    cursor: config.cursor_column,
    ...(config.type !== undefined ? { type: config.type } : {}),
    ...(config.type_column !== undefined ? { typeColumn: config.type_column } : {}),
    ...(config.occurred_at_column !== undefined ? { occurredAtColumn: config.occurred_at_column } : {}),
    batchSize: config.batch_size ?? DEFAULT_SOURCE_BATCH_SIZE,
  };
}

/**
 * The SQL of one read. With a checkpoint: rows whose cursor is greater than it, in cursor order;
 * `$1` takes the cursor column's own type, so the checkpoint's text is compared as that type.
 */
export function readSql(settings: SourceSettings, fromCheckpoint: boolean): string {
  const cursor = `ferry_rows.${quoteIdent(settings.cursor)}`;
  const where = fromCheckpoint ? ` WHERE ${cursor} > $1` : '';
  const limit = fromCheckpoint ? '$2' : '$1';
  return `SELECT ferry_rows.*, ${cursor}::text AS ${CURSOR_ALIAS} FROM ${settings.from} AS ferry_rows${where} ORDER BY ${cursor} LIMIT ${limit}`;
}

/**
 * A pull source over a table or query, read in cursor order. The checkpoint is the last read
 * cursor value as text; each record's position is its own cursor value, which is why the cursor
 * must be unique (README: "Choosing a cursor").
 */
export function postgresSource(pool: pg.Pool, settings: SourceSettings): PullSource {
  // pg refuses a second end(); the engine may close on pause and again on stop.
  let closing: Promise<void> | undefined;
  return {
    async read(checkpoint, max, signal) {
      if (signal.aborted) throw new ConnectorError('aborted', 'The read was cancelled.', { retryable: true });
      const limit = Math.max(1, Math.min(max, settings.batchSize));
      const after = checkpointCursor(checkpoint);
      const values = after === null ? [limit] : [after, limit];
      let rows: Record<string, unknown>[];
      try {
        rows = (await pool.query(readSql(settings, after !== null), values)).rows as Record<string, unknown>[];
      } catch (error) {
        throw classifyError(error, 'source');
      }
      const records = rows.map((row) => toRecord(row, settings));
      const last = records.at(-1);
      return { records, checkpoint: last === undefined ? (checkpoint ?? null) : last.position };
    },
    close: () => (closing ??= pool.end()),
  };
}

/** The cursor text a checkpoint holds, or null for "from the beginning". */
function checkpointCursor(checkpoint: Checkpoint | null): string | null {
  if (checkpoint === null || checkpoint === undefined) return null;
  if (typeof checkpoint === 'string') return checkpoint;
  // Numbers are accepted for a checkpoint set by hand; anything else is not one of ours.
  if (typeof checkpoint === 'number' && Number.isFinite(checkpoint)) return String(checkpoint);
  throw new ConnectorError('invalid_checkpoint', 'The checkpoint is not a postgres cursor value.', { retryable: false });
}

function toRecord(row: Record<string, unknown>, settings: SourceSettings): SourceRecord {
  const position = row[CURSOR_ALIAS];
  if (typeof position !== 'string') {
    // A null cursor can never be passed again by `>`: the row would be re-read forever or lost.
    throw new ConnectorError('invalid_record', `A row has a null ${settings.cursor}; the cursor column must be NOT NULL.`, { retryable: false });
  }
  const payload: JsonObject = {};
  // A plain loop with the common types inline: this runs for every column of every row read.
  for (const key in row) {
    if (key === CURSOR_ALIAS) continue;
    const value = row[key];
    payload[key] = typeof value === 'string' || typeof value === 'boolean' || value === null ? value : toJson(value);
  }
  const typed = settings.typeColumn !== undefined ? row[settings.typeColumn] : undefined;
  // A null type_column value falls back to the constant `type` when both are configured.
  const type = typeof typed === 'string' && typed !== '' ? typed : settings.type;
  if (type === undefined) {
    throw new ConnectorError('invalid_record', `The row at ${settings.cursor} ${position} has no ${settings.typeColumn} value, and no constant type is configured.`, { retryable: false });
  }
  const record: SourceRecord = { position, type, payload };
  if (settings.occurredAtColumn !== undefined) {
    const when = row[settings.occurredAtColumn];
    // Omitted when null or unusable: the engine then uses the read time (SourceRecord.occurredAt).
    if (when instanceof Date && !Number.isNaN(when.getTime())) record.occurredAt = when;
    else if (typeof when === 'string' && when !== '') record.occurredAt = when;
  }
  return record;
}

/**
 * A column value as JSON: Dates as ISO strings, Buffers (bytea) as base64, arrays and objects
 * element by element. int8 and numeric arrive as strings from pg and stay strings, so no
 * precision is lost.
 */
export function toJson(value: unknown): JsonValue {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (Buffer.isBuffer(value)) return value.toString('base64');
  if (Array.isArray(value)) return value.map(toJson);
  if (typeof value === 'object') {
    // Intervals, points and other parsed types are plain objects (or have toJSON).
    const withJson = value as { toJSON?: () => unknown };
    if (typeof withJson.toJSON === 'function') return toJson(withJson.toJSON());
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(value)) out[k] = toJson(v);
    return out;
  }
  return String(value);
}

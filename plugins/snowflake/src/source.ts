import { ConnectorError, type Checkpoint, type JsonObject, type JsonValue, type PullSource, type SourceRecord } from '@ferry/core';
import { DEFAULT_SOURCE_BATCH_SIZE, type SnowflakeConfig } from './config.js';
import { classifyError, type ColumnKind, type SnowflakeSession, type StatementResult } from './connection.js';
import { resultKey, sqlIdent, sqlObject } from './identifiers.js';

/** What a source needs, resolved from its config. */
export interface SourceSettings {
  /** The FROM item: a table, or the query as a parenthesised subquery. */
  readonly from: string;
  readonly cursor: string;
  readonly type?: string;
  readonly typeColumn?: string;
  readonly occurredAtColumn?: string;
  readonly batchSize: number;
}

/** Resolves a validated source config; throws a non-retryable error when it cannot. */
export function sourceSettings(config: SnowflakeConfig): SourceSettings {
  const invalid = (message: string) => new ConnectorError('configuration_invalid', message, { retryable: false });
  if (config.cursor_column === undefined) throw invalid('A snowflake source needs a cursor_column.');
  if (config.type === undefined && config.type_column === undefined) throw invalid('A snowflake source needs a type or a type_column.');
  let from: string;
  if (config.table !== undefined) from = sqlObject(config.table);
  // The user's own SELECT as a subquery: a trailing semicolon would end the statement early,
  // and a trailing `--` comment would swallow the closing parenthesis without the newline.
  else if (config.query !== undefined) from = `(${config.query.trim().replace(/;+\s*$/, '')}\n)`;
  else throw invalid('A snowflake source needs a table or a query.');
  return {
    from,
    cursor: sqlIdent(config.cursor_column),
    ...(config.type !== undefined ? { type: config.type } : {}),
    ...(config.type_column !== undefined ? { typeColumn: config.type_column } : {}),
    ...(config.occurred_at_column !== undefined ? { occurredAtColumn: config.occurred_at_column } : {}),
    batchSize: config.batch_size ?? DEFAULT_SOURCE_BATCH_SIZE,
  };
}

/**
 * The SQL of one read of at most `limit` rows, after the bound cursor when `fromCheckpoint`. The
 * bound text is compared as the cursor column's type (Snowflake casts it), so a number, a string,
 * a date or an ISO 8601 timestamp with nanoseconds all compare exactly.
 */
export function readSql(settings: SourceSettings, fromCheckpoint: boolean, limit: number): string {
  const cursor = `ferry_rows.${settings.cursor}`;
  const where = fromCheckpoint ? ` WHERE ${cursor} > ?` : '';
  // The limit is an integer the plugin computed, never config text.
  return `SELECT ferry_rows.* FROM ${settings.from} AS ferry_rows${where} ORDER BY ${cursor} LIMIT ${Math.max(0, Math.trunc(limit))}`;
}

/** The cursor kinds a source can resume from exactly. */
export const CURSOR_KINDS: ReadonlySet<ColumnKind> = new Set(['number', 'text', 'date', 'timestamp']);

/**
 * A cursor value as the position text a checkpoint holds, exactly: a NUMBER as the server's
 * text, a string as it is, a DATE as `YYYY-MM-DD`, a timestamp as ISO 8601 with all nine
 * fraction digits (from the driver's epoch seconds and nanoseconds: a Date alone keeps only
 * milliseconds, and two rows within one millisecond would share a position). A FLOAT cannot be
 * compared exactly and is refused, as are BOOLEAN, VARIANT and the other types.
 */
export function positionOf(value: unknown, kind: ColumnKind | undefined, cursor: string): string {
  if (value === null || value === undefined) {
    // A null cursor can never be passed again by `>`: the row would be re-read forever or lost.
    throw new ConnectorError('invalid_record', `A row has a null ${cursor}; the cursor column must be NOT NULL.`, { retryable: false });
  }
  if (kind === 'timestamp' && isSnowflakeDate(value)) {
    const seconds = new Date(value.getEpochSeconds() * 1000).toISOString().slice(0, 19);
    return `${seconds}.${String(value.getNanoSeconds()).padStart(9, '0')}Z`;
  }
  if (kind === 'date' && value instanceof Date) return value.toISOString().slice(0, 10);
  if ((kind === 'number' || kind === 'text') && typeof value === 'string') return value;
  throw cursorTypeError(cursor, kind);
}

/** The error of a cursor column whose type a read cannot resume from exactly. */
export function cursorTypeError(cursor: string, kind: ColumnKind | undefined): ConnectorError {
  const what = kind === 'real' ? 'a FLOAT, whose values cannot be compared exactly' : 'of a type that cannot be a cursor';
  return new ConnectorError('configuration_invalid', `The cursor column ${cursor} is ${what}; use a NUMBER, a string, a DATE or a timestamp column.`, { retryable: false });
}

/** The driver's timestamp: a Date with the exact epoch seconds and nanoseconds. */
function isSnowflakeDate(value: unknown): value is Date & { getEpochSeconds(): number; getNanoSeconds(): number } {
  const candidate = value as { getEpochSeconds?: unknown; getNanoSeconds?: unknown };
  return value instanceof Date && typeof candidate.getEpochSeconds === 'function' && typeof candidate.getNanoSeconds === 'function';
}

/**
 * A pull source over a table or query, read in cursor order. The checkpoint is the last read
 * cursor value as exact text ({@link positionOf}); each record's position is its own cursor
 * value, which is why the cursor must be unique and only ever grow (README: "Choosing a cursor").
 */
export function snowflakeSource(session: SnowflakeSession, settings: SourceSettings): PullSource {
  return {
    async read(checkpoint, max, signal) {
      if (signal.aborted) throw new ConnectorError('aborted', 'The read was cancelled.', { retryable: true });
      const limit = Math.max(1, Math.min(max, settings.batchSize));
      const after = checkpointCursor(checkpoint);
      let result: StatementResult;
      try {
        result = await session.run(readSql(settings, after !== null, limit), after === null ? [] : [after], signal);
      } catch (error) {
        throw classifyError(error, 'source');
      }
      const records = result.rows.map((row) => toRecord(row, settings, result.kinds));
      const last = records.at(-1);
      return { records, checkpoint: last === undefined ? (checkpoint ?? null) : last.position };
    },
    close: () => session.close(),
  };
}

/** The cursor text a checkpoint holds, or null for "from the beginning". */
function checkpointCursor(checkpoint: Checkpoint | null): string | null {
  if (checkpoint === null || checkpoint === undefined) return null;
  if (typeof checkpoint === 'string') return checkpoint;
  if (typeof checkpoint === 'number' && Number.isFinite(checkpoint)) return String(checkpoint);
  throw new ConnectorError('invalid_checkpoint', 'The checkpoint is not a snowflake cursor value.', { retryable: false });
}

function toRecord(row: Record<string, unknown>, settings: SourceSettings, kinds: ReadonlyMap<string, ColumnKind>): SourceRecord {
  const cursorKey = resultKey(row, settings.cursor);
  const cursorKind = kinds.get(cursorKey);
  const position = positionOf(numericNull(row[cursorKey], cursorKind), cursorKind, settings.cursor);
  const payload: JsonObject = {};
  for (const key in row) {
    const kind = kinds.get(key);
    const value = numericNull(row[key], kind);
    payload[key] = typeof value === 'string' && (kind === 'number' || kind === 'real') ? exactNumber(value) : toJson(value);
  }
  const typed = settings.typeColumn !== undefined ? row[resultKey(row, settings.typeColumn)] : undefined;
  // A null type_column value falls back to the constant `type` when both are configured.
  const type = typeof typed === 'string' && typed !== '' ? typed : settings.type;
  if (type === undefined) {
    throw new ConnectorError('invalid_record', `The row at ${settings.cursor} ${position} has no ${settings.typeColumn} value, and no constant type is configured.`, { retryable: false });
  }
  const record: SourceRecord = { position, type, payload };
  if (settings.occurredAtColumn !== undefined) {
    const when = row[resultKey(row, settings.occurredAtColumn)];
    // Omitted when null or unusable: the engine then uses the read time (SourceRecord.occurredAt).
    if (when instanceof Date && !Number.isNaN(when.getTime())) record.occurredAt = when;
    else if (typeof when === 'string' && when !== '') record.occurredAt = when;
  }
  return record;
}

/**
 * A numeric column's null as null. Numbers are fetched as text, and the driver spells a null it
 * turns into text `"NULL"` (its process-wide `representNullAsStringNull`, on by default, which
 * a plugin should not change for the whole process); no number reads `NULL`.
 */
function numericNull(value: unknown, kind: ColumnKind | undefined): unknown {
  return value === 'NULL' && (kind === 'number' || kind === 'real') ? null : value;
}

/**
 * A NUMBER or FLOAT column's text as JSON: a number when a double holds it exactly (it prints
 * back the same), otherwise the text itself (`9007199254740993`, `0.1000000000000000055`), so no
 * digit is lost on the way.
 */
export function exactNumber(text: string): JsonValue {
  const value = Number(text);
  if (!Number.isFinite(value)) return text;
  // A decimal printed with its scale (`1.50`) is still exactly the number 1.5.
  const canonical = text.includes('.') && !/e/i.test(text) ? text.replace(/0+$/, '').replace(/\.$/, '') : text;
  return String(value) === canonical ? value : text;
}

/**
 * A column value as JSON: timestamps and dates as ISO strings, BINARY as base64, VARIANT /
 * OBJECT / ARRAY values as they are.
 */
export function toJson(value: unknown): JsonValue {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (Buffer.isBuffer(value)) return value.toString('base64');
  if (Array.isArray(value)) return value.map(toJson);
  if (typeof value === 'object') {
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(value)) out[k] = toJson(v);
    return out;
  }
  return String(value);
}


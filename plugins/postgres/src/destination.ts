import { ConnectorError, type Destination, type DestinationEvent, type JsonValue, type WriteResult } from '@ferry/core';
import type pg from 'pg';
import type { PostgresConfig } from './config.js';
import { classifyError, isRecordError, serverMessage, sqlState } from './connection.js';
import { parseTableName, quoteIdent, quoteTable } from './identifiers.js';

/** Postgres accepts at most 65535 bind parameters in one statement. */
export const MAX_BIND_PARAMETERS = 65_535;
/**
 * Most rows in one INSERT, whatever the column count: past a few hundred rows a bigger statement
 * saves little, while its parse time and a failed batch's row-by-row retry grow.
 */
export const MAX_ROWS_PER_STATEMENT = 1000;

/** One written column: its name and where its value comes from. */
type ColumnSource = { kind: 'id' } | { kind: 'type' } | { kind: 'occurred_at' } | { kind: 'payload' } | { kind: 'path'; path: readonly string[] };

/** What a destination needs, resolved from its config. */
export interface DestinationSettings {
  /** The quoted, possibly schema-qualified table. */
  readonly table: string;
  readonly mode: 'upsert' | 'insert';
  readonly createTable: boolean;
  /** Columns in statement order; the first three are always id, type, occurred_at. */
  readonly columns: readonly { readonly name: string; readonly source: ColumnSource }[];
}

/** Resolves a validated destination config; throws a non-retryable error when it cannot. */
export function destinationSettings(config: PostgresConfig): DestinationSettings {
  const invalid = (message: string) => new ConnectorError('configuration_invalid', message, { retryable: false });
  if (config.table === undefined) throw invalid('A postgres destination needs a table.');
  const table = parseTableName(config.table);
  if (table === null) throw invalid('table is not a valid table name.');
  const columns: { name: string; source: ColumnSource }[] = [
    { name: 'id', source: { kind: 'id' } },
    { name: 'type', source: { kind: 'type' } },
    { name: 'occurred_at', source: { kind: 'occurred_at' } },
  ];
  if (config.columns === undefined) columns.push({ name: 'payload', source: { kind: 'payload' } });
  else for (const [name, path] of Object.entries(config.columns)) columns.push({ name, source: { kind: 'path', path: path.split('.') } });
  // quoteIdent throws on a name validateConfig would have refused: never build SQL from it.
  for (const column of columns) quoteIdent(column.name);
  return { table: quoteTable(table), mode: config.mode ?? 'upsert', createTable: config.create_table ?? false, columns };
}

/**
 * The table `create_table` makes: the default layout, or with `columns`, each mapped column as
 * `jsonb` (a payload value may be any JSON; users who want typed columns create the table).
 */
export function createTableSql(settings: DestinationSettings): string {
  const defs = settings.columns.map((c) => {
    if (c.source.kind === 'id') return `${quoteIdent(c.name)} text PRIMARY KEY`;
    if (c.source.kind === 'type') return `${quoteIdent(c.name)} text NOT NULL`;
    if (c.source.kind === 'occurred_at') return `${quoteIdent(c.name)} timestamptz NOT NULL`;
    return `${quoteIdent(c.name)} jsonb`;
  });
  return `CREATE TABLE IF NOT EXISTS ${settings.table} (${defs.join(', ')})`;
}

/** The INSERT of `rows` rows, numbered from $1, with the mode's conflict clause. */
export function insertSql(settings: DestinationSettings, rows: number): string {
  const width = settings.columns.length;
  const tuples: string[] = [];
  for (let r = 0; r < rows; r++) {
    const params = settings.columns.map((_, c) => `$${r * width + c + 1}`);
    tuples.push(`(${params.join(', ')})`);
  }
  const names = settings.columns.map((c) => quoteIdent(c.name)).join(', ');
  // ON CONFLICT (id) DO NOTHING is what makes re-delivery idempotent: the engine sends the same
  // event id again after a crash between the write and its checkpoint commit.
  const conflict = settings.mode === 'upsert' ? ' ON CONFLICT ("id") DO NOTHING' : '';
  return `INSERT INTO ${settings.table} (${names}) VALUES ${tuples.join(', ')}${conflict}`;
}

/** Rows per statement for a column count, under the bind-parameter limit. */
export function rowsPerStatement(width: number): number {
  return Math.max(1, Math.min(MAX_ROWS_PER_STATEMENT, Math.floor(MAX_BIND_PARAMETERS / width)));
}

/**
 * A destination writing batches with multi-row INSERTs. The table is created (when asked) and
 * its column types read on the first write, not on open, so opening never needs the server.
 */
export function postgresDestination(pool: pg.Pool, settings: DestinationSettings): Destination {
  let prepared: Promise<readonly Encoder[]> | undefined;
  const prepare = () => {
    prepared ??= prepareTable(pool, settings).catch((error: unknown) => {
      prepared = undefined; // an outage while preparing is tried again on the next write
      throw error;
    });
    return prepared;
  };
  const perStatement = rowsPerStatement(settings.columns.length);
  // pg refuses a second end(); the engine may close on pause and again on stop.
  let closing: Promise<void> | undefined;

  return {
    async write(events, signal) {
      const results: WriteResult[] = events.map(() => ({ ok: true }));
      if (events.length === 0) return results;
      let encoders: readonly Encoder[];
      try {
        encoders = await prepare();
      } catch (error) {
        throw classifyError(error, 'destination');
      }
      for (let start = 0; start < events.length; start += perStatement) {
        if (signal.aborted) throw new ConnectorError('aborted', 'The write was cancelled.', { retryable: true });
        const chunk = events.slice(start, start + perStatement);
        try {
          await pool.query(insertSql(settings, chunk.length), chunk.flatMap((e) => encodeRow(e, settings, encoders)));
          continue;
        } catch (error) {
          if (!isRecordError(error)) throw classifyError(error, 'destination');
        }
        // One row made the whole statement fail; find it (or them) by writing the rows one by
        // one, so only the bad rows are rejected and dead-lettered and the rest land.
        for (let i = 0; i < chunk.length; i++) {
          const event = chunk[i]!;
          try {
            await pool.query(insertSql(settings, 1), encodeRow(event, settings, encoders));
          } catch (error) {
            if (!isRecordError(error)) throw classifyError(error, 'destination');
            results[start + i] = { ok: false, error: recordRejected(error) };
          }
        }
      }
      return results;
    },
    close: () => (closing ??= pool.end()),
  };
}

function recordRejected(error: unknown): ConnectorError {
  return new ConnectorError('record_rejected', `The database rejected the row (SQLSTATE ${sqlState(error)}): ${serverMessage(error)}`, { retryable: false, cause: error });
}

/** How one column's value is sent: as JSON text for json/jsonb columns, as plain text otherwise. */
type Encoder = (value: JsonValue | undefined) => string | null;

const asJson: Encoder = (value) => (value === undefined ? null : JSON.stringify(value));
const asText: Encoder = (value) => {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
};

/**
 * Creates the table when asked, then reads the written columns' types: a payload string bound
 * to a jsonb column must be sent as JSON (`"abc"`), bound to a text column as itself (`abc`).
 */
async function prepareTable(pool: pg.Pool, settings: DestinationSettings): Promise<Encoder[]> {
  if (settings.createTable) await pool.query(createTableSql(settings));
  const { rows } = await pool.query<{ attname: string; typname: string }>(
    `SELECT a.attname, t.typname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
      WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped`,
    [settings.table],
  );
  if (rows.length === 0) {
    throw new ConnectorError('table_not_found', `The destination table ${settings.table} does not exist; create it or set create_table.`, { retryable: false });
  }
  const types = new Map(rows.map((r) => [r.attname, r.typname]));
  const missing = settings.columns.filter((c) => !types.has(c.name)).map((c) => c.name);
  if (missing.length > 0) {
    throw new ConnectorError('configuration_invalid', `The destination table ${settings.table} has no column ${missing.join(', ')}.`, { retryable: false });
  }
  return settings.columns.map((c) => (types.get(c.name) === 'json' || types.get(c.name) === 'jsonb' ? asJson : asText));
}

function encodeRow(event: DestinationEvent, settings: DestinationSettings, encoders: readonly Encoder[]): (string | null)[] {
  return settings.columns.map((column, i) => {
    const encode = encoders[i]!;
    switch (column.source.kind) {
      case 'id':
        return encode(event.id);
      case 'type':
        return encode(event.type);
      case 'occurred_at':
        return encode(event.occurredAt);
      case 'payload':
        return encode(event.payload);
      case 'path':
        return encode(valueAt(event.payload, column.source.path));
    }
  });
}

/** The payload value at a dot path; undefined (written as NULL) when any step is missing. */
export function valueAt(payload: JsonValue, path: readonly string[]): JsonValue | undefined {
  let current: JsonValue | undefined = payload;
  for (const key of path) {
    if (current === null || typeof current !== 'object' || Array.isArray(current)) return undefined;
    current = (current as { [key: string]: JsonValue })[key];
    if (current === undefined) return undefined;
  }
  return current;
}

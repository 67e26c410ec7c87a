import { ConnectorError, payloadJson, type Destination, type DestinationEvent, type JsonValue, type WriteResult } from '@ferry/core';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { PostgresConfig } from './config.js';
import { classifyError, isRecordError, serverMessage, sqlState } from './connection.js';
import { parseTableName, quoteIdent, quoteTable } from './identifiers.js';

/**
 * Most rows in one INSERT. The rows travel as one JSON parameter, so no bind-parameter limit
 * applies; past a few hundred rows a bigger statement saves little, while a failed statement's
 * row-by-row retry grows with it.
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

/**
 * The INSERT of a batch. The rows are one JSON parameter, an array of objects `{"c0": ..., "c1":
 * ...}` whose values are the columns' text forms (or null), unpacked by `json_to_recordset` and
 * cast to each column's type: the same input functions a text bind parameter goes through, so a
 * value lands exactly as it would from `VALUES ($1, ...)`, while the server parses one small
 * statement and one JSON text instead of thousands of parameters (measured 1.45x the rows/s of a
 * multi-row VALUES with 4,000 parameters, at half the client CPU). `types` are the columns' types
 * as `format_type` spells them without their modifier, in statement order: an explicit cast to
 * `varchar(3)` would cut a longer value short, where the INSERT's own assignment to the column
 * refuses it, as it refuses a bound parameter.
 */
export function insertSql(settings: DestinationSettings, types: readonly string[]): string {
  const names = settings.columns.map((c) => quoteIdent(c.name)).join(', ');
  const casts = types.map((type, i) => `x.c${i}::${type}`).join(', ');
  const record = types.map((_, i) => `c${i} text`).join(', ');
  // ON CONFLICT (id) DO NOTHING is what makes re-delivery idempotent: the engine sends the same
  // event id again after a crash between the write and its checkpoint commit.
  const conflict = settings.mode === 'upsert' ? ' ON CONFLICT ("id") DO NOTHING' : '';
  return `INSERT INTO ${settings.table} (${names}) SELECT ${casts} FROM json_to_recordset($1::json) AS x(${record})${conflict}`;
}

/** The COPY of a batch into the written columns (text format). */
export function copySql(settings: DestinationSettings): string {
  return `COPY ${settings.table} (${settings.columns.map((c) => quoteIdent(c.name)).join(', ')}) FROM STDIN`;
}

/** One value in COPY's text format: backslash, tab, newline and carriage return escaped, null as `\N`. */
function copyValue(value: string | null): string {
  if (value === null) return '\\N';
  // Four scans for single characters cost half of one scan for a class of them.
  if (value.indexOf('\\') === -1 && value.indexOf('\t') === -1 && value.indexOf('\n') === -1 && value.indexOf('\r') === -1) return value;
  return value.replace(/[\\\t\n\r]/g, (c) => COPY_ESCAPES[c]!);
}

const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** JSON text as a COPY field: only backslashes need doubling (JSON.stringify escapes every control character). */
function escapeJson(json: string): string {
  return json.indexOf('\\') === -1 ? json : json.replaceAll('\\', '\\\\');
}

/**
 * One column's field of a COPY line, escaped, from an event: the column's source and encoder
 * resolved once per batch, not per value. JSON text needs only its backslashes doubled:
 * JSON.stringify writes every control character as an escape.
 */
function copyField(source: ColumnSource, encoder: Encoder): (event: DestinationEvent) => string {
  if (encoder === asJson && source.kind === 'payload') {
    // The payload's text made once per event: the engine's event log takes the same text.
    return (event) => escapeJson(payloadJson(event));
  }
  if (encoder === asJson) {
    return (event) => {
      const value = columnValue(event, source);
      if (value === undefined) return '\\N';
      return escapeJson(JSON.stringify(value));
    };
  }
  switch (source.kind) {
    case 'id':
      return (event) => copyValue(encoder(event.id));
    case 'type':
      return (event) => copyValue(encoder(event.type));
    case 'occurred_at':
      return (event) => copyValue(encoder(event.occurredAt));
    default:
      return (event) => copyValue(encoder(columnValue(event, source)));
  }
}

/**
 * The COPY data of {@link copySql} for `events`: one line per event, in one Buffer, outside the JS
 * heap (a batch's text as one string stayed in the heap until a full collection, and the engine's
 * heap grew by hundreds of MB between two).
 */
export function copyRows(events: readonly DestinationEvent[], settings: DestinationSettings, encoders: readonly Encoder[]): Buffer {
  const fields = settings.columns.map((column, i) => copyField(column.source, encoders[i]!));
  const width = fields.length;
  const lines: string[] = new Array(events.length + 1);
  for (let e = 0; e < events.length; e++) {
    const event = events[e]!;
    let line = fields[0]!(event);
    for (let i = 1; i < width; i++) line += '\t' + fields[i]!(event);
    lines[e] = line;
  }
  lines[events.length] = '';
  return Buffer.from(lines.join('\n'));
}

/** The JSON parameter of {@link insertSql} for `events`. */
export function insertRows(events: readonly DestinationEvent[], settings: DestinationSettings, encoders: readonly Encoder[]): string {
  const keys = settings.columns.map((_, i) => `c${i}`);
  return JSON.stringify(
    events.map((event) => {
      const values = encodeRow(event, settings, encoders);
      const row: Record<string, string | null> = {};
      for (let i = 0; i < keys.length; i++) row[keys[i]!] = values[i]!;
      return row;
    }),
  );
}

/**
 * COPYs `data` into the table on a connection of its own. The connection is closed after a
 * failed COPY rather than handed back: whatever broke it, the next write gets a clean one.
 */
async function copyInto(pool: pg.Pool, sql: string, data: Buffer): Promise<void> {
  const client = await pool.connect();
  let failure: Error | undefined;
  try {
    await pipeline(Readable.from([data]), client.query(copyFrom(sql)));
  } catch (error) {
    failure = error instanceof Error ? error : new Error(String(error));
    throw error;
  } finally {
    client.release(failure);
  }
}

/**
 * A destination writing batches with COPY, falling back to INSERTs. The table is created (when asked) and
 * its column types read on the first write, not on open, so opening never needs the server.
 */
export function postgresDestination(pool: pg.Pool, settings: DestinationSettings): Destination {
  let prepared: Promise<PreparedTable> | undefined;
  /** The table once a write found it ready: what `prepare` builds COPY text for. */
  let known: PreparedTable | undefined;
  const prepare = () => {
    prepared ??= prepareTable(pool, settings).then(
      (table) => (known = table),
      (error: unknown) => {
        prepared = undefined; // an outage while preparing is tried again on the next write
        throw error;
      },
    );
    return prepared;
  };
  /** COPY data made ahead by `prepare`, by the events array a later `write` is given. */
  const copies = new WeakMap<readonly DestinationEvent[], Buffer>();
  // pg refuses a second end(); the engine may close on pause and again on stop.
  let closing: Promise<void> | undefined;
  /** Cleared when the table refused a COPY for a reason other than its rows. */
  let copying = true;

  return {
    prepare(events) {
      // Only a batch one COPY takes, for a table a write has already found taking COPYs.
      if (!known?.copy || !copying || events.length === 0 || events.length > MAX_ROWS_PER_STATEMENT) return;
      try {
        copies.set(events, copyRows(events, settings, known.encoders));
      } catch {
        // The write makes it again, and fails there if it must.
      }
    },
    async write(events, signal) {
      const results: WriteResult[] = new Array<WriteResult>(events.length).fill(WRITTEN);
      if (events.length === 0) return results;
      const made = copies.get(events);
      copies.delete(events);
      let table: PreparedTable;
      try {
        table = await prepare();
      } catch (error) {
        throw classifyError(error, 'destination');
      }
      for (let start = 0; start < events.length; start += MAX_ROWS_PER_STATEMENT) {
        if (signal.aborted) throw new ConnectorError('aborted', 'The write was cancelled.', { retryable: true });
        const chunk = events.slice(start, start + MAX_ROWS_PER_STATEMENT);
        if (copying && table.copy) {
          try {
            // Made by prepare() for this table's encoders, the one chunk of this write.
            const data = made !== undefined && start === 0 && table === known ? made : copyRows(chunk, settings, table.encoders);
            await copyInto(pool, copySql(settings), data);
            continue;
          } catch (error) {
            const classified = classifyError(error, 'destination');
            if (sqlState(error) === undefined || classified.retryable) throw classified;
            // A refused row or an id written before: the INSERT below sorts them out. Anything
            // else (row-level security, a trigger that does not allow COPY) means this table
            // takes INSERTs only, from now on.
            if (!isRecordError(error)) copying = false;
          }
        }
        try {
          await pool.query(table.sql, [insertRows(chunk, settings, table.encoders)]);
          continue;
        } catch (error) {
          if (!isRecordError(error)) throw classifyError(error, 'destination');
        }
        // One row made the whole statement fail; find it (or them) by writing the rows one by
        // one, so only the bad rows are rejected and dead-lettered and the rest land.
        for (let i = 0; i < chunk.length; i++) {
          const event = chunk[i]!;
          try {
            await pool.query(table.sql, [insertRows([event], settings, table.encoders)]);
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

/** The result of every row written: one object shared by all (results are replaced, not changed). */
const WRITTEN: WriteResult = Object.freeze({ ok: true });

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

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * A `bytea` column: binary values travel in payloads as base64 (as every source writes them),
 * so a base64 string is written as the bytes it stands for (hex input, `\x...`), not as its
 * text. Anything else goes in as text, which bytea's own input reads (`\x...` hex included).
 */
const asBytea: Encoder = (value) => {
  if (typeof value === 'string' && BASE64.test(value)) return `\\x${Buffer.from(value, 'base64').toString('hex')}`;
  return asText(value);
};

/** The written table as the first write found it: the INSERT, and how each column's value is sent. */
interface PreparedTable {
  readonly sql: string;
  readonly encoders: readonly Encoder[];
  /** A plain or partitioned table takes COPY; a view or a foreign table takes INSERTs only. */
  readonly copy: boolean;
}

/**
 * Creates the table when asked, then reads the written columns' types: the INSERT casts to them,
 * and a payload string bound to a jsonb column must be sent as JSON (`"abc"`), bound to a text
 * column as itself (`abc`). A json or jsonb domain counts as json.
 */
async function prepareTable(pool: pg.Pool, settings: DestinationSettings): Promise<PreparedTable> {
  if (settings.createTable) await pool.query(createTableSql(settings));
  const { columns, relkind } = await describeTable(pool, settings);
  return {
    sql: insertSql(settings, columns.map((c) => c.formatted)),
    encoders: columns.map((c) => (c.typname === 'json' || c.typname === 'jsonb' ? asJson : c.typname === 'bytea' ? asBytea : asText)),
    copy: relkind === 'r' || relkind === 'p',
  };
}

/** A written column as the catalog describes it. */
interface TableColumn {
  readonly attname: string;
  /** The type's name, or its base type's for a domain. */
  readonly typname: string;
  /** The type as `format_type` spells it, without a modifier. */
  readonly formatted: string;
}

/** One column of the destination table, with what decides whether it takes Ferry's rows. */
interface CatalogColumn extends TableColumn {
  readonly relkind: string;
  readonly insertable: boolean;
  /** The declared type, with its modifier (`varchar(10)`) and as a domain if it is one. */
  readonly declared: string;
  /** The base type of a domain (or the type itself), without a modifier. */
  readonly base: string;
  /** `typtype` of the base type: `e` for an enum. */
  readonly basekind: string;
  /** NOT NULL, on the column or on its domain. */
  readonly notnull: boolean;
  /** A default, on the column or on its domain. */
  readonly hasdefault: boolean;
  /** `a` (GENERATED ALWAYS AS IDENTITY), `d` (BY DEFAULT) or empty. */
  readonly attidentity: string;
  /** `s` (stored), `v` (virtual) or empty. */
  readonly attgenerated: string;
  /** A unique index on `id` alone that `ON CONFLICT ("id")` can use. */
  readonly unique_id: boolean;
  /** `server_version_num`: `pg_input_is_valid` exists from 160000. */
  readonly version: number;
}

/**
 * A Ferry event id as the destination receives it: `evt_` and 26 characters, always. A column
 * that refuses this value refuses every id.
 */
export const SAMPLE_EVENT_ID = 'evt_01JD8X3Q5Y7Z9A1B2C3D4E5F6G';

/**
 * What each column Ferry always writes is checked with, and what to tell the user when its type
 * refuses it. Only `id` and `occurred_at` have values of one fixed shape (an id of 30
 * characters, an ISO 8601 UTC time with milliseconds): they are tried against the declared type,
 * modifier and domain included. A type or a payload varies from row to row: they are tried
 * against the base type only, so a `varchar(20)` or a domain with its own CHECK is left to
 * refuse the rows it refuses, one by one, and an enum (whose labels are the user's own event
 * types) is not tried at all.
 */
const PROBES: Record<'id' | 'type' | 'occurred_at' | 'payload', { exact: boolean; wants: string; fix: string }> = {
  id: { exact: true, wants: `Ferry's event ids (text such as ${SAMPLE_EVENT_ID})`, fix: 'make it text' },
  type: { exact: false, wants: 'event types (text such as order.created)', fix: 'make it text' },
  occurred_at: { exact: true, wants: "the events' times (ISO 8601 such as 2026-01-02T03:04:05.678Z)", fix: 'make it timestamptz' },
  payload: { exact: false, wants: 'payloads (JSON objects)', fix: 'make it jsonb' },
};

/**
 * The written columns of the destination table, in statement order, and the table's kind, once
 * the table is proven to take Ferry's rows. Throws a non-retryable error otherwise:
 * `table_not_found` when it does not exist, `permission_denied` when the connector's role may
 * not insert into it, and `configuration_invalid`, naming the column, when a column is missing
 * or when every row would be refused, which is what a check must find (a table that checks
 * `healthy` and then dead-letters each row is worse than one that is `down`):
 *
 * - a written column whose type refuses Ferry's value for it: an `id bigint` or `uuid` refuses
 *   every event id. Tried with the column type's own input function (`pg_input_is_valid`, from
 *   Postgres 16; before, a cast to the type without its modifier), which is what COPY and the
 *   INSERT's casts run: no row is written, no trigger fires, nothing needs rolling back;
 * - a written column that is generated, or an identity `GENERATED ALWAYS`: it refuses any value;
 * - a NOT NULL column Ferry does not write, without a default, identity or generated value: it
 *   makes every INSERT fail (a mapped column may be NULL for some payloads only: left to them);
 * - in `upsert` mode, a table without a unique index on `id` alone: `ON CONFLICT ("id")` is
 *   refused, and re-delivered ids would not be caught (views are not checked: their base
 *   table's index is what counts, and Postgres finds it).
 */
export async function describeTable(db: pg.Pool | pg.Client, settings: DestinationSettings, now: Date = new Date()): Promise<{ columns: TableColumn[]; relkind: string }> {
  const { rows } = await db.query<CatalogColumn>(
    `SELECT a.attname, coalesce(b.typname, t.typname) AS typname, format_type(a.atttypid, NULL) AS formatted, c.relkind,
            has_table_privilege(c.oid, 'INSERT') AS insertable,
            format_type(a.atttypid, a.atttypmod) AS declared, format_type(coalesce(b.oid, t.oid), NULL) AS base,
            coalesce(b.typtype, t.typtype) AS basekind,
            a.attnotnull OR t.typnotnull AS notnull,
            a.atthasdef OR t.typdefaultbin IS NOT NULL AS hasdefault, a.attidentity::text AS attidentity, a.attgenerated::text AS attgenerated,
            EXISTS (SELECT 1 FROM pg_index i JOIN pg_attribute k ON k.attrelid = c.oid AND k.attname = 'id'
                     WHERE i.indrelid = c.oid AND i.indisunique AND i.indimmediate AND i.indisvalid AND i.indnkeyatts = 1
                       AND i.indkey[0] = k.attnum AND i.indpred IS NULL AND i.indexprs IS NULL) AS unique_id,
            current_setting('server_version_num')::int AS version
       FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_type t ON t.oid = a.atttypid
       LEFT JOIN pg_type b ON t.typtype = 'd' AND b.oid = t.typbasetype
      WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY a.attnum`,
    [settings.table],
  );
  if (rows.length === 0) {
    throw new ConnectorError('table_not_found', `The destination table ${settings.table} does not exist; create it or set create_table.`, { retryable: false });
  }
  const invalid = (message: string) => new ConnectorError('configuration_invalid', message, { retryable: false });
  const types = new Map(rows.map((r) => [r.attname, r]));
  const missing = settings.columns.filter((c) => !types.has(c.name)).map((c) => c.name);
  if (missing.length > 0) throw invalid(`The destination table ${settings.table} has no column ${missing.join(', ')}.`);
  if (!rows[0]!.insertable) {
    throw new ConnectorError('permission_denied', `The connector's role may not insert into ${settings.table}.`, { retryable: false });
  }
  const problems = await refusals(db, settings, rows, now);
  if (problems.length > 0) {
    throw invalid(`The destination table ${settings.table} would refuse every row Ferry writes: ${problems.slice(0, 5).join('; ')}.`);
  }
  return { columns: settings.columns.map((c) => types.get(c.name)!), relkind: rows[0]!.relkind };
}

/** Why the table would refuse every row, one sentence per column (empty when it takes them). */
async function refusals(db: pg.Pool | pg.Client, settings: DestinationSettings, rows: readonly CatalogColumn[], now: Date): Promise<string[]> {
  const problems: string[] = [];
  const written = new Map(settings.columns.map((c) => [c.name, c.source]));
  for (const column of rows) {
    const name = `"${column.attname}"`;
    if (!written.has(column.attname)) {
      if (column.notnull && !column.hasdefault && column.attidentity === '' && column.attgenerated === '') {
        problems.push(`column ${name} is NOT NULL without a default and Ferry does not write it (give it a default, drop NOT NULL, or map a payload path to it in columns)`);
      }
      continue;
    }
    if (column.attgenerated !== '') problems.push(`column ${name} is generated and takes no written value (leave it out of columns, or make it a plain column)`);
    else if (column.attidentity === 'a') problems.push(`column ${name} is GENERATED ALWAYS AS IDENTITY and takes no written value (make it a plain column)`);
  }
  if (settings.mode === 'upsert' && (rows[0]!.relkind === 'r' || rows[0]!.relkind === 'p') && !rows[0]!.unique_id) {
    problems.push('mode upsert writes with ON CONFLICT ("id"), which needs a primary key or unique index on "id" alone (add one, or set mode insert)');
  }
  for (const { name, source } of settings.columns) {
    if (source.kind === 'path') continue; // a payload path's values are anyone's: only rows can tell
    const column = rows.find((r) => r.attname === name)!;
    const probe = PROBES[source.kind];
    if (!probe.exact && column.basekind === 'e') continue;
    const sample = source.kind === 'id' ? SAMPLE_EVENT_ID : source.kind === 'occurred_at' ? now.toISOString() : source.kind === 'type' ? 'order.created' : { ferry: 'check' };
    const json = column.typname === 'json' || column.typname === 'jsonb';
    const text = json ? JSON.stringify(sample) : typeof sample === 'string' ? sample : JSON.stringify(sample);
    const type = probe.exact ? { full: column.declared, plain: column.formatted } : { full: column.base, plain: column.base };
    if (!(await acceptsInput(db, text, type, column.version))) {
      problems.push(`column "${name}" is ${column.declared}, which cannot take ${probe.wants} (${probe.fix})`);
    }
  }
  return problems;
}

/**
 * True when `type` (as `format_type` spells it: `full` with its modifier, `plain` without) takes
 * `text` through its input function, as a COPY or the INSERT's cast would. From Postgres 16
 * `pg_input_is_valid` says so without an error; before, a cast to `plain` is tried (with the
 * modifier, an explicit cast to `varchar(3)` would cut a value short where a write refuses it). Either runs only input functions: no row, no
 * trigger, no side effect. A refusal is a data exception (22) or a domain's CHECK (23);
 * anything else is the server's problem, thrown for the caller to classify.
 */
export async function acceptsInput(db: pg.Pool | pg.Client, text: string, type: { full: string; plain: string }, version: number): Promise<boolean> {
  try {
    if (version >= 160000) return (await db.query<{ ok: boolean }>('SELECT pg_input_is_valid($1, $2) AS ok', [text, type.full])).rows[0]!.ok;
    // format_type quotes what needs quoting: its spelling is safe to put into SQL.
    await db.query(`SELECT $1::text::${type.plain}`, [text]);
    return true;
  } catch (error) {
    const state = sqlState(error);
    if (state !== undefined && (state.startsWith('22') || state.startsWith('23'))) return false;
    throw error;
  }
}

function encodeRow(event: DestinationEvent, settings: DestinationSettings, encoders: readonly Encoder[]): (string | null)[] {
  return settings.columns.map((column, i) => encoders[i]!(columnValue(event, column.source)));
}

/** The value one column takes from an event. */
function columnValue(event: DestinationEvent, source: ColumnSource): JsonValue | undefined {
  switch (source.kind) {
    case 'id':
      return event.id;
    case 'type':
      return event.type;
    case 'occurred_at':
      return event.occurredAt;
    case 'payload':
      return event.payload;
    case 'path':
      return valueAt(event.payload, source.path);
  }
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

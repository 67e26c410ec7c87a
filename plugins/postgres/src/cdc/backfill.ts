import { createHash, randomUUID } from 'node:crypto';
import { ConnectorError, type BackfillReport, type BackfillRequest, type JsonObject, type JsonValue } from '@ferry/core';
import type { RowFilter } from './backfill-where.js';
import type pg from 'pg';
import { quoteReplicationIdent } from './replication-client.js';
import type { TupleData } from './pgoutput.js';

/**
 * Incremental snapshots (backfills): a table read in chunks of its key order, each chunk one
 * short statement, interleaved with the change stream. This is the watermark algorithm of
 * DBLog, as Debezium's incremental snapshots use it:
 *
 * 1. A low watermark is written to the WAL (`pg_logical_emit_message`, transactional: it
 *    reaches the stream in commit order, and needs no table of its own).
 * 2. The chunk is selected: the next `chunkSize` rows after the last key read.
 * 3. A high watermark is written.
 * 4. The stream goes on as usual. Between the two watermarks, each change of the chunk's table
 *    takes its key out of the chunk: the stream carries that row's state, as new as the chunk's
 *    or newer. At the high watermark the chunk's remaining rows are handed over, as `read`
 *    events, before any change committed after it.
 *
 * So a row's last event is always its committed state: an older chunk value never follows a
 * newer change. No transaction stays open longer than one chunk's statement. The position
 * (the table, and the last key of the last chunk handed over) is committed with each batch, so
 * a restart resumes after the last chunk, with new watermarks; those of the chunk cut short are
 * ignored (each run of the source names its watermarks with an id of its own).
 */

/** The prefix of Ferry's watermark messages in the WAL. */
export const WATERMARK_PREFIX = 'ferry.backfill';

/** Where a backfill stands, as committed in the change source's checkpoint. */
export type BackfillProgress = {
  /** `bfl_` and 26 characters: names the backfill in its events' `metadata.backfill_id` and ids. */
  id: string;
  /** When it started (ISO 8601): every row it reads carries it as `occurred_at` and `commit_time`. */
  at: string;
  /** The stream's position when it started: its rows' `commit_lsn`. */
  lsn: string;
  /** `schema.name` of the table being read (its `tables` are read in order); absent once all are. */
  table?: string;
  /** The tables it reads, in order (`schema.name`); absent: every table of the source. */
  tables?: string[];
  /** The key (each column's Postgres text) of the last row read of that table; absent before its first chunk. */
  after?: string[];
  /** Rows handed over so far, all tables. */
  rows: number;
  /** Rows handed over so far per table (`schema.name`). */
  counts?: Record<string, number>;
  /** The server's estimate of each table's rows when the backfill started (`pg_class.reltuples`; null before any ANALYZE). */
  estimates?: Record<string, number | null>;
  /** A row filter per table (`schema.name`), as asked for (see `backfill-where.ts`). */
  where?: Record<string, string>;
  /** Rows per chunk, as asked for; absent: the source's `batch_size`. */
  chunk?: number;
};

/**
 * A backfill's progress, before its first table, for a backfill asked for through the API: its id
 * is the request's, its tables, filter and chunk size too.
 */
export function requestedBackfill(request: BackfillRequest, startLsn: string, atMs: number): BackfillProgress {
  return {
    id: request.id,
    at: new Date(atMs).toISOString(),
    lsn: startLsn,
    ...(request.tables[0] !== undefined ? { table: request.tables[0] } : {}),
    tables: [...request.tables],
    rows: 0,
    ...(request.where ? { where: { ...request.where } } : {}),
    ...(request.chunkSize ? { chunk: request.chunkSize } : {}),
  };
}

/** The server's estimate of a table's rows: null when it has none (never analyzed). */
export async function estimateRows(client: pg.Client, oid: number): Promise<number | null> {
  const { rows } = await client.query<{ n: string }>('SELECT reltuples::bigint::text AS n FROM pg_class WHERE oid = $1', [oid]);
  const n = Number(rows[0]?.n ?? -1);
  return n < 0 ? null : n;
}

/** The names of a table's columns (not dropped, not system ones): what a row filter may name. */
export async function tableColumns(client: pg.Client, oid: number): Promise<Set<string>> {
  const { rows } = await client.query<{ name: string }>('SELECT attname AS name FROM pg_attribute WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped', [oid]);
  return new Set(rows.map((r) => r.name));
}

/**
 * What a backfill reports of its committed progress: every table it reads, in order, with its
 * rows and estimate, those before the one being read done, those after it pending.
 */
export function backfillReport(progress: BackfillProgress, allTables: readonly string[], state: BackfillReport['state'], error?: { code: string; message: string }): BackfillReport {
  const tables = progress.tables ?? allTables;
  const at = progress.table === undefined ? tables.length : tables.indexOf(progress.table);
  return {
    id: progress.id,
    state,
    tables: tables.map((table, i) => ({
      table,
      // Older checkpoints counted all tables together: the count is the table's being read.
      rowsRead: progress.counts?.[table] ?? (progress.counts === undefined && i === at ? progress.rows : 0),
      rowsEstimated: progress.estimates?.[table] ?? null,
      state: at < 0 || i < at ? 'done' : i === at ? 'running' : 'pending',
    })),
    ...(error ? { error } : {}),
  };
}

/** A new backfill's progress, before its first table: its id is drawn, its time first. */
export function newBackfill(startLsn: string, atMs: number, firstTable: string): BackfillProgress {
  const at = new Date(atMs).toISOString();
  const hash = createHash('sha256').update(`${startLsn}\0${at}\0${randomUUID()}`).digest();
  // ULID-shaped: the start time first, so backfill ids sort by time.
  let time = '';
  for (let ms = atMs, k = 0; k < 10; k++, ms = Math.floor(ms / 32)) time = CROCKFORD[ms % 32]! + time;
  let rest = '';
  for (let k = 0; k < 16; k++) rest += CROCKFORD[hash[k]! % 32]!;
  return { id: `bfl_${time}${rest}`, at, lsn: startLsn, table: firstTable, rows: 0 };
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** A table's key: the columns a chunk is ordered and bounded by. */
export interface TableKey {
  columns: ReadonlyArray<{ name: string; type: string }>;
}

/**
 * The table's primary key, else its first unique index over NOT NULL columns (not partial, no
 * expressions): what orders and bounds its chunks. `backfill_needs_key` naming the table when
 * it has neither.
 */
export async function tableKey(client: pg.Client, table: { schema: string; name: string; oid: number }): Promise<TableKey> {
  const { rows } = await client.query<{ index: string; name: string; type: string }>(
    `SELECT i.indexrelid::text AS index, a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type
       FROM pg_index i
       CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
       JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
      WHERE i.indrelid = $1 AND (i.indisprimary OR (i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL AND i.indimmediate))
        AND NOT EXISTS (
          SELECT 1 FROM unnest(i.indkey::int2[]) AS n(attnum)
          LEFT JOIN pg_attribute c ON c.attrelid = i.indrelid AND c.attnum = n.attnum
          WHERE n.attnum = 0 OR NOT c.attnotnull)
      ORDER BY i.indisprimary DESC, i.indexrelid::regclass::text, k.ord`,
    [table.oid],
  );
  const first = rows[0]?.index;
  if (first === undefined) {
    throw new ConnectorError('backfill_needs_key', `The table ${table.schema}.${table.name} has no primary key or unique key over NOT NULL columns: it cannot be read in chunks. Add one, or set snapshot to "initial".`, {
      retryable: false,
    });
  }
  return { columns: rows.filter((r) => r.index === first).map((r) => ({ name: r.name, type: r.type })) };
}

/** A chunk read between its watermarks. */
export interface Chunk {
  /** Names its watermarks: the source run's id and the chunk's number. */
  readonly mark: string;
  /** The index of its table in the source's resolved tables. */
  readonly table: number;
  /** Rows in key order, each with its key's text (`keyText` of the Postgres text of its key columns). */
  rows: Array<{ key: string; record: JsonObject }> | undefined;
  /** The key of the last row selected (whether or not it is handed over); undefined for an empty chunk. */
  last: string[] | undefined;
  /** Fewer rows than asked for: the table is read to its end. */
  end: boolean;
  /** The low watermark was seen: changes of the table take their keys out of the chunk. */
  open: boolean;
  /** Keys changed between the watermarks. */
  readonly changed: Set<string>;
  /** The table was truncated between the watermarks: none of the chunk is handed over. */
  truncated: boolean;
}

/**
 * A key as one string, unambiguous whatever its columns hold: a one-column key is its text,
 * a longer one the JSON array of its texts. Chunk rows and the stream's tuples spell it alike.
 */
export function keyText(values: ReadonlyArray<string | null | undefined>): string {
  return values.length === 1 ? String(values[0]) : JSON.stringify(values);
}

/** The key text of a change's tuple, from the raw pgoutput texts of the key's columns. */
export function tupleKey(tuple: TupleData, keyIndexes: readonly number[]): string {
  return keyIndexes.length === 1 ? String(tuple[keyIndexes[0]!]) : keyText(keyIndexes.map((i) => tuple[i]));
}

/**
 * Writes the low watermark, selects the chunk after `after` into `chunk`, writes the high
 * watermark. The caller registers `chunk` with the stream before: the stream may reach the low
 * watermark while the select runs, and reaches the high one only after the rows are in.
 * `selected` runs between the select and the high watermark (see `ChangeSourceOptions`).
 */
export async function readChunk(
  client: pg.Client,
  table: { schema: string; name: string },
  key: TableKey,
  after: string[] | undefined,
  size: number,
  chunk: Chunk,
  selected?: (rows: number) => Promise<void>,
  filter?: RowFilter,
): Promise<void> {
  await client.query('SELECT pg_logical_emit_message(true, $1, $2)', [WATERMARK_PREFIX, `${chunk.mark}:low`]);
  // Qualified: the key's texts after the table's columns have the same output names.
  const columns = key.columns.map((c) => `t.${quoteReplicationIdent(c.name)}`);
  const conditions = after === undefined ? [] : [`(${columns.join(', ')}) > (${key.columns.map((c, i) => `$${i + 1}::${c.type}`).join(', ')})`];
  // The filter's parameters follow the key's.
  if (filter) conditions.push(filter.sql(after === undefined ? 0 : after.length));
  const bound = conditions.length === 0 ? '' : `WHERE ${conditions.join(' AND ')}`;
  // The key's columns again, as Postgres spells them (what the stream's tuples carry), after
  // the table's: rows come as arrays, and the record is made of the table's columns only.
  const result = await client.query<JsonValue[]>({
    text: `SELECT t.*, ${columns.map((c) => `${c}::text`).join(', ')} FROM ${quoteReplicationIdent(table.schema)}.${quoteReplicationIdent(table.name)} AS t ${bound} ORDER BY ${columns.join(', ')} LIMIT ${size}`,
    values: [...(after ?? []), ...(filter?.values ?? [])],
    rowMode: 'array',
  });
  const rows = result.rows;
  const width = result.fields.length - columns.length;
  const names = result.fields.slice(0, width).map((f) => f.name);
  chunk.rows = new Array(rows.length);
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r]!;
    const record: JsonObject = {};
    for (let i = 0; i < width; i++) record[names[i]!] = row[i]!;
    chunk.rows[r] = { key: columns.length === 1 ? String(row[width]) : keyText(row.slice(width) as string[]), record };
  }
  const lastRow = rows.at(-1);
  chunk.last = lastRow === undefined ? undefined : (lastRow.slice(width) as string[]);
  chunk.end = rows.length < size;
  await selected?.(rows.length);
  await client.query('SELECT pg_logical_emit_message(true, $1, $2)', [WATERMARK_PREFIX, `${chunk.mark}:high`]);
}

import { ConnectorError, type Destination, type DestinationEvent, type WriteResult } from '@ferry/core';
import { DESTINATION_COLUMNS, type SnowflakeConfig } from './config.js';
import { classifyError, isRecordError, safeMessage, type Bind, type SnowflakeSession } from './connection.js';
import { sqlObject } from './identifiers.js';

/**
 * Most rows in one MERGE. Its rows are scalar binds (four a row): array binds are for INSERT
 * only. 500 rows keep a statement at 2,000 binds, far from any limit, while a failed
 * statement's row-by-row retry stays short.
 */
export const MAX_ROWS_PER_MERGE = 500;
/** Most rows in one array-bound INSERT: 4,000 values, well under the driver's 100,000 threshold where it would stage the binds instead. */
export const MAX_ROWS_PER_INSERT = 1000;
/** The largest VARIANT value Snowflake stores (16 MiB); a bigger payload is refused before it is sent. */
export const MAX_PAYLOAD_BYTES = 16 * 1024 * 1024;
/**
 * Most bytes of bound text in one statement: a chunk ends early when its payloads are large, so
 * one request never carries hundreds of megabytes. A single row over it still goes alone.
 */
export const MAX_STATEMENT_BYTES = 8 * 1024 * 1024;

/** What a destination needs, resolved from its config. */
export interface DestinationSettings {
  /** The table as SQL text (validated plain identifiers). */
  readonly table: string;
  readonly mode: 'merge' | 'insert';
  readonly createTable: boolean;
}

/** Resolves a validated destination config; throws a non-retryable error when it cannot. */
export function destinationSettings(config: SnowflakeConfig): DestinationSettings {
  if (config.table === undefined) throw new ConnectorError('configuration_invalid', 'A snowflake destination needs a table.', { retryable: false });
  return { table: sqlObject(config.table), mode: config.mode ?? 'merge', createTable: config.create_table ?? false };
}

/** The table `create_table` makes. No PRIMARY KEY: Snowflake does not enforce one; MERGE is what keeps ids unique. */
export function createTableSql(settings: DestinationSettings): string {
  return `CREATE TABLE IF NOT EXISTS ${settings.table} (ID VARCHAR NOT NULL, TYPE VARCHAR NOT NULL, OCCURRED_AT TIMESTAMP_TZ NOT NULL, PAYLOAD VARIANT)`;
}

/** The SELECT that turns bound text columns into the table's types; `values` is its VALUES list. */
function typedRows(values: string): string {
  return `SELECT column1 AS ID, column2 AS TYPE, column3::TIMESTAMP_TZ AS OCCURRED_AT, PARSE_JSON(column4) AS PAYLOAD FROM VALUES ${values}`;
}

/**
 * The MERGE of `rows` events: inserts the ones whose ID the table does not hold yet, so a batch
 * delivered again after a crash adds nothing. PARSE_JSON is not allowed in a VALUES list, hence
 * the SELECT around it.
 */
export function mergeSql(settings: DestinationSettings, rows: number): string {
  const values = new Array<string>(rows).fill('(?, ?, ?, ?)').join(', ');
  const columns = DESTINATION_COLUMNS.join(', ');
  const from = DESTINATION_COLUMNS.map((c) => `ferry_batch.${c}`).join(', ');
  return `MERGE INTO ${settings.table} AS ferry_target USING (${typedRows(values)}) AS ferry_batch ON ferry_target.ID = ferry_batch.ID WHEN NOT MATCHED THEN INSERT (${columns}) VALUES (${from})`;
}

/** The INSERT of `insert` mode, bound to one array per column (an array bind: one statement for the whole chunk). */
export function insertSql(settings: DestinationSettings): string {
  return `INSERT INTO ${settings.table} (${DESTINATION_COLUMNS.join(', ')}) ${typedRows('(?, ?, ?, ?)')}`;
}

/** An event as the four bound texts: id, type, occurred_at, payload JSON. */
function rowOf(event: DestinationEvent): Bind[] {
  return [event.id, event.type, event.occurredAt, JSON.stringify(event.payload ?? null)];
}

/** Splits rows into statements of at most `most` rows and about {@link MAX_STATEMENT_BYTES}. */
function* chunks<T extends { bytes: number }>(rows: readonly T[], most: number): Generator<T[]> {
  let chunk: T[] = [];
  let bytes = 0;
  for (const row of rows) {
    if (chunk.length > 0 && (chunk.length >= most || bytes + row.bytes > MAX_STATEMENT_BYTES)) {
      yield chunk;
      chunk = [];
      bytes = 0;
    }
    chunk.push(row);
    bytes += row.bytes;
  }
  if (chunk.length > 0) yield chunk;
}

/**
 * A destination writing batches with MERGE on ID (default) or array-bound INSERTs. The table is
 * created (when asked) on the first write, not on open, so opening never needs the server. A
 * statement refused for a row's data is written again row by row, so only the bad rows are
 * rejected and the rest land.
 */
export function snowflakeDestination(session: SnowflakeSession, settings: DestinationSettings): Destination {
  let prepared: Promise<unknown> | undefined;
  const prepare = () => {
    prepared ??= (settings.createTable ? session.run(createTableSql(settings)) : Promise.resolve()).catch((error: unknown) => {
      prepared = undefined;
      throw error;
    });
    return prepared;
  };
  const chunkSize = settings.mode === 'merge' ? MAX_ROWS_PER_MERGE : MAX_ROWS_PER_INSERT;
  const statement = (rows: Bind[][]) =>
    settings.mode === 'merge' ? { sql: mergeSql(settings, rows.length), binds: rows.flat() } : { sql: insertSql(settings), binds: rows };

  return {
    async write(events, signal) {
      const results: WriteResult[] = events.map(() => ({ ok: true }));
      if (events.length === 0) return results;
      try {
        await prepare();
      } catch (error) {
        throw classifyError(error, 'destination');
      }
      // Rows too large for a VARIANT are rejected here: the server would refuse the statement.
      // In merge mode a second copy of an id in the batch is not sent (the MERGE compares with
      // the table only, so both would be inserted): it takes the first copy's result.
      const rows: { index: number; row: Bind[]; bytes: number }[] = [];
      const copies: { index: number; of: number }[] = [];
      const firstOf = new Map<string, number>();
      for (let i = 0; i < events.length; i++) {
        const event = events[i]!;
        const first = settings.mode === 'merge' ? firstOf.get(event.id) : undefined;
        if (first !== undefined) {
          copies.push({ index: i, of: first });
          continue;
        }
        firstOf.set(event.id, i);
        const row = rowOf(event);
        const bytes = Buffer.byteLength(row[3]!);
        if (bytes > MAX_PAYLOAD_BYTES) {
          results[i] = { ok: false, error: new ConnectorError('record_too_large', `The payload is over ${MAX_PAYLOAD_BYTES} bytes of JSON, the most a VARIANT holds.`, { retryable: false }) };
        } else rows.push({ index: i, row, bytes: bytes + event.id.length + event.type.length + 40 });
      }
      for (const chunk of chunks(rows, chunkSize)) {
        if (signal.aborted) throw new ConnectorError('aborted', 'The write was cancelled.', { retryable: true });
        const { sql, binds } = statement(chunk.map((r) => r.row));
        try {
          await session.run(sql, binds, signal);
          continue;
        } catch (error) {
          if (!isRecordError(error)) throw classifyError(error, 'destination');
        }
        for (const { index, row } of chunk) {
          const one = statement([row]);
          try {
            await session.run(one.sql, one.binds, signal);
          } catch (error) {
            if (!isRecordError(error)) throw classifyError(error, 'destination');
            results[index] = { ok: false, error: new ConnectorError('record_rejected', `Snowflake rejected the row: ${safeMessage(error)}`, { retryable: false, cause: error }) };
          }
        }
      }
      for (const { index, of } of copies) results[index] = results[of]!;
      return results;
    },
    close: () => session.close(),
  };
}

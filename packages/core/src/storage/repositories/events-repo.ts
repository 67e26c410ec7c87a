import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Knex } from 'knex';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { keysetPage, type KeysetResult } from '../keyset.js';
import { LeasedQueue, type Claim } from '../leases.js';
import { inSqliteTransaction, sqliteStatement } from '../sqlite-direct.js';
import { affected, fromJson, isUniqueViolation, toInt, toJson, type Db } from '../sql-helpers.js';
import type { StorageDialect } from '../dialect.js';
import type { EventRecord, EventStatus , SortOrder } from '../../common/index.js';
import type { JsonObject } from '../../plugin-api/index.js';
import { sqliteLiteral, type SqlValue, type WriterStep } from '../sqlite-writer-thread.js';

/** Row of `events`, the per-pipeline event log: the public record plus bookkeeping. */
export type EventRow = EventRecord & {
  workspace_id: string;
  created_at: string;
  updated_at: string;
};

/** Row of `dead_letters`: the event as it entered the stage that failed, to replay from there. */
export interface DeadLetterRow {
  event_id: string;
  workspace_id: string;
  pipeline_id: string;
  /** `transform:<index>` or `destination`. */
  stage: string;
  record: JsonObject;
  replay_requested_at: string | null;
  created_at: string;
}

/** Filters of the events listing. */
export interface EventFilters {
  type?: string;
  since?: string;
  until?: string;
  status?: EventStatus;
}

const mapEvent = (row: Record<string, unknown>): EventRow => ({
  ...(row as unknown as EventRow),
  payload: fromJson<JsonObject>(row.payload),
  error: fromJson(row.error),
  attempts: toInt(row.attempts),
});

const mapDeadLetter = (row: Record<string, unknown>): DeadLetterRow => ({
  event_id: String(row.event_id),
  workspace_id: String(row.workspace_id),
  pipeline_id: String(row.pipeline_id),
  stage: String(row.stage),
  record: fromJson<JsonObject>(row.record),
  replay_requested_at: (row.replay_requested_at as string | null) ?? null,
  created_at: String(row.created_at),
});

/** One value in COPY's text format: backslash, tab, newline and carriage return escaped, null as `\\N`. */
function copyValue(value: string | null): string {
  if (value === null) return '\\N';
  return /[\\\t\n\r]/.test(value) ? value.replace(/[\\\t\n\r]/g, (c) => COPY_ESCAPES[c]!) : value;
}

const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** The stored spelling of a timestamp: ISO 8601 UTC with milliseconds. */
const CANONICAL_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** Rows per statement of a bulk write or update. */
const INSERT_CHUNK = 1000;

const EVENT_COLUMNS = ['id', 'workspace_id', 'pipeline_id', 'type', 'occurred_at', 'payload', 'status', 'attempts', 'error', 'dead_lettered_at', 'created_at', 'updated_at'];
// A re-read updates its own row; an id that collides with another pipeline's (or workspace's)
// event is left alone rather than letting one pipeline's payload into another's listing.
const ON_CONFLICT = `ON CONFLICT (id) DO UPDATE SET ${['type', 'occurred_at', 'payload', 'status', 'attempts', 'error', 'dead_lettered_at', 'updated_at'].map((c) => `${c} = excluded.${c}`).join(', ')}
  WHERE events.pipeline_id = excluded.pipeline_id AND events.workspace_id = excluded.workspace_id`;
const INSERT_EVENT_SQLITE = `INSERT INTO events (${EVENT_COLUMNS.join(', ')}) VALUES (${EVENT_COLUMNS.map(() => '?').join(', ')})`;
const UPSERT_EVENT_SQLITE = `${INSERT_EVENT_SQLITE} ${ON_CONFLICT}`;
/**
 * The rows of a Postgres bulk write: one JSON parameter, an array of objects whose values are the
 * columns' stored text (payload and error as JSON text), unpacked by `json_to_recordset`.
 */
const EVENTS_FROM_JSON_PG = `SELECT ${EVENT_COLUMNS.join(', ')} FROM json_to_recordset(?::json) AS x(id text, workspace_id text, pipeline_id text, type text,
  occurred_at text, payload text, status text, attempts integer, error text, dead_lettered_at text, created_at text, updated_at text)`;
const INSERT_EVENTS_PG = `INSERT INTO events (${EVENT_COLUMNS.join(', ')}) ${EVENTS_FROM_JSON_PG}`;
const UPSERT_EVENTS_PG = `${INSERT_EVENTS_PG} ${ON_CONFLICT}`;
const COPY_EVENTS_PG = `COPY events (${EVENT_COLUMNS.join(', ')}) FROM STDIN`;

/** The event log and its dead letters. */
export class EventsRepo {
  /** Replay requests: dead letters with `replay_requested_at` set, claimed with a lease. */
  readonly replays: LeasedQueue;

  constructor(private readonly db: Db, private readonly dialect: StorageDialect) {
    this.replays = new LeasedQueue(db, dialect, { table: 'dead_letters', key: 'event_id' });
  }

  /**
   * Records events. A re-read after a crash yields the same ids; their rows are updated in place
   * (latest outcome wins) rather than duplicated. `canonicalTimes` says every `occurred_at` is
   * already ISO 8601 UTC with milliseconds (the runtime's are), which spares re-spelling them.
   *
   * `fresh` says the caller expects every id to be new (a batch's first commit) and will run its
   * transaction again without `fresh` when one is not: on Postgres, inside a transaction, the
   * rows are then COPYed, at about half the server CPU of the upsert (measured 12 against 22 µs
   * per row), and an id that exists already fails the COPY with a unique violation, which aborts
   * the caller's transaction.
   *
   * This is the hot path of every batch. Otherwise, on Postgres, the rows travel as one JSON
   * parameter per chunk and the server unpacks them (`json_to_recordset`): one round trip and one
   * short statement instead of thousands of placeholders; payloads travel as JSON text, so each
   * keeps its text (key order) as sent. Outside a transaction a chunk is first written with a
   * plain INSERT, which costs the server about three quarters of the upsert (43,500 against
   * 34,400 rows/s), and written again as the upsert only when it hits an existing id. On SQLite
   * see below.
   */
  async upsertMany(rows: readonly EventRow[], options: { canonicalTimes?: boolean; fresh?: boolean } = {}): Promise<void> {
    if (rows.length === 0) return;
    const time = storedTime(options.canonicalTimes);
    if (this.dialect.inProcess) {
      // A cached prepared statement executed once per row inside the caller's transaction
      // (see StorageDialect.inProcess). Positional parameters, bound straight from the row: no intermediate object per event.
      const prepared = rows.map((r) => [
        r.id, r.workspace_id, r.pipeline_id, r.type, time(r.occurred_at), toJson(r.payload),
        r.status, r.attempts, r.error ? toJson(r.error) : null, r.dead_lettered_at, r.created_at, r.updated_at,
      ]);
      await inSqliteTransaction(this.db, (conn) => {
        const statement = sqliteStatement(conn, UPSERT_EVENT_SQLITE);
        for (const values of prepared) statement.run(values);
      });
      return;
    }
    const inTransaction = (this.db as Knex.Transaction).isTransaction === true;
    if (options.fresh && inTransaction) return this.copyFresh(rows, time);
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
      const chunk = JSON.stringify(
        rows.slice(i, i + INSERT_CHUNK).map((r) => ({
          ...r,
          // occurred_at is compared as text (ordering, since/until, cursors): one exact form only.
          occurred_at: time(r.occurred_at),
          payload: toJson(r.payload),
          error: r.error ? toJson(r.error) : null,
        })),
      );
      if (inTransaction || !(await this.insertFresh(chunk))) await this.db.raw(UPSERT_EVENTS_PG, [chunk]);
    }
  }

  /** COPYs new events on the caller's transaction's connection (see `fresh` in {@link upsertMany}). */
  private async copyFresh(rows: readonly EventRow[], time: (t: string) => string): Promise<void> {
    const lines: string[] = new Array(rows.length);
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i]!;
      lines[i] =
        `${copyValue(r.id)}\t${copyValue(r.workspace_id)}\t${copyValue(r.pipeline_id)}\t${copyValue(r.type)}\t${copyValue(time(r.occurred_at))}\t${copyValue(toJson(r.payload))}\t` +
        `${copyValue(r.status)}\t${r.attempts}\t${r.error ? copyValue(toJson(r.error)) : '\\N'}\t${copyValue(r.dead_lettered_at)}\t${copyValue(r.created_at)}\t${copyValue(r.updated_at)}\n`;
    }
    // One Buffer, outside the JS heap, for the whole batch. Built up as one string, the batch's
    // text stayed in the heap until a full collection: draining 1,000,000 events, the heap grew
    // to 370 MB between two and the process peaked at 494 MB; with this, 256 MB (bench/pipeline).
    const data = Buffer.from(lines.join(''));
    // The transaction's own connection: knex hands it out while the transaction lasts.
    const connection = (await (this.db as Knex.Transaction).client.acquireConnection()) as pg.Client;
    await pipeline(Readable.from([data]), connection.query(copyFrom(COPY_EVENTS_PG)));
  }

  /** Writes a chunk of new events with a plain INSERT, outside any transaction; false (and nothing written) when an id exists already. */
  private async insertFresh(chunk: string): Promise<boolean> {
    try {
      await this.db.raw(INSERT_EVENTS_PG, [chunk]);
      return true;
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      return false;
    }
  }

  /** An event of the workspace. */
  async get(workspaceId: string, id: string): Promise<EventRow | null> {
    const row = await this.db('events').where({ workspace_id: workspaceId, id }).first();
    return row ? mapEvent(row) : null;
  }

  /** Lists a pipeline's events by `(occurred_at, id)`, oldest first or (`desc`) newest first. */
  async list(
    workspaceId: string,
    pipelineId: string,
    filters: EventFilters,
    after: readonly string[] | undefined,
    limit: number,
    order: SortOrder = 'asc',
  ): Promise<KeysetResult<EventRow>> {
    const query = this.db('events').where({ workspace_id: workspaceId, pipeline_id: pipelineId });
    // A next page starts after a row at or past `since` (oldest first), or before a row before
    // `until` (newest first): the cursor then says everything that bound does. Left in, it made
    // SQLite start its index range at the bound rather than at the cursor, walking every row
    // before the page (18 ms 90,000 rows into a window, against 0.8 ms).
    const at = after !== undefined && typeof after[0] === 'string' ? after[0] : undefined;
    let bounds = filters;
    if (at !== undefined && order === 'asc' && filters.since !== undefined && at >= filters.since) bounds = { ...filters, since: undefined };
    if (at !== undefined && order === 'desc' && filters.until !== undefined && at < filters.until) bounds = { ...filters, until: undefined };
    applyFilters(query, bounds);
    const page = await keysetPage<Record<string, unknown>>(query, ['occurred_at', 'id'], after, limit, order);
    return { rows: page.rows.map(mapEvent), hasMore: page.hasMore };
  }

  /**
   * How many of a pipeline's events are `dead_lettered` and `replaying` now. The caller has found
   * the pipeline in its workspace already (pipeline ids are the engine's own, one workspace
   * each): counting by pipeline alone is answered from the partial status index without reading
   * the events' rows, where a `workspace_id` filter would read the row of every event counted (a
   * million dead letters: a second rather than a few ms). `status <> 'delivered'` is spelled out
   * so both planners may use that index, as in the listing.
   */
  async countOpen(pipelineId: string): Promise<{ dead_lettered: number; replaying: number }> {
    const rows = (await this.db('events')
      .select('status')
      .count({ n: '*' })
      .where('pipeline_id', pipelineId)
      .whereIn('status', ['dead_lettered', 'replaying'])
      .andWhereRaw(`status <> 'delivered'`)
      .groupBy('status')) as { status: string; n: unknown }[];
    const counts = { dead_lettered: 0, replaying: 0 };
    for (const row of rows) if (row.status === 'dead_lettered' || row.status === 'replaying') counts[row.status] = toInt(row.n);
    return counts;
  }

  /** Updates one event's status fields; `expectStatus` makes it a compare-and-set. */
  async updateStatus(
    workspaceId: string,
    id: string,
    patch: Partial<Pick<EventRow, 'status' | 'attempts' | 'error' | 'dead_lettered_at' | 'updated_at' | 'payload' | 'type'>>,
    expectStatus?: EventStatus,
  ): Promise<boolean> {
    const query = this.db('events').where({ workspace_id: workspaceId, id });
    if (expectStatus) query.andWhere({ status: expectStatus });
    const update: Record<string, unknown> = { ...patch };
    if (patch.error !== undefined) update.error = patch.error ? toJson(patch.error) : null;
    if (patch.payload !== undefined) update.payload = toJson(patch.payload);
    return affected(await query.update(update)) === 1;
  }

  /** The attempts spent so far on each of these events (a replay adds to them). */
  async attemptsOf(ids: readonly string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (let i = 0; i < ids.length; i += INSERT_CHUNK) {
      const rows = (await this.db('events').whereIn('id', ids.slice(i, i + INSERT_CHUNK)).select('id', 'attempts')) as { id: string; attempts: unknown }[];
      for (const row of rows) out.set(row.id, toInt(row.attempts));
    }
    return out;
  }

  /** Stores what a replay needs; replaces an older dead letter of the same event. */
  async putDeadLetter(row: DeadLetterRow): Promise<void> {
    await this.db('dead_letters')
      .insert({ ...row, record: toJson(row.record) })
      .onConflict('event_id')
      .merge(['stage', 'record', 'replay_requested_at', 'created_at']);
  }

  /** The dead letter of an event, if it has one. */
  /**
   * Claims requested replays (dead letters with `replay_requested_at`), oldest request first: of
   * one pipeline, or of any active pipeline. See `LeasedQueue.claim`.
   */
  async claimReplays(options: { pipelineId?: string; limit: number; holder: string; ttlMs: number; now: number }): Promise<Claim<DeadLetterRow>> {
    const claim = await this.replays.claim<Record<string, unknown>>({
      where: (q) => {
        q.whereNotNull('replay_requested_at');
        if (options.pipelineId !== undefined) q.andWhere('pipeline_id', options.pipelineId);
        else q.whereExists((sub) => sub.select('id').from('pipelines').whereRaw('pipelines.id = dead_letters.pipeline_id').andWhere('pipelines.state', 'active').whereNull('pipelines.deleted_at'));
      },
      orderBy: ['replay_requested_at', 'event_id'],
      limit: options.limit,
      holder: options.holder,
      ttlMs: options.ttlMs,
      now: options.now,
    });
    return { token: claim.token, rows: claim.rows.map(mapDeadLetter) };
  }

  async getDeadLetter(eventId: string): Promise<DeadLetterRow | null> {
    const row = await this.db('dead_letters').where({ event_id: eventId }).first();
    return row ? mapDeadLetter(row) : null;
  }

  /** Forgets a dead letter (after a successful replay). */
  async deleteDeadLetter(eventId: string): Promise<void> {
    await this.db('dead_letters').where({ event_id: eventId }).delete();
  }

  /**
   * Deletes up to `limit` of a pipeline's settled events (delivered or filtered) that happened
   * and were logged before `before` (ISO 8601), oldest first; returns how many. Dead-lettered
   * and replaying events stay: they are what a replay needs. The pipeline's listing index finds
   * them, so a pass costs the rows it deletes, not the size of the log.
   */
  async deleteSettledBefore(pipelineId: string, before: string, limit: number): Promise<number> {
    const ids = this.db('events')
      .select('id')
      .where({ pipeline_id: pipelineId })
      .andWhere('occurred_at', '<', before)
      .andWhere('created_at', '<', before)
      .whereIn('status', ['delivered', 'filtered'])
      .orderBy('occurred_at')
      .limit(limit);
    return affected(await this.db('events').whereIn('id', ids).delete());
  }

  /**
   * Marks the dead-lettered events of a pipeline that match as `replaying` and queues their
   * replay, in one pass; returns how many.
   */
  async requestBulkReplay(workspaceId: string, pipelineId: string, filters: Omit<EventFilters, 'status'>, now: string): Promise<number> {
    // Chunk by chunk: replayed rows leave the `dead_lettered` status, so each pass selects the
    // next ones and memory stays bounded however many match.
    let count = 0;
    for (;;) {
      const select = this.db('events').select('id').where({ workspace_id: workspaceId, pipeline_id: pipelineId, status: 'dead_lettered' }).andWhereRaw(`status <> 'delivered'`);
      applyFilters(select, filters);
      const chunk = ((await select.orderBy('id').limit(INSERT_CHUNK)) as { id: string }[]).map((r) => r.id);
      if (chunk.length === 0) break;
      count += affected(
        await this.db('events').whereIn('id', chunk).andWhere({ status: 'dead_lettered' }).update({ status: 'replaying', updated_at: now }),
      );
      await this.db('dead_letters').whereIn('event_id', chunk).update({ replay_requested_at: now });
    }
    return count;
  }
}

/**
 * A batch's event-log rows as a step of a SQLite writer-thread transaction. What every row shares
 * (workspace, pipeline, times, and status and attempts when all rows have the same) is written
 * into the statement as literals, so the thread binds only what varies: binding the shared eight
 * again for each row cost SQLite a fifth of the insert. A batch with dead letters binds their
 * error and time too. The statement is prepared once per batch (its times differ). The rows are
 * inserted as new: an id written before (a batch read again after a crash) fails the transaction
 * with a unique violation, and the caller commits it again with {@link asEventUpsert}. A plain
 * insert costs SQLite about a tenth less than the upsert.
 */
export function eventOutcomesStep(
  shared: { workspace_id: string; pipeline_id: string; now: string },
  rows: readonly (Pick<EventRow, 'id' | 'type' | 'occurred_at' | 'payload' | 'status' | 'attempts'> & Partial<Pick<EventRow, 'error' | 'dead_lettered_at'>>)[],
  options: { canonicalTimes?: boolean } = {},
): WriterStep {
  const time = storedTime(options.canonicalTimes);
  const first = rows[0];
  const failed = rows.some((r) => r.error);
  const uniform = !failed && first !== undefined && rows.every((r) => r.status === first.status && r.attempts === first.attempts);
  const varying = failed ? OUTCOME_VARYING_FAILED : uniform ? OUTCOME_VARYING : OUTCOME_VARYING_ALL;
  const values: SqlValue[] = new Array(rows.length * varying.length);
  let at = 0;
  for (const r of rows) {
    values[at++] = r.id;
    values[at++] = r.type;
    values[at++] = time(r.occurred_at);
    values[at++] = toJson(r.payload);
    if (uniform) continue;
    values[at++] = r.status;
    values[at++] = r.attempts;
    if (!failed) continue;
    values[at++] = r.error ? toJson(r.error) : null;
    values[at++] = r.dead_lettered_at ?? null;
  }
  // In EVENT_COLUMNS order: the varying ones are filled in row by row.
  const template: SqlValue[] = [null, shared.workspace_id, shared.pipeline_id, null, null, null, uniform ? first.status : null, uniform ? first.attempts : null, null, null, shared.now, shared.now];
  const literals = template.map((value, i) => (varying.includes(i) ? '?' : sqliteLiteral(value)));
  if (literals.some((l) => l === undefined)) return { sql: INSERT_EVENT_SQLITE, rows: rows.length, shared: template, varying, values };
  const sql = `INSERT INTO events (${EVENT_COLUMNS.join(', ')}) VALUES (${literals.join(', ')})`;
  return { sql, rows: rows.length, shared: varying.map(() => null), varying: varying.map((_, i) => i), values };
}

/** {@link eventOutcomesStep}'s rows written as an upsert: a re-read updates the rows it wrote before. */
export function asEventUpsert(step: WriterStep): WriterStep {
  return { ...step, sql: `${step.sql} ${ON_CONFLICT}` };
}

/** The positions in EVENT_COLUMNS of what {@link eventOutcomesStep} sends for each row. */
const OUTCOME_VARYING = ['id', 'type', 'occurred_at', 'payload'].map((c) => EVENT_COLUMNS.indexOf(c));
const OUTCOME_VARYING_ALL = [...OUTCOME_VARYING, ...['status', 'attempts'].map((c) => EVENT_COLUMNS.indexOf(c))];
const OUTCOME_VARYING_FAILED = [...OUTCOME_VARYING_ALL, ...['error', 'dead_lettered_at'].map((c) => EVENT_COLUMNS.indexOf(c))];

const DEAD_LETTER_COLUMNS = ['event_id', 'workspace_id', 'pipeline_id', 'stage', 'record', 'replay_requested_at', 'created_at'];
const PUT_DEAD_LETTER_SQLITE = `INSERT INTO dead_letters (${DEAD_LETTER_COLUMNS.join(', ')}) VALUES (${DEAD_LETTER_COLUMNS.map(() => '?').join(', ')})
  ON CONFLICT (event_id) DO UPDATE SET stage = excluded.stage, record = excluded.record, replay_requested_at = excluded.replay_requested_at, created_at = excluded.created_at`;

/** {@link EventsRepo.putDeadLetter} for each of `letters`, as one step of a SQLite writer-thread transaction. */
export function deadLettersStep(letters: readonly DeadLetterRow[]): WriterStep {
  const values: SqlValue[] = [];
  for (const l of letters) values.push(l.event_id, l.workspace_id, l.pipeline_id, l.stage, toJson(l.record), l.replay_requested_at, l.created_at);
  return { sql: PUT_DEAD_LETTER_SQLITE, rows: letters.length, shared: DEAD_LETTER_COLUMNS.map(() => null), varying: DEAD_LETTER_COLUMNS.map((_, i) => i), values };
}

/**
 * How `occurred_at` is spelled for storage. The runtime hands over times it already spelled
 * canonically (`canonical`; a plugin's step may still have changed one: the shape is checked,
 * which costs far less than parsing and re-spelling).
 */
function storedTime(canonical: boolean | undefined): (t: string) => string {
  return canonical ? (t) => (CANONICAL_TIME.test(t) ? t : canonicalTimestamp(t)) : canonicalTimestamp;
}

/**
 * The stored form of a timestamp: ISO 8601 UTC with milliseconds. `...10:00:00Z` would sort after
 * `...10:00:00.500Z` as text, so anything else is converted, and an invalid one is refused.
 */
export function canonicalTimestamp(value: string): string {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new RangeError(`not a timestamp: ${JSON.stringify(value).slice(0, 40)}`);
  return new Date(ms).toISOString();
}

function applyFilters(query: Knex.QueryBuilder, filters: EventFilters): void {
  if (filters.type !== undefined) query.andWhere('type', filters.type);
  if (filters.status !== undefined) {
    query.andWhere('status', filters.status);
    // Spelled out so the planner may use the partial index of the statuses other than `delivered`.
    if (filters.status !== 'delivered') query.andWhereRaw(`status <> 'delivered'`);
  }
  if (filters.since !== undefined) query.andWhere('occurred_at', '>=', filters.since);
  if (filters.until !== undefined) query.andWhere('occurred_at', '<', filters.until);
}

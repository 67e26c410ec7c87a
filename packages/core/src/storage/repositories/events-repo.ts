import type { Knex } from 'knex';
import { keysetPage, type KeysetResult } from '../keyset.js';
import { LeasedQueue, type Claim } from '../leases.js';
import { affected, fromJson, toInt, toJson, type Db } from '../sql-helpers.js';
import type { StorageDialect } from '../dialect.js';
import type { EventRecord, EventStatus, SortOrder } from '../../common/index.js';
import type { JsonObject } from '../../plugin-api/index.js';
import { packUnitOffThread } from '../unit-packer.js';
import { BLOCK_EVENTS, DecodedUnit, encodeUnit, eventKey, keyLookup, keyLookupCells, keySpanCells, type EncodedUnit, type InlineEvents, type UnitEvent } from '../event-units.js';
import { singleStep, type SqlValue, type WriterStep } from '../sqlite-writer-thread.js';

/** Row of the event log, the per-pipeline log of events: the public record plus bookkeeping. */
export type EventRow = EventRecord & {
  workspace_id: string;
  created_at: string;
  updated_at: string;
  /** Where the log holds it: its unit and its index in the unit (set on what is read). */
  log?: EventPosition;
  /** `JSON.stringify(payload)` when it was made already (by the destination): what is appended keeps this text. */
  payload_json?: string | undefined;
};

/** An event's log position: its unit, and its index in the unit. */
export interface EventPosition {
  unit: number;
  index: number;
}

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

/** What one batch appends to the log: its unit, its events' keys, and the change rows of its dead letters. */
export interface AppendedUnit {
  workspace_id: string;
  pipeline_id: string;
  created_at: string;
  unit: EncodedUnit;
  /** Each event's key (`eventKey`), in the unit's order: two events may share one. */
  keys: number[];
  /** The dead-lettered events, with their index in the unit. */
  changes: Array<{ index: number; row: EventRow }>;
}

const mapDeadLetter = (row: Record<string, unknown>): DeadLetterRow => ({
  event_id: String(row.event_id),
  workspace_id: String(row.workspace_id),
  pipeline_id: String(row.pipeline_id),
  stage: String(row.stage),
  record: fromJson<JsonObject>(row.record),
  replay_requested_at: (row.replay_requested_at as string | null) ?? null,
  created_at: String(row.created_at),
});

/** An `event_changes` row as an event row. */
const mapChange = (row: Record<string, unknown>, createdAt?: string): EventRow => ({
  id: String(row.event_id),
  workspace_id: String(row.workspace_id),
  pipeline_id: String(row.pipeline_id),
  type: String(row.type),
  occurred_at: String(row.occurred_at),
  payload: fromJson<JsonObject>(row.payload),
  status: row.status as EventStatus,
  attempts: toInt(row.attempts),
  error: fromJson(row.error),
  dead_lettered_at: (row.dead_lettered_at as string | null) ?? null,
  created_at: createdAt ?? String(row.updated_at),
  updated_at: String(row.updated_at),
  log: { unit: toInt(row.unit_id), index: toInt(row.idx) },
});

/** The stored spelling of a timestamp: ISO 8601 UTC with milliseconds. */
const CANONICAL_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** Rows per statement of a bulk write or update. */
const CHUNK = 1000;

/**
 * Units read per query of a listing: a page usually lies in one; a sparse filter reads on in
 * bigger steps, up to MAX_UNITS with their bodies, or MAX_INLINE rows of a rare type's copies.
 */
const FIRST_UNITS = 1;
const MAX_UNITS = 32;
const MAX_INLINE = 128;

/** The statuses an event keeps a change row for, which `status` filters read from that table alone. */
const OPEN: readonly EventStatus[] = ['dead_lettered', 'replaying'];

const UNIT_COLUMNS = ['workspace_id', 'pipeline_id', 'count', 'min_occurred_at', 'max_occurred_at', 'failed', 'filtered', 'created_at', 'body'];
const INSERT_UNIT_SQLITE = `INSERT INTO event_units (${UNIT_COLUMNS.join(', ')}) VALUES (${UNIT_COLUMNS.map(() => '?').join(', ')})`;
// Inserts into WITHOUT ROWID tables leave last_insert_rowid() alone: it is the unit's id throughout.
const INSERT_KEY_SQLITE = 'INSERT OR IGNORE INTO event_keys (key, unit_id) VALUES (?, last_insert_rowid())';
const INSERT_SPAN_SQLITE = 'INSERT OR IGNORE INTO event_key_spans (level, cell, unit_id, min_key, max_key) VALUES (?, ?, last_insert_rowid(), ?, ?)';
/**
 * The units that may hold an event's key, on SQLite: those with the key among their `event_keys`,
 * and those whose span holds it, at each level of the grid (see `keySpanCells`).
 */
const UNITS_BY_KEY_SQLITE = [
  'SELECT unit_id FROM event_keys WHERE key = ?',
  ...keyLookupCells(0).map(() => 'SELECT unit_id FROM event_key_spans WHERE level = ? AND cell = ? AND min_key <= ? AND max_key >= ?'),
].join(' UNION ALL ');

/** The bindings of {@link UNITS_BY_KEY_SQLITE} for `key`. */
function unitsByKeyBindings(key: number): number[] {
  return [key, ...keyLookupCells(key).flatMap(([level, cell]) => [level, cell, key, key])];
}
const INSERT_TYPE_SQLITE = 'INSERT OR IGNORE INTO event_unit_types (pipeline_id, type, events, unit_id) VALUES (?, ?, ?, last_insert_rowid())';
const CHANGE_COLUMNS = ['event_id', 'workspace_id', 'pipeline_id', 'idx', 'type', 'occurred_at', 'payload', 'status', 'attempts', 'error', 'dead_lettered_at', 'updated_at'];
// A change row is a rowid table's: its insert moves last_insert_rowid(), so the unit is found by its pipeline.
const INSERT_CHANGE_SQLITE = `INSERT INTO event_changes (unit_id, ${CHANGE_COLUMNS.join(', ')})
  VALUES ((SELECT max(id) FROM event_units WHERE pipeline_id = ?), ${CHANGE_COLUMNS.map(() => '?').join(', ')})
  ON CONFLICT (event_id) DO UPDATE SET unit_id = excluded.unit_id, idx = excluded.idx, type = excluded.type, occurred_at = excluded.occurred_at,
    payload = excluded.payload, status = excluded.status, attempts = excluded.attempts, error = excluded.error,
    dead_lettered_at = excluded.dead_lettered_at, updated_at = excluded.updated_at
  WHERE event_changes.pipeline_id = excluded.pipeline_id AND event_changes.workspace_id = excluded.workspace_id`;

/**
 * The event log and its dead letters.
 *
 * The log is written a unit per batch (`event-units.ts`): one row, whatever the batch's size,
 * and a row or two that find it by an event's id (the span of its ids' keys, see `keyLookup`; a
 * key per event only when that span is wide: ids without a time). What happens to an
 * event after (dead-lettered, replaying, delivered by a replay) is a row of `event_changes`,
 * which reads overlay on the units. The listing is in log order: units by id, events by their
 * index in the unit.
 */
export class EventsRepo {
  /** Replay requests: dead letters with `replay_requested_at` set, claimed with a lease. */
  readonly replays: LeasedQueue;

  constructor(private readonly db: Db, private readonly dialect: StorageDialect) {
    this.replays = new LeasedQueue(db, dialect, { table: 'dead_letters', key: 'event_id' });
  }

  /**
   * Appends a batch of events to the log: a unit per pipeline among `rows` (a batch has one), in
   * the order given. `canonicalTimes` says every `occurred_at` is already ISO 8601 UTC with
   * milliseconds (the runtime's are), which spares re-spelling them.
   */
  async append(rows: readonly EventRow[], options: { canonicalTimes?: boolean } = {}): Promise<void> {
    for (const unit of unitsOf(rows, options)) await this.appendUnit(unit);
  }

  private async appendUnit(a: AppendedUnit): Promise<void> {
    const u = a.unit;
    const row = {
      workspace_id: a.workspace_id, pipeline_id: a.pipeline_id, count: u.count, min_occurred_at: u.min_occurred_at, max_occurred_at: u.max_occurred_at,
      failed: u.failed, filtered: u.filtered, created_at: a.created_at, body: await packUnitOffThread(u),
    };
    const postgres = !this.dialect.inProcess;
    const lookup = keyLookup(a.keys);
    const [inserted] = (await this.db('event_units').insert(postgres ? { ...row, ...lookup } : row).returning('id')) as Array<{ id: unknown } | number>;
    const unitId = toInt(typeof inserted === 'object' ? inserted.id : inserted);
    if (!postgres && lookup.keys === null) {
      const spans = keySpanCells(lookup.min_key, lookup.max_key).map(([level, cell]) => ({ level, cell, unit_id: unitId, min_key: lookup.min_key, max_key: lookup.max_key }));
      await this.db('event_key_spans').insert(spans).onConflict(['level', 'cell', 'unit_id']).ignore();
    } else if (!postgres) {
      const keys = lookup.keys!;
      for (let k = 0; k < keys.length; k += 400) {
        await this.db('event_keys').insert(keys.slice(k, k + 400).map((key) => ({ key, unit_id: unitId }))).onConflict(['key', 'unit_id']).ignore();
      }
    }
    await this.db('event_unit_types')
      .insert(u.types.map((type) => ({ pipeline_id: a.pipeline_id, type, unit_id: unitId, events: u.inline.get(type) ?? null })))
      .onConflict(['pipeline_id', 'type', 'unit_id'])
      .ignore();
    for (const c of a.changes) {
      await this.db('event_changes')
        .insert({ unit_id: unitId, idx: c.index, ...changeColumns(c.row) })
        .onConflict('event_id')
        .merge(['unit_id', 'idx', 'type', 'occurred_at', 'payload', 'status', 'attempts', 'error', 'dead_lettered_at', 'updated_at']);
    }
  }

  /**
   * Records the new outcome of events the log holds already (a replay's): their change rows are
   * updated. An event the log does not hold is appended, in a unit of its own.
   */
  async settle(rows: readonly EventRow[], options: { canonicalTimes?: boolean } = {}): Promise<void> {
    const time = storedTime(options.canonicalTimes);
    const missing: EventRow[] = [];
    for (const r of rows) {
      const patch = { status: r.status, attempts: r.attempts, error: r.error ? toJson(r.error) : null, dead_lettered_at: r.dead_lettered_at, updated_at: r.updated_at };
      const changed = affected(await this.db('event_changes').where({ event_id: r.id, workspace_id: r.workspace_id, pipeline_id: r.pipeline_id }).update(patch));
      if (changed === 0) missing.push({ ...r, occurred_at: time(r.occurred_at) });
    }
    if (missing.length > 0) await this.append(missing, { canonicalTimes: true });
  }

  /** An event of the workspace: its change row, or else the newest unit that holds it. */
  async get(workspaceId: string, id: string): Promise<EventRow | null> {
    const change = (await this.db('event_changes').where({ workspace_id: workspaceId, event_id: id }).first()) as Record<string, unknown> | undefined;
    if (change) return mapChange(change);
    const key = eventKey(id);
    const units = (
      this.dialect.inProcess
        ? await this.db('event_units').whereRaw(`id IN (${UNITS_BY_KEY_SQLITE})`, unitsByKeyBindings(key)).andWhere('workspace_id', workspaceId).select(UNIT_READ).orderBy('id', 'desc')
        : await this.db('event_units')
            .where('workspace_id', workspaceId)
            // Spelled as the partial indexes are, so each side of the OR is answered by its own.
            .andWhereRaw(`((keys IS NULL AND int8range(min_key, max_key, '[]') @> ?::bigint) OR (keys IS NOT NULL AND keys @> ARRAY[?]::bigint[]))`, [key, key])
            .select(UNIT_READ)
            .orderBy('id', 'desc')
    ) as Record<string, unknown>[];
    for (const unit of units) {
      const decoded = new DecodedUnit(unit.body as Buffer);
      const index = decoded.indexOf(id);
      if (index >= 0) return unitRow(unit, decoded, index);
    }
    return null;
  }

  /**
   * Lists a pipeline's events in log order, oldest first or (`desc`) newest first. `after` is
   * the position `[unit, index]` (as text) of the last event of the page before.
   */
  async list(
    workspaceId: string,
    pipelineId: string,
    filters: EventFilters,
    after: readonly string[] | undefined,
    limit: number,
    order: SortOrder = 'asc',
  ): Promise<KeysetResult<EventRow>> {
    if (filters.status !== undefined && OPEN.includes(filters.status)) return this.listChanges(workspaceId, pipelineId, filters, after, limit, order);
    const asc = order === 'asc';
    const position = after ? { unit: Number(after[0]), index: Number(after[1]) } : undefined;
    const out: EventRow[] = [];
    // The first unit read may be the cursor's own; the units after it come in growing steps.
    let bound = position?.unit;
    let inclusive = true;
    let step = FIRST_UNITS;
    for (;;) {
      const units = await this.unitsFor(workspaceId, pipelineId, filters, { bound, inclusive, order, limit: step });
      if (units.length === 0) return { rows: out, hasMore: false };
      const overlay = await this.overlay(units);
      for (const unit of units) {
        const id = toInt(unit.id);
        const view = unitView(unit);
        const n = view.length;
        for (let k = asc ? 0 : n - 1; asc ? k < n : k >= 0; k += asc ? 1 : -1) {
          const index = view.indexAt(k);
          if (position && id === position.unit && (asc ? index <= position.index : index >= position.index)) continue;
          if (filters.type !== undefined && view.typeAt(k) !== filters.type) continue;
          const at = view.occurredAt(k);
          if (filters.since !== undefined && at < filters.since) continue;
          if (filters.until !== undefined && at >= filters.until) continue;
          const row = overlay.get(id)?.get(index) ?? view.row(k);
          if (filters.status !== undefined && row.status !== filters.status) continue;
          if (out.length === limit) return { rows: out, hasMore: true };
          out.push(row);
        }
      }
      if (units.length < step) return { rows: out, hasMore: false };
      bound = toInt(units[units.length - 1]!.id);
      inclusive = false;
      // Copies cost little to read: enough rows for the rest of the page at once.
      const copies = units.every((u) => u.inline !== null && u.inline !== undefined);
      step = copies ? Math.min(Math.max(step * 4, limit + 1 - out.length), MAX_INLINE) : Math.min(step * 4, MAX_UNITS);
    }
  }

  /**
   * The next units a listing reads, in its order, those the filters may match: by the span of
   * their times, their filtered count and, for a type, their `event_unit_types` rows, which hold
   * the events themselves when the type is rare in the unit (`inline`; the body is then not read).
   */
  private async unitsFor(
    workspaceId: string,
    pipelineId: string,
    filters: EventFilters,
    at: { bound: number | undefined; inclusive: boolean; order: SortOrder; limit: number },
  ): Promise<Record<string, unknown>[]> {
    const typed = filters.type !== undefined;
    const query = typed
      ? this.db('event_unit_types as t')
          .join('event_units as u', 'u.id', 't.unit_id')
          .select('u.id', 'u.workspace_id', 'u.pipeline_id', 'u.failed', 'u.created_at', 't.events as inline', this.db.raw('CASE WHEN t.events IS NULL THEN u.body END AS body'))
          .where({ 't.pipeline_id': pipelineId, 't.type': filters.type, 'u.workspace_id': workspaceId })
      : this.db('event_units as u').select(UNIT_READ.map((c) => `u.${c}`)).where({ 'u.workspace_id': workspaceId, 'u.pipeline_id': pipelineId });
    const idColumn = typed ? 't.unit_id' : 'u.id';
    const asc = at.order === 'asc';
    if (at.bound !== undefined) query.andWhere(idColumn, asc ? (at.inclusive ? '>=' : '>') : at.inclusive ? '<=' : '<', at.bound);
    if (filters.since !== undefined) query.andWhere('u.max_occurred_at', '>=', filters.since);
    if (filters.until !== undefined) query.andWhere('u.min_occurred_at', '<', filters.until);
    if (filters.status === 'filtered') {
      // A replay may filter an event of a unit that had none.
      query.andWhere((q) => q.where('u.filtered', '>', 0).orWhereIn('u.id', (sub) => sub.select('unit_id').from('event_changes').where({ pipeline_id: pipelineId, status: 'filtered' })));
    }
    return (await query.orderBy(idColumn, at.order).limit(at.limit)) as Record<string, unknown>[];
  }

  /** The change rows of these units' events, by unit and index: only units that had dead letters have any. */
  private async overlay(units: readonly Record<string, unknown>[]): Promise<Map<number, Map<number, EventRow>>> {
    const ids = units.filter((u) => toInt(u.failed) > 0).map((u) => toInt(u.id));
    const out = new Map<number, Map<number, EventRow>>();
    if (ids.length === 0) return out;
    const created = new Map(units.map((u) => [toInt(u.id), String(u.created_at)]));
    for (const row of (await this.db('event_changes').whereIn('unit_id', ids)) as Record<string, unknown>[]) {
      const unit = toInt(row.unit_id);
      let byIndex = out.get(unit);
      if (!byIndex) out.set(unit, (byIndex = new Map()));
      byIndex.set(toInt(row.idx), mapChange(row, created.get(unit)));
    }
    return out;
  }

  /** `status=dead_lettered` or `replaying`: from the change rows alone, in log order. */
  private async listChanges(
    workspaceId: string,
    pipelineId: string,
    filters: EventFilters,
    after: readonly string[] | undefined,
    limit: number,
    order: SortOrder,
  ): Promise<KeysetResult<EventRow>> {
    const query = this.db('event_changes').where({ workspace_id: workspaceId, pipeline_id: pipelineId, status: filters.status });
    applyChangeFilters(query, filters);
    const page = await keysetPage<Record<string, unknown>>(query, ['unit_id', 'idx'], after?.map(Number), limit, order);
    return { rows: page.rows.map((r) => mapChange(r)), hasMore: page.hasMore };
  }

  /**
   * How many of a pipeline's events are `dead_lettered` and `replaying` now. The caller has found
   * the pipeline in its workspace already (pipeline ids are the engine's own, one workspace each).
   */
  async countOpen(pipelineId: string): Promise<{ dead_lettered: number; replaying: number }> {
    const rows = (await this.db('event_changes').select('status').count({ n: '*' }).where('pipeline_id', pipelineId).whereIn('status', OPEN).groupBy('status')) as { status: string; n: unknown }[];
    const counts = { dead_lettered: 0, replaying: 0 };
    for (const row of rows) if (row.status === 'dead_lettered' || row.status === 'replaying') counts[row.status] = toInt(row.n);
    return counts;
  }

  /**
   * Updates the status fields of an event that has a change row (every event dead-lettered
   * once has); `expectStatus` makes it a compare-and-set. False when nothing changed.
   */
  async updateStatus(
    workspaceId: string,
    id: string,
    patch: Partial<Pick<EventRow, 'status' | 'attempts' | 'error' | 'dead_lettered_at' | 'updated_at'>>,
    expectStatus?: EventStatus,
  ): Promise<boolean> {
    const query = this.db('event_changes').where({ workspace_id: workspaceId, event_id: id });
    if (expectStatus) query.andWhere({ status: expectStatus });
    const update: Record<string, unknown> = { ...patch };
    if (patch.error !== undefined) update.error = patch.error ? toJson(patch.error) : null;
    return affected(await query.update(update)) === 1;
  }

  /** The attempts spent so far on each of these events (a replay adds to them): dead-lettered ones, from their change rows. */
  async attemptsOf(ids: readonly string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (let i = 0; i < ids.length; i += CHUNK) {
      const rows = (await this.db('event_changes').whereIn('event_id', ids.slice(i, i + CHUNK)).select('event_id', 'attempts')) as { event_id: string; attempts: unknown }[];
      for (const row of rows) out.set(row.event_id, toInt(row.attempts));
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

  /** The dead letter of an event, if it has one. */
  async getDeadLetter(eventId: string): Promise<DeadLetterRow | null> {
    const row = await this.db('dead_letters').where({ event_id: eventId }).first();
    return row ? mapDeadLetter(row) : null;
  }

  /** Forgets a dead letter (after a successful replay). */
  async deleteDeadLetter(eventId: string): Promise<void> {
    await this.db('dead_letters').where({ event_id: eventId }).delete();
  }

  /**
   * Deletes up to `limit` of a pipeline's units whose events all happened, and which was logged,
   * before `before` (ISO 8601), oldest first, with their keys, types and change rows; returns
   * how many units. A unit holding an event that is dead-lettered or replaying now stays whole:
   * it is what a replay needs.
   */
  async deleteSettledBefore(pipelineId: string, before: string, limit: number): Promise<number> {
    const units = (await this.db('event_units')
      .select('id', 'body')
      .where({ pipeline_id: pipelineId })
      .andWhere('max_occurred_at', '<', before)
      .andWhere('created_at', '<', before)
      .whereNotExists((sub) => sub.select('event_id').from('event_changes').whereRaw('event_changes.unit_id = event_units.id').whereIn('status', OPEN))
      .orderBy('id')
      .limit(limit)) as Record<string, unknown>[];
    if (units.length === 0) return 0;
    const ids = units.map((u) => toInt(u.id));
    if (this.dialect.inProcess) {
      // The keys are found from the units' own ids: an index by unit would cost every event a second entry.
      for (const unit of units) {
        const unitId = toInt(unit.id);
        const all = new DecodedUnit(unit.body as Buffer).ids().map(eventKey);
        const lookup = keyLookup(all);
        if (lookup.keys === null) {
          const cells = keySpanCells(lookup.min_key, lookup.max_key);
          await this.db('event_key_spans').where({ level: cells[0]![0], unit_id: unitId }).whereIn('cell', cells.map(([, cell]) => cell)).delete();
          // A unit written before spans (0010) has its keys even so: all of them, or none.
          if (!(await this.db('event_keys').where({ key: all[0], unit_id: unitId }).first())) continue;
        }
        const keys = lookup.keys ?? [...new Set(all)];
        for (let k = 0; k < keys.length; k += 500) await this.db('event_keys').where('unit_id', unitId).whereIn('key', keys.slice(k, k + 500)).delete();
      }
    }
    await this.db('event_unit_types').where('pipeline_id', pipelineId).whereIn('unit_id', ids).delete();
    await this.db('event_changes').whereIn('unit_id', ids).delete();
    return affected(await this.db('event_units').whereIn('id', ids).delete());
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
      const select = this.db('event_changes').select('event_id').where({ workspace_id: workspaceId, pipeline_id: pipelineId, status: 'dead_lettered' });
      applyChangeFilters(select, filters);
      const chunk = ((await select.orderBy(['unit_id', 'idx']).limit(CHUNK)) as { event_id: string }[]).map((r) => r.event_id);
      if (chunk.length === 0) break;
      count += affected(await this.db('event_changes').whereIn('event_id', chunk).andWhere({ status: 'dead_lettered' }).update({ status: 'replaying', updated_at: now }));
      await this.db('dead_letters').whereIn('event_id', chunk).update({ replay_requested_at: now });
    }
    return count;
  }
}

/** The unit columns a read needs (not Postgres's keys). */
const UNIT_READ = ['id', 'workspace_id', 'pipeline_id', 'failed', 'created_at', 'body'];

/** A unit read for a listing: its whole body decoded, or a rare type's copied events. */
interface UnitView {
  length: number;
  /** The index in the unit of the k-th event here. */
  indexAt(k: number): number;
  typeAt(k: number): string;
  occurredAt(k: number): string;
  row(k: number): EventRow;
}

function unitView(unit: Record<string, unknown>): UnitView {
  if (unit.inline !== null && unit.inline !== undefined) {
    const copies = JSON.parse(String(unit.inline)) as InlineEvents;
    return {
      length: copies.length,
      indexAt: (k) => copies[k]![0],
      typeAt: (k) => copies[k]![1].type,
      occurredAt: (k) => copies[k]![1].occurred_at,
      row: (k) => withUnit(unit, copies[k]![1], copies[k]![0]),
    };
  }
  const decoded = new DecodedUnit(unit.body as Buffer);
  return {
    length: decoded.length,
    indexAt: (k) => k,
    typeAt: (k) => decoded.typeAt(k),
    occurredAt: (k) => decoded.occurredAt(k),
    row: (k) => unitRow(unit, decoded, k),
  };
}

/** The event at `index` of a unit read from storage, as an event row. */
function unitRow(unit: Record<string, unknown>, decoded: DecodedUnit, index: number): EventRow {
  return withUnit(unit, decoded.event(index), index);
}

/** An event of a unit, with the unit's bookkeeping, as an event row. */
function withUnit(unit: Record<string, unknown>, e: UnitEvent, index: number): EventRow {
  const created = String(unit.created_at);
  return {
    ...e,
    workspace_id: String(unit.workspace_id),
    pipeline_id: String(unit.pipeline_id),
    created_at: created,
    updated_at: created,
    log: { unit: toInt(unit.id), index },
  };
}

/** The columns of an event's change row, but its unit and index. */
function changeColumns(r: EventRow): Record<string, SqlValue> {
  return {
    event_id: r.id, workspace_id: r.workspace_id, pipeline_id: r.pipeline_id, type: r.type, occurred_at: r.occurred_at,
    payload: r.payload === null ? null : toJson(r.payload), status: r.status, attempts: r.attempts,
    error: r.error ? toJson(r.error) : null, dead_lettered_at: r.dead_lettered_at, updated_at: r.updated_at,
  };
}

/**
 * Groups rows into units: one per pipeline, in the order of their first row, each unit's events
 * in the order given. Times are spelled canonically (an invalid one is refused with a RangeError).
 */
export function unitsOf(rows: readonly EventRow[], options: { canonicalTimes?: boolean } = {}): AppendedUnit[] {
  const time = storedTime(options.canonicalTimes);
  const first = rows[0];
  if (first === undefined) return [];
  // A batch is one pipeline's: one unit, without grouping.
  const single = rows.every((r) => r.pipeline_id === first.pipeline_id && r.workspace_id === first.workspace_id);
  const groups: (readonly EventRow[])[] = single ? [rows] : byPipeline(rows);
  return groups.map((group) => {
    const head = group[0]!;
    const events: UnitEvent[] = new Array(group.length);
    const keys: number[] = new Array(group.length);
    const changes: AppendedUnit['changes'] = [];
    let created = head.created_at;
    for (let k = 0; k < group.length; k++) {
      const r = group[k]!;
      const occurred = time(r.occurred_at);
      // The row itself when its time is spelled as stored: no copy per event.
      events[k] = occurred === r.occurred_at ? r : { ...r, occurred_at: occurred };
      keys[k] = eventKey(r.id);
      if (r.created_at > created) created = r.created_at;
      if (r.status === 'dead_lettered' || r.status === 'replaying') changes.push({ index: k, row: { ...r, occurred_at: occurred } });
    }
    return { workspace_id: head.workspace_id, pipeline_id: head.pipeline_id, created_at: created, unit: encodeUnit(events), keys, changes };
  });
}

/** Rows grouped by workspace and pipeline, in the order of each group's first row. */
function byPipeline(rows: readonly EventRow[]): EventRow[][] {
  const groups = new Map<string, EventRow[]>();
  for (const r of rows) {
    const key = `${r.workspace_id}\0${r.pipeline_id}`;
    const group = groups.get(key);
    if (group) group.push(r);
    else groups.set(key, [r]);
  }
  return [...groups.values()];
}

/**
 * A batch's unit as steps of a SQLite writer-thread transaction: the unit's row (its body
 * compressed on the thread), what finds it by an event's key (its span's cells, or each key), its
 * types, and the change rows of its dead letters.
 */
export function unitSteps(a: AppendedUnit): WriterStep[] {
  const u = a.unit;
  const steps: WriterStep[] = [
    {
      ...singleStep(INSERT_UNIT_SQLITE, [a.workspace_id, a.pipeline_id, u.count, u.min_occurred_at, u.max_occurred_at, u.failed, u.filtered, a.created_at, null]),
      pack: { at: 8, blocks: u.blocks, count: u.count, size: BLOCK_EVENTS, ranges: u.ranges },
    },
    keyStep(keyLookup(a.keys)),
    { sql: INSERT_TYPE_SQLITE, rows: u.types.length, shared: [a.pipeline_id, null, null], varying: [1, 2], values: u.types.flatMap((type) => [type, u.inline.get(type) ?? null]) },
  ];
  if (a.changes.length > 0) {
    const values: SqlValue[] = [];
    for (const c of a.changes) {
      const cols = changeColumns(c.row);
      values.push(a.pipeline_id, ...CHANGE_COLUMNS.map((name) => (name === 'idx' ? c.index : cols[name]!)));
    }
    steps.push({ sql: INSERT_CHANGE_SQLITE, rows: a.changes.length, shared: new Array<SqlValue>(CHANGE_COLUMNS.length + 1).fill(null), varying: Array.from({ length: CHANGE_COLUMNS.length + 1 }, (_, i) => i), values });
  }
  return steps;
}

/** How SQLite will find the unit by its events' keys: its span's cells when the span is narrow, else each key. */
function keyStep(lookup: ReturnType<typeof keyLookup>): WriterStep {
  if (lookup.keys !== null) return { sql: INSERT_KEY_SQLITE, rows: lookup.keys.length, shared: [null], varying: [0], values: lookup.keys };
  const cells = keySpanCells(lookup.min_key, lookup.max_key);
  return { sql: INSERT_SPAN_SQLITE, rows: cells.length, shared: [null, null, lookup.min_key, lookup.max_key], varying: [0, 1], values: cells.flat() };
}

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

/** The filters a change row answers by its own columns. */
function applyChangeFilters(query: Knex.QueryBuilder, filters: Omit<EventFilters, 'status'>): void {
  if (filters.type !== undefined) query.andWhere('type', filters.type);
  if (filters.since !== undefined) query.andWhere('occurred_at', '>=', filters.since);
  if (filters.until !== undefined) query.andWhere('occurred_at', '<', filters.until);
}

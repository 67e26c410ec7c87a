import { affected, fromJson, INSERT_CHUNK, toInt, toJson, type Db } from '../sql-helpers.js';
import type { StorageDialect } from '../dialect.js';
import type { PlatformEvent, PlatformEventType } from '../../common/index.js';
import type { JsonObject } from '../../plugin-api/index.js';
import type { SqlValue, WriterStep } from '../sqlite-writer-thread.js';

/** Row of `platform_events`, with its sequence number. */
export interface OutboxRow extends PlatformEvent {
  seq: number;
  fanned_out_at: string | null;
}

const map = (row: Record<string, unknown>): OutboxRow => ({
  seq: toInt(row.seq),
  id: String(row.id),
  workspace_id: String(row.workspace_id),
  type: row.type as PlatformEventType,
  data: fromJson<JsonObject>(row.data),
  occurred_at: String(row.occurred_at),
  fanned_out_at: (row.fanned_out_at as string | null) ?? null,
});

/**
 * The platform-event outbox. Written with the transaction of the state change that causes the
 * event, so an event exists if and only if its cause committed.
 */
export class OutboxRepo {
  constructor(
    private readonly db: Db,
    private readonly dialect: StorageDialect,
  ) {}

  /** Appends one event. */
  async append(event: PlatformEvent): Promise<void> {
    await this.appendMany([event]);
  }

  /** Appends events in the given order (their sequence numbers follow it). */
  async appendMany(events: readonly PlatformEvent[]): Promise<void> {
    // In chunks: knex writes a multi-row insert on SQLite as a compound SELECT, which SQLite caps at 500 terms.
    for (let i = 0; i < events.length; i += INSERT_CHUNK) {
      await this.db('platform_events').insert(events.slice(i, i + INSERT_CHUNK).map((event) => ({ ...event, data: toJson(event.data) })));
    }
  }

  /** One event by id. */
  async get(id: string): Promise<OutboxRow | null> {
    const row = await this.db('platform_events').where({ id }).first();
    return row ? map(row) : null;
  }

  /**
   * Events not yet fanned out to subscriptions, in commit order. With `claim` (inside the fan-out
   * transaction) Postgres locks them and skips those another engine is fanning out, so engines
   * share the work instead of queueing behind each other; SQLite has one writer anyway.
   */
  async pending(limit: number, claim = false): Promise<OutboxRow[]> {
    const query = this.db('platform_events').whereNull('fanned_out_at').orderBy('seq').limit(limit);
    if (claim) this.dialect.lockForClaim(query);
    return ((await query) as Record<string, unknown>[]).map(map);
  }

  /** True when some event waits to be fanned out (a read: an idle engine's poll takes no write lock). */
  async hasPending(): Promise<boolean> {
    return (await this.db('platform_events').whereNull('fanned_out_at').first('seq')) !== undefined;
  }

  /** Marks events as fanned out to their subscriptions. */
  async markFannedOut(ids: readonly string[], now: string): Promise<void> {
    if (ids.length > 0) await this.db('platform_events').whereIn('id', ids).whereNull('fanned_out_at').update({ fanned_out_at: now });
  }

  /**
   * Deletes up to `limit` events fanned out before `before` (ISO 8601), oldest first; returns how
   * many. Their deliveries keep what was sent (each carries its body).
   */
  async deleteFannedOutBefore(before: string, limit: number): Promise<number> {
    const seqs = this.db('platform_events').select('seq').whereNotNull('fanned_out_at').andWhere('fanned_out_at', '<', before).orderBy('fanned_out_at').limit(limit);
    return affected(await this.db('platform_events').whereIn('seq', seqs).delete());
  }

  /** Every event of a workspace, oldest first (tests and audits). */
  async listForWorkspace(workspaceId: string): Promise<OutboxRow[]> {
    return ((await this.db('platform_events').where({ workspace_id: workspaceId }).orderBy('seq')) as Record<string, unknown>[]).map(map);
  }
}

const APPEND_COLUMNS = ['id', 'workspace_id', 'type', 'data', 'occurred_at'];
const APPEND_SQLITE = `INSERT INTO platform_events (${APPEND_COLUMNS.join(', ')}) VALUES (${APPEND_COLUMNS.map(() => '?').join(', ')})`;

/** {@link OutboxRepo.appendMany} as a step of a SQLite writer-thread transaction: sequence numbers follow the order given. */
export function outboxStep(events: readonly PlatformEvent[]): WriterStep {
  const values: SqlValue[] = [];
  for (const e of events) values.push(e.id, e.workspace_id, e.type, toJson(e.data), e.occurred_at);
  return { sql: APPEND_SQLITE, rows: events.length, shared: APPEND_COLUMNS.map(() => null), varying: APPEND_COLUMNS.map((_, i) => i), values };
}

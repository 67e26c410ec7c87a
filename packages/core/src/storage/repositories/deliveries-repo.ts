import type { Knex } from 'knex';
import { keysetPage, type KeysetResult } from '../keyset.js';
import { LeasedQueue, type Claim } from '../leases.js';
import { inSqliteTransaction, sqliteStatement } from '../sqlite-direct.js';
import { affected, INSERT_CHUNK, toInt, type Db } from '../sql-helpers.js';
import type { StorageDialect } from '../dialect.js';
import type { DeliveryStatus, PlatformEventType , SortOrder } from '../../common/index.js';

/** Row of `deliveries`. `body` is the exact JSON sent, identical on every attempt. */
export interface DeliveryRow {
  id: string;
  workspace_id: string;
  subscription_id: string;
  event_id: string;
  event_type: PlatformEventType;
  body: string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: string | null;
  /** Start of the current retry cycle: its first attempt (until then, when the delivery was created or redelivered). */
  cycle_started_at: string;
  last_attempt_at: string | null;
  last_response_status: number | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
}

/** The state a delivery takes after an attempt, with the claim it was made under. */
export interface AttemptOutcome {
  id: string;
  token: string;
  status: DeliveryStatus;
  attempts: number;
  cycle_started_at: string;
  last_attempt_at: string;
  last_response_status: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
  updated_at: string;
}

/** Row of `delivery_attempts`. */
export interface DeliveryAttemptRow {
  id: string;
  delivery_id: string;
  workspace_id: string;
  attempted_at: string;
  response_status: number | null;
  duration_ms: number;
  response_body: string | null;
  error: string | null;
}

const map = (row: Record<string, unknown>): DeliveryRow => {
  const out = { ...(row as unknown as DeliveryRow & Record<string, unknown>) };
  delete out.lease_token;
  delete out.lease_holder;
  delete out.lease_expires_at;
  out.attempts = toInt(row.attempts);
  out.last_response_status = row.last_response_status === null ? null : toInt(row.last_response_status);
  return out;
};

const INSERT_ATTEMPT_SQL =
  'INSERT INTO delivery_attempts (id, delivery_id, workspace_id, attempted_at, response_status, duration_ms, response_body, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?)';
const COMPLETE_SQL = `UPDATE deliveries SET status = ?, attempts = ?, cycle_started_at = ?, last_attempt_at = ?, last_response_status = ?,
  last_error = ?, next_attempt_at = ?, updated_at = ?, lease_token = NULL, lease_holder = NULL, lease_expires_at = NULL
  WHERE id = ? AND lease_token = ? AND lease_expires_at > ?`;

/** Deliveries still to attempt, spelled as the partial index `deliveries_due` is (migration 0003). */
export const OPEN_DELIVERY = `status IN ('pending', 'retrying')`;
const OPEN = OPEN_DELIVERY;

/** Webhook deliveries and their attempts; due deliveries are a leased queue. */
export class DeliveriesRepo {
  /** Due deliveries, claimed by the delivery workers. */
  readonly queue: LeasedQueue;

  constructor(
    private readonly db: Db,
    private readonly dialect: StorageDialect,
  ) {
    this.queue = new LeasedQueue(db, dialect, { table: 'deliveries', key: 'id' });
  }

  /** True when a delivery is due and unclaimed: a read, so an idle engine's poll takes no write lock. */
  async hasDue(now: number, exceptSubscriptions: readonly string[]): Promise<boolean> {
    const nowIso = new Date(now).toISOString();
    const query = this.db('deliveries')
      .whereRaw(OPEN)
      .andWhere('next_attempt_at', '<=', nowIso)
      .andWhere((q) => q.whereNull('lease_expires_at').orWhere('lease_expires_at', '<=', nowIso));
    if (exceptSubscriptions.length > 0) query.whereNotIn('subscription_id', exceptSubscriptions);
    return (await query.first('id')) !== undefined;
  }

  /**
   * Claims up to `limit` due deliveries, the longest due first, skipping the subscriptions in
   * `exceptSubscriptions` (those this engine already has enough of in hand).
   */
  async claimDue(options: { now: number; limit: number; holder: string; ttlMs: number; exceptSubscriptions: readonly string[] }): Promise<Claim<DeliveryRow>> {
    const due = new Date(options.now).toISOString();
    const claim = await this.queue.claim<Record<string, unknown>>({
      where: (q) => {
        q.whereRaw(OPEN).andWhere('next_attempt_at', '<=', due);
        if (options.exceptSubscriptions.length > 0) q.whereNotIn('subscription_id', options.exceptSubscriptions);
      },
      orderBy: ['next_attempt_at', 'id'],
      limit: options.limit,
      holder: options.holder,
      ttlMs: options.ttlMs,
      now: options.now,
    });
    // UPDATE ... RETURNING gives no order on Postgres: restore the claim's.
    const rows = claim.rows.map(map).sort((a, b) => (a.next_attempt_at! < b.next_attempt_at! ? -1 : a.next_attempt_at! > b.next_attempt_at! ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return { token: claim.token, rows };
  }

  /** Inserts deliveries; one per (subscription, event) however often the fan-out runs. */
  async insertMany(rows: readonly DeliveryRow[]): Promise<void> {
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
      await this.db('deliveries').insert(rows.slice(i, i + INSERT_CHUNK).map((r) => ({ ...r }))).onConflict(['subscription_id', 'event_id']).ignore();
    }
  }

  /** A delivery of the subscription in the workspace. */
  async get(workspaceId: string, subscriptionId: string, id: string): Promise<DeliveryRow | null> {
    const row = await this.db('deliveries').where({ workspace_id: workspaceId, subscription_id: subscriptionId, id }).first();
    return row ? map(row) : null;
  }

  /** A delivery of any subscription of the workspace, by its id alone. */
  async find(workspaceId: string, id: string): Promise<DeliveryRow | null> {
    const row = await this.db('deliveries').where({ workspace_id: workspaceId, id }).first();
    return row ? map(row) : null;
  }

  /** Deliveries of a subscription by id, optionally by status and creation time. */
  async list(
    workspaceId: string,
    subscriptionId: string,
    filters: { status?: DeliveryStatus; since?: string },
    after: readonly string[] | undefined,
    limit: number,
    order: SortOrder = 'asc',
  ): Promise<KeysetResult<DeliveryRow>> {
    const query = this.db('deliveries').where({ workspace_id: workspaceId, subscription_id: subscriptionId });
    if (filters.status !== undefined) query.andWhere({ status: filters.status });
    if (filters.since !== undefined) query.andWhere('created_at', '>=', filters.since);
    const page = await keysetPage<Record<string, unknown>>(query, ['id'], after, limit, order);
    return { rows: page.rows.map(map), hasMore: page.hasMore };
  }

  /** Updates a delivery; `expectStatus` makes it a compare-and-set. */
  async update(id: string, patch: Partial<DeliveryRow>, expectStatus?: readonly DeliveryStatus[]): Promise<boolean> {
    const query = this.db('deliveries').where({ id });
    if (expectStatus) query.whereIn('status', expectStatus);
    return affected(await query.update(patch)) === 1;
  }

  /** Failed deliveries of a subscription created in `[since, until)`, oldest first. */
  async failedBetween(workspaceId: string, subscriptionId: string, since: string, until: string | undefined): Promise<DeliveryRow[]> {
    const query = this.db('deliveries').where({ workspace_id: workspaceId, subscription_id: subscriptionId, status: 'failed' }).andWhere('created_at', '>=', since);
    if (until !== undefined) query.andWhere('created_at', '<', until);
    return ((await query.orderBy('id')) as Record<string, unknown>[]).map(map);
  }

  /**
   * Deletes up to `limit` finished deliveries (delivered or failed) whose id is below `beforeId`
   * (ids grow with creation time), oldest first, with their attempts; returns how many. Call it
   * in a transaction: the attempts and their delivery go together.
   */
  async deleteFinishedBefore(beforeId: string, limit: number): Promise<number> {
    const ids = ((await this.db('deliveries').select('id').where('id', '<', beforeId).whereIn('status', ['delivered', 'failed']).orderBy('id').limit(limit)) as { id: string }[]).map((r) => r.id);
    if (ids.length === 0) return 0;
    await this.db('delivery_attempts').whereIn('delivery_id', ids).delete();
    return affected(await this.db('deliveries').whereIn('id', ids).delete());
  }

  /** Drops the deliveries of a subscription that were not sent yet; returns how many. */
  async deletePending(subscriptionId: string): Promise<number> {
    return affected(await this.db('deliveries').where({ subscription_id: subscriptionId }).whereIn('status', ['pending', 'retrying']).delete());
  }

  /**
   * Ends the retry cycle of every pending or retrying delivery of a subscription as `failed`
   * (the subscription was disabled): they stay listed and can be recovered once it is fixed.
   */
  async failOpen(subscriptionId: string, lastError: string, now: string): Promise<number> {
    return affected(
      await this.db('deliveries')
        .where({ subscription_id: subscriptionId })
        .whereRaw(OPEN)
        // Not the ones being attempted right now: their outcome is recorded, then they are failed when claimed next.
        .andWhere((q) => q.whereNull('lease_expires_at').orWhere('lease_expires_at', '<=', now))
        .update({ status: 'failed', next_attempt_at: null, last_error: lastError, updated_at: now, lease_token: null, lease_holder: null, lease_expires_at: null }),
    );
  }

  /** Ends claimed deliveries as `failed` without an attempt (their subscription cannot be sent to), fenced by the claim's token. */
  async failHeld(ids: readonly string[], token: string, lastError: string, now: string): Promise<number> {
    if (ids.length === 0) return 0;
    return affected(
      await this.db('deliveries')
        .whereIn('id', ids)
        .andWhere({ lease_token: token })
        .update({ status: 'failed', next_attempt_at: null, last_error: lastError, updated_at: now, lease_token: null, lease_holder: null, lease_expires_at: null }),
    );
  }

  /** Deletes claimed deliveries whose subscription is gone, fenced by the claim's token. */
  async deleteHeld(ids: readonly string[], token: string): Promise<number> {
    if (ids.length === 0) return 0;
    return affected(await this.db('deliveries').whereIn('id', ids).andWhere({ lease_token: token }).delete());
  }

  /** The earliest `next_attempt_at` after `after` among deliveries still to attempt (when to wake up next). */
  async nextDueAfter(after: string): Promise<string | null> {
    const row = (await this.db('deliveries').whereRaw(OPEN).andWhere('next_attempt_at', '>', after).min('next_attempt_at as at').first()) as { at: string | null } | undefined;
    return row?.at ?? null;
  }

  /**
   * Records attempts and applies the outcomes of the deliveries they were made for, each fenced
   * like {@link LeasedQueue.complete} (applied only while its token holds an unexpired claim; a
   * claim taken over still gets its attempt recorded, since it happened), and ends their claims.
   * Returns the ids whose outcome was applied. This is the delivery worker's hot path, so it
   * costs one statement per 250 deliveries on Postgres (a data-modifying WITH, atomic on its
   * own, no transaction round trips) and prepared statements on SQLite's connection directly
   * (knex's own cost per statement is many times the statement's).
   */
  async recordAttempts(attempts: readonly DeliveryAttemptRow[], outcomes: readonly AttemptOutcome[], now: number): Promise<Set<string>> {
    const done = new Set<string>();
    const nowIso = new Date(now).toISOString();
    if (this.dialect.inProcess) {
      await inSqliteTransaction(this.db, (conn) => {
        const insert = sqliteStatement(conn, INSERT_ATTEMPT_SQL);
        for (const a of attempts) insert.run([a.id, a.delivery_id, a.workspace_id, a.attempted_at, a.response_status, a.duration_ms, a.response_body, a.error]);
        const complete = sqliteStatement(conn, COMPLETE_SQL);
        for (const o of outcomes) {
          const result = complete.run([o.status, o.attempts, o.cycle_started_at, o.last_attempt_at, o.last_response_status, o.last_error, o.next_attempt_at, o.updated_at, o.id, o.token, nowIso]) as { changes: number };
          if (result.changes === 1) done.add(o.id);
        }
      });
      return done;
    }
    for (let i = 0; i < Math.max(attempts.length, outcomes.length); i += INSERT_CHUNK) {
      const a = attempts.slice(i, i + INSERT_CHUNK);
      const o = outcomes.slice(i, i + INSERT_CHUNK);
      const insert = a.length === 0 ? '' : `WITH recorded AS (INSERT INTO delivery_attempts (id, delivery_id, workspace_id, attempted_at, response_status, duration_ms, response_body, error) VALUES ${a.map(() => '(?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}) `;
      const bindings: Knex.RawBinding[] = a.flatMap((r) => [r.id, r.delivery_id, r.workspace_id, r.attempted_at, r.response_status, r.duration_ms, r.response_body, r.error]);
      if (o.length === 0) {
        await this.db.raw(`${insert}SELECT 1`, bindings);
        continue;
      }
      // Typed placeholders: Postgres cannot infer the type of a NULL in a free-standing VALUES.
      const row = '(?::text, ?::text, ?::text, ?::integer, ?::text, ?::text, ?::integer, ?::text, ?::text, ?::text)';
      bindings.push(...o.flatMap((r) => [r.id, r.token, r.status, r.attempts, r.cycle_started_at, r.last_attempt_at, r.last_response_status, r.last_error, r.next_attempt_at, r.updated_at]), nowIso);
      const result = await this.db.raw(
        `${insert}UPDATE deliveries SET status = v.status, attempts = v.attempts, cycle_started_at = v.cycle_started_at,
           last_attempt_at = v.last_attempt_at, last_response_status = v.last_response_status, last_error = v.last_error,
           next_attempt_at = v.next_attempt_at, updated_at = v.updated_at, lease_token = NULL, lease_holder = NULL, lease_expires_at = NULL
         FROM (VALUES ${o.map(() => row).join(', ')}) AS v (id, token, status, attempts, cycle_started_at, last_attempt_at, last_response_status, last_error, next_attempt_at, updated_at)
         WHERE deliveries.id = v.id AND deliveries.lease_token = v.token AND deliveries.lease_expires_at > ?
         RETURNING deliveries.id`,
        bindings,
      );
      for (const r of this.dialect.rows<{ id: string }>(result)) done.add(r.id);
    }
    return done;
  }

  /** Records HTTP attempts. */
  async insertAttempts(rows: readonly DeliveryAttemptRow[]): Promise<void> {
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) await this.db('delivery_attempts').insert(rows.slice(i, i + INSERT_CHUNK).map((r) => ({ ...r })));
  }

  /** Records one HTTP attempt. */
  async insertAttempt(row: DeliveryAttemptRow): Promise<void> {
    await this.insertAttempts([row]);
  }

  /** A delivery's attempts, oldest first. */
  async attempts(deliveryId: string): Promise<DeliveryAttemptRow[]> {
    const rows = (await this.db('delivery_attempts').where({ delivery_id: deliveryId }).orderBy('id')) as DeliveryAttemptRow[];
    return rows.map((r) => ({ ...r, duration_ms: toInt(r.duration_ms), response_status: r.response_status === null ? null : toInt(r.response_status) }));
  }
}

import { keysetPage, type KeysetResult } from '../keyset.js';
import { LeasedQueue } from '../leases.js';
import { affected, toInt, type Db } from '../sql-helpers.js';
import type { Dialect } from '../storage-config.js';
import type { DeliveryStatus, PlatformEventType } from '../../domain.js';

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
  cycle_started_at: string;
  last_attempt_at: string | null;
  last_response_status: number | null;
  last_error: string | null;
  created_at: string;
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

/** Webhook deliveries and their attempts; due deliveries are a leased queue. */
export class DeliveriesRepo {
  /** Due deliveries, claimed by the delivery workers. */
  readonly queue: LeasedQueue;

  constructor(private readonly db: Db, dialect: Dialect) {
    this.queue = new LeasedQueue(db, dialect, { table: 'deliveries', key: 'id' });
  }

  /** Inserts deliveries; one per (subscription, event) however often the fan-out runs. */
  async insertMany(rows: readonly DeliveryRow[]): Promise<void> {
    if (rows.length === 0) return;
    await this.db('deliveries').insert(rows.map((r) => ({ ...r }))).onConflict(['subscription_id', 'event_id']).ignore();
  }

  /** A delivery of the subscription in the workspace. */
  async get(workspaceId: string, subscriptionId: string, id: string): Promise<DeliveryRow | null> {
    const row = await this.db('deliveries').where({ workspace_id: workspaceId, subscription_id: subscriptionId, id }).first();
    return row ? map(row) : null;
  }

  /** Deliveries of a subscription by id, optionally by status and creation time. */
  async list(
    workspaceId: string,
    subscriptionId: string,
    filters: { status?: DeliveryStatus; since?: string },
    after: readonly string[] | undefined,
    limit: number,
  ): Promise<KeysetResult<DeliveryRow>> {
    const query = this.db('deliveries').where({ workspace_id: workspaceId, subscription_id: subscriptionId });
    if (filters.status !== undefined) query.andWhere({ status: filters.status });
    if (filters.since !== undefined) query.andWhere('created_at', '>=', filters.since);
    const page = await keysetPage<Record<string, unknown>>(query, ['id'], after, limit);
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

  /** Drops the deliveries of a subscription that were not sent yet; returns how many. */
  async deletePending(subscriptionId: string): Promise<number> {
    return affected(await this.db('deliveries').where({ subscription_id: subscriptionId }).whereIn('status', ['pending', 'retrying']).delete());
  }

  /** Records one HTTP attempt. */
  async insertAttempt(row: DeliveryAttemptRow): Promise<void> {
    await this.db('delivery_attempts').insert(row);
  }

  /** A delivery's attempts, oldest first. */
  async attempts(deliveryId: string): Promise<DeliveryAttemptRow[]> {
    const rows = (await this.db('delivery_attempts').where({ delivery_id: deliveryId }).orderBy('id')) as DeliveryAttemptRow[];
    return rows.map((r) => ({ ...r, duration_ms: toInt(r.duration_ms), response_status: r.response_status === null ? null : toInt(r.response_status) }));
  }
}

import { keysetPage, type KeysetResult } from '../keyset.js';
import { affected, fromJson, toBool, toJson, type Db } from '../sql-helpers.js';
import type { PlatformEventType , SortOrder } from '../../common/index.js';

/** Row of `webhook_subscriptions`; `secret` and `previous_secrets` are sealed. */
export interface WebhookRow {
  id: string;
  workspace_id: string;
  url: string;
  events: PlatformEventType[];
  description: string | null;
  enabled: boolean;
  disabled_reason: string | null;
  secret: string;
  previous_secrets: string | null;
  failing_since: string | null;
  created_at: string;
  updated_at: string;
}

const map = (row: Record<string, unknown>): WebhookRow => ({
  ...(row as unknown as WebhookRow),
  events: fromJson<PlatformEventType[]>(row.events),
  enabled: toBool(row.enabled),
});

const serialize = (patch: Partial<WebhookRow>): Record<string, unknown> =>
  patch.events === undefined ? { ...patch } : { ...patch, events: toJson(patch.events) };

/** Webhook subscriptions. */
export class WebhooksRepo {
  constructor(private readonly db: Db) {}

  /** Stores a new subscription. */
  async insert(row: WebhookRow): Promise<void> {
    await this.db('webhook_subscriptions').insert(serialize(row));
  }

  /** A subscription of the workspace; `lock` holds the row until the transaction ends (Postgres). */
  async get(workspaceId: string, id: string, lock?: 'update'): Promise<WebhookRow | null> {
    const query = this.db('webhook_subscriptions').where({ workspace_id: workspaceId, id });
    if (lock === 'update') query.forUpdate();
    const row = await query.first();
    return row ? map(row) : null;
  }

  /** Subscriptions of a workspace by id. */
  async list(workspaceId: string, after: readonly string[] | undefined, limit: number, order: SortOrder = 'asc'): Promise<KeysetResult<WebhookRow>> {
    const page = await keysetPage<Record<string, unknown>>(this.db('webhook_subscriptions').where({ workspace_id: workspaceId }), ['id'], after, limit, order);
    return { rows: page.rows.map(map), hasMore: page.hasMore };
  }

  /** Enabled subscriptions of a workspace whose `events` name `type` (the fan-out's question). */
  async subscribedTo(workspaceId: string, type: PlatformEventType): Promise<WebhookRow[]> {
    const rows = ((await this.db('webhook_subscriptions').where({ workspace_id: workspaceId, enabled: true }).orderBy('id')) as Record<string, unknown>[]).map(map);
    return rows.filter((row) => row.events.includes(type));
  }

  /** Subscriptions by id, across workspaces (the delivery worker's read; each delivery row names its workspace too). */
  async byIds(ids: readonly string[]): Promise<WebhookRow[]> {
    if (ids.length === 0) return [];
    return ((await this.db('webhook_subscriptions').whereIn('id', ids)) as Record<string, unknown>[]).map(map);
  }

  /**
   * Applies what a batch of delivery attempts says about a subscription, as conditional writes so
   * engines racing on one subscription cannot undo each other: a success clears the failure
   * streak; a failure starts it unless it is running (`failingSince` is the failure's time); a
   * disable applies only to an enabled subscription and, for a long streak, only if the stored
   * streak really began before `streakCutoff`. Returns true when the subscription was disabled.
   */
  async recordStreak(id: string, change: { success?: boolean; failingSince?: string; disable?: { reason: string; streakCutoff?: string; now: string } }): Promise<boolean> {
    if (change.success) await this.db('webhook_subscriptions').where({ id }).whereNotNull('failing_since').update({ failing_since: null });
    if (change.failingSince !== undefined) await this.db('webhook_subscriptions').where({ id }).whereNull('failing_since').update({ failing_since: change.failingSince });
    if (!change.disable) return false;
    const query = this.db('webhook_subscriptions').where({ id, enabled: true });
    if (change.disable.streakCutoff !== undefined) query.andWhere('failing_since', '<=', change.disable.streakCutoff);
    return affected(await query.update({ enabled: false, disabled_reason: change.disable.reason, updated_at: change.disable.now })) === 1;
  }

  /** Updates a subscription; false when it is not in the workspace. */
  async update(workspaceId: string, id: string, patch: Partial<WebhookRow>): Promise<boolean> {
    return affected(await this.db('webhook_subscriptions').where({ workspace_id: workspaceId, id }).update(serialize(patch))) === 1;
  }

  /** Deletes a subscription; false when it is not in the workspace. */
  async delete(workspaceId: string, id: string): Promise<boolean> {
    return affected(await this.db('webhook_subscriptions').where({ workspace_id: workspaceId, id }).delete()) === 1;
  }
}

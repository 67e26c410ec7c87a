import { nowIso, type EngineContext } from '../context/index.js';
import type { PlatformEvent } from '../common/index.js';
import type { DeliveryRow, WebhookRow } from '../storage/index.js';

/**
 * The body POSTed for a platform event (spec 2.5): identical on every attempt and redelivery, so
 * it is rendered once, when the delivery is created.
 */
export function deliveryBody(event: Pick<PlatformEvent, 'id' | 'type' | 'occurred_at' | 'data'>): string {
  return JSON.stringify({ id: event.id, type: event.type, occurred_at: event.occurred_at, data: event.data });
}

/**
 * Turns outbox events into deliveries: one per enabled subscription of the event's workspace
 * whose `events` name its type, in the transaction that marks the events fanned out, so an event
 * is fanned out exactly once whatever crashes (docs/api.md, Webhook delivery). Engines sharing a Postgres
 * fan out disjoint events (the rows are locked and skipped); a delivery is unique per
 * (subscription, event) besides.
 */
export class WebhookFanout {
  constructor(
    private readonly ctx: EngineContext,
    private readonly batchSize: number,
  ) {}

  /** Fans out one batch of events; `more` when the outbox may hold further ones. */
  async round(): Promise<{ more: boolean; created: number }> {
    // Looked at first with a read: the write transaction (and SQLite's write lock) only when there is work.
    if (!(await this.ctx.storage.repos.outbox.hasPending())) return { more: false, created: 0 };
    const now = nowIso(this.ctx);
    return this.ctx.storage.transaction(async (repos) => {
      const events = await repos.outbox.pending(this.batchSize, true);
      if (events.length === 0) return { more: false, created: 0 };
      const subscriptions = new Map<string, Promise<WebhookRow[]>>();
      const rows: DeliveryRow[] = [];
      for (const event of events) {
        const key = `${event.workspace_id}\u0000${event.type}`;
        let subscribed = subscriptions.get(key);
        if (!subscribed) subscriptions.set(key, (subscribed = repos.webhooks.subscribedTo(event.workspace_id, event.type)));
        const body = deliveryBody(event);
        for (const subscription of await subscribed) {
          rows.push({
            id: this.ctx.ids.create('delivery'),
            workspace_id: event.workspace_id,
            subscription_id: subscription.id,
            event_id: event.id,
            event_type: event.type,
            body,
            status: 'pending',
            attempts: 0,
            next_attempt_at: now,
            cycle_started_at: now,
            last_attempt_at: null,
            last_response_status: null,
            last_error: null,
            created_at: now,
            updated_at: now,
          });
        }
      }
      await repos.deliveries.insertMany(rows);
      await repos.outbox.markFannedOut(events.map((e) => e.id), now);
      return { more: events.length === this.batchSize, created: rows.length };
    });
  }
}

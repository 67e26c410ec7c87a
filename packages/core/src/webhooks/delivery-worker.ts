import { failSpan, SpanKind, startSpan, type ClockTimer } from '../common/index.js';
import { webhookHeaders } from '../crypto/index.js';
import type { EngineContext } from '../context/index.js';
import type { OutboundClient } from '../net/index.js';
import { CoalescedPump } from '../queue/index.js';
import { openSigningSecrets } from './webhooks-service.js';
import type { Repositories } from '../storage/index.js';
import { DeliveryCompleter } from './delivery-completer.js';
import type { DeliveryOptions } from './delivery-options.js';
import { attemptVerdict } from './delivery-outcome.js';
import type { Held, Target } from './held-delivery.js';

/** `user-agent` of every delivery. */
export const DELIVERY_USER_AGENT = 'Ferry-Webhooks/1';

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Least time between two claims that skip the subscriptions whose lanes are full, in ms: what
 * another subscription may wait, at most, behind one with a backlog.
 */
const EXCLUDING_LOOK_MS = 100;

/** This engine's deliveries of one subscription: those being sent and those waiting their turn. */
interface Lane {
  active: number;
  waiting: Held[];
}

/**
 * Claims due deliveries and sends them, signed (docs/api.md, Webhook delivery). Deliveries are claimed from
 * storage with a lease, so engines sharing a Postgres never send the same attempt at once and a
 * crashed engine's claims are taken over at expiry; at most `maxInFlight` are in flight in this
 * engine, and `perSubscription` per subscription (its lane), so one slow receiver cannot take
 * every slot.
 *
 * What each attempt's result means is `attemptVerdict` (delivery-outcome.ts); the
 * {@link DeliveryCompleter} commits it before the delivery leaves the engine's hands. The
 * request slot is given to the next delivery as soon as the response is in.
 */
export class DeliveryWorker {
  private running = false;
  private inFlight = 0;
  private readonly lanes = new Map<string, Lane>();
  private readonly targets = new Map<string, Target>();
  private readonly sending = new Set<Promise<void>>();
  private readonly claims: CoalescedPump;
  private readonly completer: DeliveryCompleter;
  private wake: { at: number; timer: ClockTimer } | undefined;
  /**
   * The subscriptions whose lanes were full when the last look found nothing else due, or
   * undefined when that look found work. While they stay full, a finished send does not look
   * again: with a backlog of one subscription, finding "nothing else" means scanning past all of
   * it, and doing that per send made the cost of a send grow with the backlog.
   */
  private starvedWith: Set<string> | undefined;
  /** When the last claim that skipped full lanes ran (engine clock). */
  private lastExcludingLook = -Infinity;
  /** Attempts made whose outcome is not committed yet. */
  private unrecorded = 0;
  /** The last claim took as many as it asked for: the next one skips the look before it. */
  private busy = false;

  constructor(
    private readonly ctx: EngineContext,
    private readonly client: OutboundClient,
    private readonly options: DeliveryOptions,
  ) {
    this.claims = new CoalescedPump(() => this.claimRound(), () => this.running);
    this.completer = new DeliveryCompleter(ctx, options, {
      targets: this.targets,
      waiting: (id) => this.lanes.get(id)?.waiting ?? [],
      disabled: (id) => {
        this.lanes.get(id)?.waiting.splice(0);
        this.targets.delete(id);
      },
      armWake: (at) => this.armWake(at),
    });
  }

  /** Starts claiming. */
  start(): void {
    this.running = true;
    this.poke();
  }

  /** Looks for due deliveries now (new ones were created, redelivered or became due). */
  poke(): void {
    this.starvedWith = undefined;
    void this.claims.pump();
  }

  /** A send finished: looks for more unless the last look found nothing and nothing has changed since. */
  private refill(): void {
    const starved = this.starvedWith;
    if (starved && [...starved].every((id) => this.isFull(id))) return;
    void this.claims.pump();
  }

  private isFull(subscriptionId: string): boolean {
    const lane = this.lanes.get(subscriptionId);
    return lane !== undefined && lane.active + lane.waiting.length >= 2 * this.options.perSubscription;
  }

  /**
   * Stops claiming, lets the sends in flight finish and records them, and hands the deliveries
   * claimed but not started back to the queue, so another engine takes them at once.
   */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.wake?.timer.cancel();
    this.wake = undefined;
    await this.claims.current;
    const waiting = [...this.lanes.values()].flatMap((lane) => lane.waiting.splice(0));
    await Promise.all([...this.sending]);
    await this.completer.flush();
    for (const held of waiting) {
      await this.ctx.storage.repos.deliveries.queue.release(held.row.id, held.token).catch(() => false);
    }
    this.lanes.clear();
  }

  private waitingCount(): number {
    let n = 0;
    for (const lane of this.lanes.values()) n += lane.waiting.length;
    return n;
  }

  /** Claims due deliveries for the free slots; true when there may be more to claim now. */
  private async claimRound(): Promise<boolean> {
    const free = this.options.maxInFlight - this.inFlight - this.waitingCount() - this.unrecorded;
    if (free <= 0) return false;
    // A subscription with a full lane and as many waiting is skipped: its deliveries stay
    // claimable by other engines, and this one asks again when a slot frees.
    const full = [...this.lanes.keys()].filter((id) => this.isFull(id));
    const now = this.ctx.clock.now();
    if (full.length > 0) {
      // Looking past full lanes means reading past their subscriptions' due rows, all of a
      // backlog: at most one such look per EXCLUDING_LOOK_MS, however often sends finish.
      const next = this.lastExcludingLook + EXCLUDING_LOOK_MS;
      if (now < next) {
        this.armWake(next);
        return false;
      }
      this.lastExcludingLook = now;
    }
    const repos = this.ctx.storage.repos;
    try {
      // A read first, unless the last claim came back full (there is surely more): polling an
      // idle queue must not take the write lock (SQLite) every few seconds.
      if (!this.busy && !(await repos.deliveries.hasDue(now, full))) {
        this.starvedWith = new Set(full);
        await this.armWakeFromStorage(now);
        return false;
      }
      const claim = await repos.deliveries.claimDue({ now, limit: free, holder: this.ctx.instanceId, ttlMs: this.options.leaseTtlMs, exceptSubscriptions: full });
      this.busy = claim.rows.length === free;
      this.starvedWith = claim.rows.length < free ? new Set(full) : undefined;
      if (claim.rows.length < free) await this.armWakeFromStorage(now);
      if (claim.rows.length === 0) return false;
      const ids = [...new Set(claim.rows.map((r) => r.subscription_id))];
      await this.refreshTargets(repos, ids, now);
      const gone: string[] = [];
      const disabled: string[] = [];
      const unreadable: string[] = [];
      for (const row of claim.rows) {
        const target = this.targets.get(row.subscription_id);
        // Deleted after the claim read (or fanned out while it was being deleted): its deliveries go with it.
        if (!target || target.row.workspace_id !== row.workspace_id) gone.push(row.id);
        else if (!target.secrets) unreadable.push(row.id);
        else if (!target.row.enabled) disabled.push(row.id);
        else this.laneOf(row.subscription_id).waiting.push({ row, token: claim.token, heldSince: now });
      }
      await repos.deliveries.deleteHeld(gone, claim.token);
      await repos.deliveries.failHeld(disabled, claim.token, 'The subscription is disabled.', iso(now));
      await repos.deliveries.failHeld(unreadable, claim.token, 'The subscription\'s signing secret cannot be read (was the engine\'s secret key changed?).', iso(now));
      return claim.rows.length === free;
    } catch (error) {
      // Storage unavailable: the next poll or completion tries again; claims made are kept by
      // their lease until it expires.
      this.ctx.logger.warn({ err: error }, 'webhook delivery: claiming due deliveries failed');
      return false;
    } finally {
      // Whatever was queued before a failure is sent now, not when some other send finishes.
      this.dispatch();
    }
  }

  /**
   * Reads the subscriptions of claimed deliveries, at every claim: a secret rotated, a URL changed
   * or a subscription disabled a moment ago applies to the very next delivery (after a rotation
   * it must carry both signatures, or a receiver that switched to the new secret refuses it). One
   * indexed read per claim; secrets are decrypted again only when the row changed. A row whose
   * secrets cannot be decrypted is kept without them (its deliveries fail with a reason) rather
   * than stopping every subscription's.
   */
  private async refreshTargets(repos: Repositories, ids: string[], now: number): Promise<void> {
    const rows = await repos.webhooks.byIds(ids);
    for (const id of ids) if (!rows.some((r) => r.id === id)) this.targets.delete(id);
    for (const row of rows) {
      const known = this.targets.get(row.id);
      const same = known?.secrets && known.row.updated_at === row.updated_at && known.row.secret === row.secret && known.row.previous_secrets === row.previous_secrets;
      let secrets = same ? known.secrets : undefined;
      if (!secrets) {
        try {
          secrets = openSigningSecrets(this.ctx.box, row);
        } catch (error) {
          this.ctx.logger.error({ webhook_id: row.id, workspace_id: row.workspace_id, err_code: (error as { code?: unknown }).code }, 'webhook delivery: a subscription\'s signing secret cannot be decrypted');
        }
      }
      this.targets.set(row.id, { row, secrets, readAt: now });
    }
    // Subscriptions not delivered to for a minute are forgotten, with their decrypted secrets.
    for (const [id, target] of this.targets) if (now - target.readAt > 60_000 && !this.lanes.has(id)) this.targets.delete(id);
  }

  private laneOf(subscriptionId: string): Lane {
    let lane = this.lanes.get(subscriptionId);
    if (!lane) this.lanes.set(subscriptionId, (lane = { active: 0, waiting: [] }));
    return lane;
  }

  /** Starts waiting deliveries while their subscription has a free slot. */
  private dispatch(): void {
    for (const [id, lane] of this.lanes) {
      while (lane.active < this.options.perSubscription && lane.waiting.length > 0) {
        const held = lane.waiting.shift()!;
        lane.active++;
        this.inFlight++;
        const sent: Promise<void> = this.deliver(held)
          .catch((error: unknown) => this.ctx.logger.error({ err: error, delivery_id: held.row.id }, 'webhook delivery: attempt failed unexpectedly'))
          .finally(() => {
            lane.active--;
            this.inFlight--;
            this.sending.delete(sent);
            if (lane.active === 0 && lane.waiting.length === 0) this.lanes.delete(id);
            if (this.running) {
              this.dispatch();
              this.refill();
            }
          });
        this.sending.add(sent);
      }
    }
  }

  /** Makes one attempt of a held delivery and queues its outcome for the next flush. */
  private async deliver(held: Held): Promise<void> {
    const target = this.targets.get(held.row.subscription_id);
    if (!target?.secrets) return;
    const repos = this.ctx.storage.repos;
    const now = this.ctx.clock.now();
    if (now - held.heldSince > this.options.leaseTtlMs / 4) {
      // It waited its turn a while: make sure the claim still holds (and extend it) before sending,
      // or another engine that took it over could be sending the same attempt right now.
      if (!(await repos.deliveries.queue.heartbeat(held.row.id, held.token, this.options.leaseTtlMs, now))) return;
      held.heldSince = now;
    }
    const { row } = held;
    const headers = {
      'content-type': 'application/json',
      'user-agent': DELIVERY_USER_AGENT,
      ...webhookHeaders({ id: row.event_id, timestamp: Math.floor(now / 1000), body: row.body }, target.secrets.at(now)),
    };
    // The URL's host only: a subscription's path or query may hold a token of the receiver's.
    const span = startSpan(
      'ferry.webhook.delivery',
      {
        'ferry.workspace.id': row.workspace_id,
        'ferry.webhook.subscription.id': row.subscription_id,
        'ferry.webhook.delivery.id': row.id,
        'ferry.webhook.attempt': row.attempts + 1,
        'ferry.event.id': row.event_id,
        'ferry.event.type': row.event_type,
        'http.request.method': 'POST',
        'server.address': hostOf(target.row.url),
      },
      { kind: SpanKind.CLIENT },
    );
    let result;
    try {
      result = await this.client.send({ url: target.row.url, method: 'POST', headers, body: row.body, timeoutMs: this.options.timeoutMs });
    } catch (error) {
      failSpan(span, { code: 'unexpected_error', message: 'The attempt did not complete.' });
      span.end();
      throw error;
    }
    const end = this.ctx.clock.now();
    const verdict = attemptVerdict(row, held.token, result, { startedAt: now, endedAt: end }, this.options, this.ctx.ids.create('attempt'));
    if (result.kind === 'response') span.setAttribute('http.response.status_code', result.status);
    span.setAttribute('ferry.webhook.outcome', verdict.next.status);
    if (verdict.effect !== 'success') failSpan(span, { code: result.kind === 'response' ? String(result.status) : result.kind, message: verdict.attempt.error ?? 'The attempt failed.' });
    span.end();
    // The request slot is free once the response is in; the claim is held, and the delivery
    // counts as in hand (see claimRound), until the outcome is committed.
    this.unrecorded++;
    this.completer.add({
      ...verdict,
      held,
      attemptedAt: now,
      done: () => {
        this.unrecorded--;
        if (this.running) this.refill();
      },
    });
  }

  /** Wakes the worker when the earliest delivery still to attempt becomes due. */
  private async armWakeFromStorage(now: number): Promise<void> {
    const next = await this.ctx.storage.repos.deliveries.nextDueAfter(iso(now));
    if (next !== null) this.armWake(Date.parse(next));
  }

  private armWake(at: number): void {
    if (!this.running || (this.wake && this.wake.at <= at)) return;
    this.wake?.timer.cancel();
    const timer = this.ctx.clock.setTimeout(() => {
      if (this.wake?.timer === timer) this.wake = undefined;
      this.poke();
    }, at - this.ctx.clock.now());
    this.wake = { at, timer };
  }
}

/** The host of a subscription's URL, for a span; never its path or query. */
function hostOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return '';
  }
}

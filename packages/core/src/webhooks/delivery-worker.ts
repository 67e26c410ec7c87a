import type { ClockTimer, DeliveryStatus } from '../common/index.js';
import { webhookHeaders } from '../crypto/index.js';
import type { EngineContext } from '../engine/index.js';
import type { OutboundClient, OutboundResult } from '../net/index.js';
import { CoalescedPump } from '../queue/index.js';
import { openSigningSecrets, type SigningSecrets } from './webhooks-service.js';
import type { Repositories, AttemptOutcome, DeliveryAttemptRow, DeliveryRow, WebhookRow } from '../storage/index.js';
import type { DeliveryOptions } from './delivery-options.js';
import { nextAttemptAt, parseRetryAfter } from './delivery-schedule.js';

/** `user-agent` of every delivery. */
export const DELIVERY_USER_AGENT = 'Ferry-Webhooks/1';

/** Why the engine disabled a subscription (`disabled_reason`). */
export const DISABLED_GONE = 'endpoint_gone';
/** A subscription whose deliveries kept failing for `disableAfterMs` (5 days). */
export const DISABLED_FAILING = 'failing_for_too_long';

const iso = (ms: number) => new Date(ms).toISOString();

/** A delivery this engine holds a claim on. */
interface Held {
  row: DeliveryRow;
  token: string;
  /** When the claim was taken or last extended (engine clock). */
  heldSince: number;
}

/** How a flush changes one subscription's failure streak. */
interface StreakChange {
  target: Target;
  /** A success ended a stored streak. */
  success: boolean;
  /** A streak starts, at this failure. */
  failingSince: string | undefined;
  /** It must be disabled: why, and for a long streak, the latest start the stored streak may have. */
  disable: { reason: string; streakCutoff?: string } | undefined;
  /** The streak as stored afterwards (for the cached row). */
  streak: string | null;
}

/** Held deliveries by the claim token they were claimed under. */
function groupByToken(held: readonly Held[]): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const h of held) {
    const ids = groups.get(h.token);
    if (ids) ids.push(h.row.id);
    else groups.set(h.token, [h.row.id]);
  }
  return groups;
}

/** A subscription as the worker needs it, refreshed at every claim. */
interface Target {
  row: WebhookRow;
  /** Undefined when they cannot be decrypted. */
  secrets: SigningSecrets | undefined;
  /** When the row was read (engine clock). */
  readAt: number;
}

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

/** One attempt's result, waiting for the flush that makes it durable. */
interface Recorded {
  held: Held;
  attempt: DeliveryAttemptRow;
  next: AttemptOutcome;
  effect: 'success' | 'failure' | 'gone';
  attemptedAt: number;
  done: () => void;
}

/**
 * Sends due deliveries (contract section 8). Deliveries are claimed from storage with a lease,
 * so engines sharing a Postgres never send the same attempt at once and a crashed engine's
 * claims are taken over at expiry; at most `maxInFlight` are in flight in this engine, and
 * `perSubscription` per subscription, so one slow receiver cannot take every slot.
 *
 * Each attempt's outcome (the attempt row, the delivery's next state, the subscription's failure
 * streak) is committed before the delivery leaves this worker's hands; the request slot is given
 * to the next delivery as soon as the response is in. Outcomes that arrive together are
 * committed together (one statement on Postgres, one transaction on SQLite), so the storage
 * write rate does not cap the send rate. A crash between the send and that commit loses the
 * record, not the delivery: its claim expires and the attempt is made again (at least once;
 * receivers dedupe on `webhook-id`).
 */
export class DeliveryWorker {
  private running = false;
  private inFlight = 0;
  private readonly lanes = new Map<string, Lane>();
  private readonly targets = new Map<string, Target>();
  private recorded: Recorded[] = [];
  private readonly sending = new Set<Promise<void>>();
  private readonly claims: CoalescedPump;
  private readonly flushes: CoalescedPump;
  private wake: { at: number; timer: ClockTimer } | undefined;
  /**
   * The subscriptions whose lanes were full when the last look found nothing else due, or
   * undefined when that look found work. While they stay full, a finished send does not look
   * again: with a backlog of one subscription, finding "nothing else" means scanning past all of
   * it, and doing that per send made the cost of a send grow with the backlog.
   */
  private starvedWith: Set<string> | undefined;
  private flushScheduled = false;
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
    // Flushing goes on while stopping: the outcomes of the last sends must still be recorded.
    this.flushes = new CoalescedPump(() => this.flushRound(), () => true);
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
    await this.flushes.pump();
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
    let now = this.ctx.clock.now();
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
    const result = await this.client.send({ url: target.row.url, method: 'POST', headers, body: row.body, timeoutMs: this.options.timeoutMs });
    const end = this.ctx.clock.now();
    const recorded = this.outcome(held, result, now, end);
    now = end;
    // The request slot is free once the response is in; the claim is held, and the delivery
    // counts as in hand (see claimRound), until the outcome is committed.
    this.unrecorded++;
    this.recorded.push({
      ...recorded,
      done: () => {
        this.unrecorded--;
        if (this.running) this.refill();
      },
    });
    this.scheduleFlush();
  }

  /** What an attempt's result means for the delivery (contract section 8). */
  private outcome(held: Held, result: OutboundResult, startedAt: number, endedAt: number): Omit<Recorded, 'done'> {
    const { row } = held;
    const attempts = row.attempts + 1;
    let status: number | null = null;
    let body: string | null = null;
    let error: string | null = null;
    let retryAfterMs: number | undefined;
    let effect: Recorded['effect'] = 'failure';
    switch (result.kind) {
      case 'response':
        status = result.status;
        body = truncateUtf8(result.body, this.options.responseBodyBytes);
        if (status >= 200 && status < 300) effect = 'success';
        else if (status === 410) {
          effect = 'gone';
          error = 'HTTP 410: the endpoint is gone; the subscription was disabled.';
        } else if (status >= 300 && status < 400) error = `HTTP ${status}: redirects are not followed.`;
        else error = `HTTP ${status}.`;
        if (status === 429 || status === 503) retryAfterMs = parseRetryAfter(result.headers['retry-after'], endedAt);
        break;
      case 'timeout':
        error = `No response within ${this.options.timeoutMs / 1000} s.`;
        break;
      case 'blocked':
        error = `Refused by the outbound policy: ${result.reason}`;
        break;
      case 'network':
        error = `Connection failed (${result.code}).`;
        break;
    }
    // A cycle's T+0 is its first attempt, not the delivery's creation: a backlog (an engine that
    // was down, a burst) must not eat into the receiver's 24 hours.
    const cycleStart = row.attempts === 0 ? startedAt : Date.parse(row.cycle_started_at);
    let state: DeliveryStatus = effect === 'success' ? 'delivered' : 'failed';
    let nextAt: number | null = null;
    if (effect === 'failure') {
      nextAt = nextAttemptAt(cycleStart, attempts, { startedAt, endedAt }, this.options, retryAfterMs);
      if (nextAt !== null) state = 'retrying';
    }
    const next: AttemptOutcome = {
      id: row.id,
      token: held.token,
      status: state,
      attempts,
      cycle_started_at: iso(cycleStart),
      last_attempt_at: iso(startedAt),
      last_response_status: status,
      last_error: error,
      next_attempt_at: nextAt === null ? null : iso(nextAt),
      updated_at: iso(endedAt),
    };
    const attempt: DeliveryAttemptRow = {
      id: this.ctx.ids.create('attempt'),
      delivery_id: row.id,
      workspace_id: row.workspace_id,
      attempted_at: iso(startedAt),
      response_status: status,
      duration_ms: Math.max(0, endedAt - startedAt),
      response_body: body,
      error,
    };
    return { held, attempt, next, effect, attemptedAt: startedAt };
  }

  /**
   * Flushes after the current turn of the event loop, so the outcomes of every response that
   * arrived in it are committed together: under load that is one transaction for many sends
   * instead of one each.
   */
  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      void this.flushes.pump();
    });
  }

  /** Commits every outcome recorded since the last flush in one transaction; true when more came meanwhile. */
  private async flushRound(): Promise<boolean> {
    const batch = this.recorded;
    if (batch.length === 0) return false;
    this.recorded = [];
    const now = this.ctx.clock.now();
    let wakeAt = Infinity;
    try {
      // Atomic on its own (one statement, or one SQLite transaction): the attempts and the
      // deliveries' next states commit together.
      const applied = await this.ctx.storage.repos.deliveries.recordAttempts(batch.map((r) => r.attempt), batch.map((r) => r.next), now);
      for (const r of batch) {
        if (applied.has(r.next.id) && r.next.next_attempt_at) wakeAt = Math.min(wakeAt, Date.parse(r.next.next_attempt_at));
      }
      const changes = this.streakChanges(batch);
      if (changes.length > 0) await this.applyStreaks(changes, now);
    } catch (error) {
      // Unrecorded outcomes are not lost deliveries: their claims expire and they are attempted again.
      this.ctx.logger.warn({ err: error, count: batch.length }, 'webhook delivery: recording attempts failed');
    } finally {
      for (const r of batch) r.done();
    }
    if (wakeAt < Infinity) this.armWake(wakeAt);
    return this.recorded.length > 0;
  }

  /**
   * How the batch changes each subscription's failure streak (`failing_since`): a success clears
   * it, a failure starts it, and once it is `disableAfterMs` old the subscription is to be
   * disabled; a 410 disables it at once. Only the subscriptions whose row must change, judged by
   * the row as last read (at most a second old); the writes themselves are conditional.
   */
  private streakChanges(batch: readonly Recorded[]): StreakChange[] {
    const bySubscription = new Map<string, Recorded[]>();
    for (const r of batch) {
      const list = bySubscription.get(r.held.row.subscription_id);
      if (list) list.push(r);
      else bySubscription.set(r.held.row.subscription_id, [r]);
    }
    const changes: StreakChange[] = [];
    for (const [id, outcomes] of bySubscription) {
      const target = this.targets.get(id);
      if (!target) continue;
      outcomes.sort((a, b) => a.attemptedAt - b.attemptedAt);
      const lastSuccess = outcomes.findLastIndex((r) => r.effect === 'success');
      const failures = outcomes.slice(lastSuccess + 1);
      const cleared = lastSuccess >= 0 && target.row.failing_since !== null;
      // The streak as stored after this batch: cleared by a success in it, or as it was.
      const running = lastSuccess >= 0 ? null : target.row.failing_since;
      const failingSince = failures.length > 0 && running === null ? iso(failures[0]!.attemptedAt) : undefined;
      const streakStart = running ?? failingSince;
      const lastFailure = failures.at(-1);
      let disable: StreakChange['disable'];
      if (failures.some((r) => r.effect === 'gone')) disable = { reason: DISABLED_GONE };
      else if (lastFailure && streakStart !== undefined && lastFailure.attemptedAt - Date.parse(streakStart) >= this.options.disableAfterMs) {
        disable = { reason: DISABLED_FAILING, streakCutoff: iso(lastFailure.attemptedAt - this.options.disableAfterMs) };
      }
      if (cleared || failingSince !== undefined || disable) changes.push({ target, success: cleared, failingSince, disable, streak: streakStart ?? null });
    }
    return changes;
  }

  /**
   * Writes streak changes. A subscription disabled here has its open deliveries ended `failed`
   * (recoverable once fixed): those claimed by nobody at once, those this engine holds here, and
   * those in flight anywhere when they are next claimed.
   */
  private async applyStreaks(changes: readonly StreakChange[], now: number): Promise<void> {
    const disabled: Target[] = [];
    await this.ctx.storage.transaction(async (repos) => {
      for (const change of changes) {
        const { id } = change.target.row;
        const off = await repos.webhooks.recordStreak(id, {
          success: change.success,
          ...(change.failingSince === undefined ? {} : { failingSince: change.failingSince }),
          ...(change.disable ? { disable: { ...change.disable, now: iso(now) } } : {}),
        });
        if (off) {
          await repos.deliveries.failOpen(id, 'The subscription was disabled.', iso(now));
          for (const [token, ids] of groupByToken(this.lanes.get(id)?.waiting ?? [])) await repos.deliveries.failHeld(ids, token, 'The subscription was disabled.', iso(now));
          disabled.push(change.target);
        }
      }
    });
    for (const change of changes) change.target.row = { ...change.target.row, failing_since: change.streak };
    for (const target of disabled) {
      this.ctx.logger.warn({ webhook_id: target.row.id, workspace_id: target.row.workspace_id }, 'webhook subscription disabled');
      this.lanes.get(target.row.id)?.waiting.splice(0);
      this.targets.delete(target.row.id);
    }
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

/**
 * At most `bytes` bytes of `text` in UTF-8, never splitting a character, with NUL characters
 * replaced: a receiver may answer anything, and Postgres text refuses NUL (one such body would
 * fail the whole batch of outcomes it is recorded with).
 */
function truncateUtf8(text: string, bytes: number): string {
  const buffer = Buffer.from(text, 'utf8');
  const cut = buffer.length <= bytes ? text : buffer.subarray(0, bytes).toString('utf8').replace(/\uFFFD$/, '');
  return cut.replaceAll('\u0000', '\uFFFD');
}

import type { EngineContext } from '../context/index.js';
import { CoalescedPump } from '../queue/index.js';
import type { DeliveryOptions } from './delivery-options.js';
import type { AttemptVerdict } from './delivery-outcome.js';
import type { Held, Target } from './held-delivery.js';

/** Why the engine disabled a subscription (`disabled_reason`). */
export const DISABLED_GONE = 'endpoint_gone';
/** A subscription whose deliveries kept failing for `disableAfterMs` (5 days). */
export const DISABLED_FAILING = 'failing_for_too_long';

const iso = (ms: number) => new Date(ms).toISOString();

/** One attempt's result, waiting for the flush that makes it durable. */
export interface Completed extends AttemptVerdict {
  held: Held;
  attemptedAt: number;
  /** Called once the outcome is committed, or its commit failed (the claim then expires). */
  done: () => void;
}

/** What the completer needs from the worker that claims and sends. */
export interface CompleterHost {
  /** The subscriptions as last read, by id. */
  readonly targets: Map<string, Target>;
  /** The deliveries of a subscription this engine holds and has not started. */
  waiting(subscriptionId: string): readonly Held[];
  /** A subscription was disabled: its waiting deliveries were ended; forget them and it. */
  disabled(subscriptionId: string): void;
  /** Look for due deliveries at `at` (a retry just scheduled). */
  armWake(at: number): void;
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

/**
 * Records the outcomes of attempts (docs/api.md, Webhook delivery): each attempt's row, the delivery's next
 * state, and the subscription's failure streak, committed before the delivery leaves the
 * engine's hands. Outcomes that arrive together are committed together (one statement on
 * Postgres, one transaction on SQLite), so the storage write rate does not cap the send rate. A
 * crash before the commit loses the record, not the delivery: its claim expires and the attempt
 * is made again (at least once; receivers dedupe on `webhook-id`).
 */
export class DeliveryCompleter {
  private recorded: Completed[] = [];
  private flushScheduled = false;
  private readonly flushes: CoalescedPump;

  constructor(
    private readonly ctx: EngineContext,
    private readonly options: Pick<DeliveryOptions, 'disableAfterMs'>,
    private readonly host: CompleterHost,
  ) {
    // Flushing goes on while stopping: the outcomes of the last sends must still be recorded.
    this.flushes = new CoalescedPump(() => this.flushRound(), () => true);
  }

  /** Queues an attempt's outcome for the next flush. */
  add(completed: Completed): void {
    this.recorded.push(completed);
    this.scheduleFlush();
  }

  /** Commits every outcome queued so far; resolves once they are recorded (or their commit failed). */
  flush(): Promise<void> {
    return this.flushes.pump();
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
    if (wakeAt < Infinity) this.host.armWake(wakeAt);
    return this.recorded.length > 0;
  }

  /**
   * How the batch changes each subscription's failure streak (`failing_since`): a success clears
   * it, a failure starts it, and once it is `disableAfterMs` old the subscription is to be
   * disabled; a 410 disables it at once. Only the subscriptions whose row must change, judged by
   * the row as last read (at most a second old); the writes themselves are conditional.
   */
  private streakChanges(batch: readonly Completed[]): StreakChange[] {
    const bySubscription = new Map<string, Completed[]>();
    for (const r of batch) {
      const list = bySubscription.get(r.held.row.subscription_id);
      if (list) list.push(r);
      else bySubscription.set(r.held.row.subscription_id, [r]);
    }
    const changes: StreakChange[] = [];
    for (const [id, outcomes] of bySubscription) {
      const target = this.host.targets.get(id);
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
          for (const [token, ids] of groupByToken(this.host.waiting(id))) await repos.deliveries.failHeld(ids, token, 'The subscription was disabled.', iso(now));
          disabled.push(change.target);
        }
      }
    });
    for (const change of changes) change.target.row = { ...change.target.row, failing_since: change.streak };
    for (const target of disabled) {
      this.ctx.logger.warn({ webhook_id: target.row.id, workspace_id: target.row.workspace_id }, 'webhook subscription disabled');
      this.host.disabled(target.row.id);
    }
  }
}

import type { Clock, ClockTimer } from '@ferry/core';

/** 2026-01-01T00:00:00.000Z: a fixed, readable default so test output is reproducible. */
const DEFAULT_START_MS = Date.parse('2026-01-01T00:00:00.000Z');

/** Options of a {@link VirtualClock}; every field has a default suited to unit tests. */
export interface VirtualClockOptions {
  /**
   * How many event-loop turns (`setImmediate` hops) the clock yields before the first timer of
   * an advance and after every timer it fires. Default 10. Raise it when the code under test
   * hops through more than a few macrotasks before it schedules its next timer.
   */
  settleTurns?: number;
  /**
   * Real milliseconds to wait (one real `setTimeout`) in every settle, after the first batch of
   * turns and followed by a second batch. Default 0 (no real waiting, so advancing through
   * thousands of timers stays fast). Set it to a few ms when timer callbacks do real I/O
   * (a loopback database query, a socket round trip) before scheduling their next timer.
   */
  settleRealMs?: number;
  /**
   * Upper bound on timers fired by one `advance`/`advanceTo`/`runUntilIdle` call. A timer that
   * keeps rescheduling itself with a 0 ms delay never lets virtual time move, so without this
   * bound the call would spin forever; past it the call throws. Default 100 000.
   */
  maxTimersPerCall?: number;
}

/** One queued timer. `seq` breaks ties between equal due times: first scheduled, first fired. */
interface VirtualTimer {
  readonly due: number;
  readonly seq: number;
  readonly fn: () => void;
}

/**
 * A {@link Clock} whose time only moves when the test says so.
 *
 * Timers are kept in a queue ordered by due time, then by scheduling order (the same order Node
 * fires real timers with equal delays). {@link VirtualClock.advance} walks time forward timer by
 * timer: when a timer fires, {@link VirtualClock.now} reads exactly that timer's due time, and
 * timers scheduled while advancing fire in the same call if they fall inside the window.
 *
 * **Settling guarantee.** Before the first timer of an advance and after every timer it fires,
 * the clock yields to the event loop with `settleTurns` `setImmediate` hops (default 10), then,
 * only if `settleRealMs` > 0, waits that long in real time and hops `settleTurns` times again.
 * Consequently, before virtual time moves on:
 * - every microtask chain started by the callback runs to completion, however long (`await` of
 *   resolved promises, `.then` chains, `queueMicrotask`, `process.nextTick`): microtasks drain
 *   completely before the first hop finishes;
 * - work that additionally passes through up to `settleTurns - 1` macrotask hops
 *   (`setImmediate`, an already-delivered I/O callback) also completes;
 * - real I/O that has not completed yet (a database reply, a file read on the thread pool) is
 *   **not** waited for unless `settleRealMs` is set, and then only for that long.
 * Real timers (`globalThis.setTimeout`) are never faked or waited for by this clock.
 *
 * Call `advance` from one place at a time: a second call while one is running throws, since
 * interleaved walks would fire timers out of order.
 *
 * @example
 * ```ts
 * const clock = new VirtualClock();
 * const done = sleep(clock, 60_000);
 * await clock.advance(60_000); // resolves `done` without waiting a real minute
 * ```
 */
export class VirtualClock implements Clock {
  #now: number;
  /** Sorted by (due, seq); kept sorted on insert so the next timer is always at index 0. */
  readonly #queue: VirtualTimer[] = [];
  #seq = 0;
  #busy = false;
  readonly #settleTurns: number;
  readonly #settleRealMs: number;
  readonly #maxTimersPerCall: number;

  /**
   * @param startMs - Initial time in UTC milliseconds; defaults to 2026-01-01T00:00:00.000Z.
   * @param options - Settling and safety bounds, see {@link VirtualClockOptions}.
   */
  constructor(startMs: number = DEFAULT_START_MS, options: VirtualClockOptions = {}) {
    assertFiniteTime(startMs, 'startMs');
    this.#now = startMs;
    this.#settleTurns = Math.max(1, Math.floor(options.settleTurns ?? 10));
    this.#settleRealMs = Math.max(0, options.settleRealMs ?? 0);
    this.#maxTimersPerCall = Math.max(1, Math.floor(options.maxTimersPerCall ?? 100_000));
  }

  /** Current virtual time in UTC milliseconds since the epoch. */
  now(): number {
    return this.#now;
  }

  /**
   * Schedules `fn` to run when virtual time reaches `now() + ms`. Negative or NaN delays count
   * as 0 (the timer fires on the next advance, even `advance(0)`); an infinite delay never
   * fires. Unlike Node, a 0 ms delay is not rounded up to 1 ms, so `advance(0)` runs it.
   */
  setTimeout(fn: () => void, ms: number): ClockTimer {
    const delay = Number.isNaN(ms) ? 0 : Math.max(0, ms);
    const timer: VirtualTimer = { due: this.#now + delay, seq: this.#seq++, fn };
    this.#queue.splice(this.#insertionIndex(timer), 0, timer);
    return {
      cancel: () => {
        // Removing (rather than flagging) keeps pendingTimers() exact; after firing the timer is
        // no longer queued and cancel is a no-op, as the Clock contract requires.
        const index = this.#queue.indexOf(timer);
        if (index !== -1) this.#queue.splice(index, 1);
      },
    };
  }

  /** Number of timers scheduled and neither fired nor cancelled. */
  pendingTimers(): number {
    return this.#queue.length;
  }

  /**
   * Moves time forward by `ms`, firing every timer due within the window in order (see the
   * class documentation for what settles between timers). Ends with `now()` equal to the start
   * time plus `ms`. If a timer callback throws, the returned promise rejects with that error;
   * time stays at that timer's due time and later timers stay queued.
   */
  async advance(ms: number): Promise<void> {
    if (!(ms >= 0) || !Number.isFinite(ms)) {
      throw new RangeError(`VirtualClock.advance(ms) needs a finite ms >= 0, got ${ms}`);
    }
    await this.advanceTo(this.#now + ms);
  }

  /**
   * Moves time forward to the absolute time `ms` (UTC milliseconds), firing due timers like
   * {@link VirtualClock.advance}. Throws a RangeError if `ms` is earlier than `now()`.
   */
  async advanceTo(ms: number): Promise<void> {
    assertFiniteTime(ms, 'ms');
    if (ms < this.#now) {
      throw new RangeError(
        `VirtualClock.advanceTo(${new Date(ms).toISOString()}) is in the past (now ${new Date(this.#now).toISOString()}); time only moves forward`,
      );
    }
    await this.#exclusive(async () => {
      await this.#fireDueTimers(ms);
      this.#now = ms;
    });
  }

  /**
   * Fires timers until none is pending, including ones scheduled along the way, moving time to
   * each timer's due time; `now()` ends at the last fired timer's due time (or unchanged if none
   * was pending). Resolves with the number of timers fired.
   *
   * Bounded so a self-rescheduling (periodic) timer cannot spin forever: it never moves time
   * more than `maxMs` past the start (default 24 hours), and throws if timers are still pending
   * when that horizon is reached. Use {@link VirtualClock.advance} for periodic work.
   */
  async runUntilIdle(maxMs: number = 24 * 60 * 60 * 1000): Promise<number> {
    if (!(maxMs >= 0)) {
      throw new RangeError(`VirtualClock.runUntilIdle(maxMs) needs maxMs >= 0, got ${maxMs}`);
    }
    return this.#exclusive(async () => {
      const horizon = this.#now + maxMs;
      const fired = await this.#fireDueTimers(horizon);
      if (this.#queue.length > 0) {
        throw new Error(
          `VirtualClock.runUntilIdle: ${this.#queue.length} timer(s) still pending after ${maxMs} ms of virtual time ` +
            `(${fired} fired); something keeps rescheduling. Use advance() for periodic work or raise maxMs.`,
        );
      }
      return fired;
    });
  }

  /**
   * Jumps to the absolute time `ms` without firing anything, e.g. to simulate a process that
   * was asleep. Timers that became overdue stay queued and fire, in order and at the then
   * current time, on the next advance. Setting the current time again is a no-op; an earlier
   * time throws a RangeError, because code under test may rely on time being monotonic.
   */
  set(ms: number): void {
    assertFiniteTime(ms, 'ms');
    if (this.#busy) throw new Error('VirtualClock.set() called while the clock is advancing');
    if (ms < this.#now) {
      throw new RangeError(
        `VirtualClock.set(${new Date(ms).toISOString()}) would move time backwards (now ${new Date(this.#now).toISOString()})`,
      );
    }
    this.#now = ms;
  }

  /**
   * Yields to the event loop exactly as the clock does between timers (see the class
   * documentation), without moving time. Useful after starting async work that should reach
   * its first `setTimeout` before the test inspects {@link VirtualClock.pendingTimers}.
   */
  async settle(): Promise<void> {
    await yieldTurns(this.#settleTurns);
    if (this.#settleRealMs > 0) {
      await new Promise<void>((resolve) => globalThis.setTimeout(resolve, this.#settleRealMs));
      await yieldTurns(this.#settleTurns);
    }
  }

  /** The shared walk: fires timers due at or before `limit`, in order, settling around each. */
  async #fireDueTimers(limit: number): Promise<number> {
    let fired = 0;
    // Settle first: work the test started just before advancing (an un-awaited start()) gets a
    // chance to schedule its timers, so they are part of this window.
    await this.settle();
    for (;;) {
      const next = this.#queue[0];
      if (next === undefined || next.due > limit) return fired;
      if (fired >= this.#maxTimersPerCall) {
        throw new Error(
          `VirtualClock fired ${fired} timers in one call without leaving the window; ` +
            'a timer probably reschedules itself with a 0 ms delay (raise maxTimersPerCall if this is intended)',
        );
      }
      this.#queue.shift();
      // Overdue timers (after set()) fire at the current time: time never goes backwards.
      this.#now = Math.max(this.#now, next.due);
      fired++;
      next.fn();
      await this.settle();
    }
  }

  /** Runs `work` as the only walk in progress; concurrent walks would interleave timers. */
  async #exclusive<T>(work: () => Promise<T>): Promise<T> {
    if (this.#busy) {
      throw new Error(
        'VirtualClock is already advancing: await the previous advance()/advanceTo()/runUntilIdle() ' +
          'before starting another, and do not advance from inside a timer callback',
      );
    }
    this.#busy = true;
    try {
      return await work();
    } finally {
      this.#busy = false;
    }
  }

  /** Binary search for the first queued timer that should fire after `timer`. */
  #insertionIndex(timer: VirtualTimer): number {
    let low = 0;
    let high = this.#queue.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      const other = this.#queue[mid]!;
      if (other.due < timer.due || (other.due === timer.due && other.seq < timer.seq)) low = mid + 1;
      else high = mid;
    }
    return low;
  }
}

/** One macrotask hop per turn: microtasks and nextTicks queued so far all run before it ends. */
async function yieldTurns(turns: number): Promise<void> {
  for (let i = 0; i < turns; i++) {
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

function assertFiniteTime(ms: number, name: string): void {
  if (!Number.isFinite(ms)) {
    throw new RangeError(`VirtualClock: ${name} must be a finite number of milliseconds, got ${ms}`);
  }
}

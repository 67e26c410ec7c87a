import type { Clock, ClockTimer } from '@ferry/core';

/**
 * A clock for the plugin's tests whose time stands still until `advance` (a plugin may import
 * only `@ferry/core`, so not the VirtualClock of `@ferry/testing`). Timers fire in due order;
 * the event loop settles around each so the code under test sees their effects.
 */
export class TestClock implements Clock {
  #now: number;
  #timers: Array<{ due: number; fn: () => void }> = [];

  constructor(startMs = 1_760_000_000_000) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): ClockTimer {
    const timer = { due: this.#now + Math.max(0, ms), fn };
    this.#timers.push(timer);
    return { cancel: () => void (this.#timers = this.#timers.filter((t) => t !== timer)) };
  }

  /** Timers scheduled and neither fired nor cancelled. */
  pending(): number {
    return this.#timers.length;
  }

  /** Moves time forward by `ms`, firing the timers due by then. */
  async advance(ms: number): Promise<void> {
    await settle();
    this.#now += ms;
    const due = this.#timers.filter((t) => t.due <= this.#now).sort((a, b) => a.due - b.due);
    this.#timers = this.#timers.filter((t) => t.due > this.#now);
    for (const timer of due) {
      timer.fn();
      await settle();
    }
  }
}

/** A few event-loop turns: promise chains and already-delivered I/O callbacks run to completion. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

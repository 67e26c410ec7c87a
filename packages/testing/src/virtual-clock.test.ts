import { sleep } from '@ferry/core';
import { describe, expect, it } from 'vitest';
import { VirtualClock } from './virtual-clock.js';

const START = Date.parse('2026-01-01T00:00:00.000Z');

/** One real macrotask hop, the kind of step async code takes between awaits. */
const hop = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('VirtualClock', () => {
  it('starts at 2026-01-01T00:00:00.000Z by default, or at the given time', () => {
    expect(new VirtualClock().now()).toBe(START);
    expect(new VirtualClock(1_000).now()).toBe(1_000);
  });

  it('fires timers by due time, then by scheduling order, each at its own due time', async () => {
    const clock = new VirtualClock();
    const fired: Array<[string, number]> = [];
    const record = (name: string) => () => fired.push([name, clock.now() - START]);
    clock.setTimeout(record('c@30'), 30);
    clock.setTimeout(record('a@10'), 10);
    clock.setTimeout(record('b1@20'), 20);
    clock.setTimeout(record('b2@20'), 20);
    clock.setTimeout(record('b3@20'), 20);
    clock.setTimeout(record('z@0'), 0);

    await clock.advance(100);

    expect(fired).toEqual([
      ['z@0', 0],
      ['a@10', 10],
      ['b1@20', 20],
      ['b2@20', 20],
      ['b3@20', 20],
      ['c@30', 30],
    ]);
    expect(clock.now()).toBe(START + 100);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('does not fire timers beyond the window, and fires them once the window reaches them', async () => {
    const clock = new VirtualClock();
    let fired = 0;
    clock.setTimeout(() => fired++, 1_000);

    await clock.advance(999);
    expect(fired).toBe(0);
    expect(clock.now()).toBe(START + 999);
    expect(clock.pendingTimers()).toBe(1);

    await clock.advance(1);
    expect(fired).toBe(1);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('runs a 0 ms timer on advance(0) and treats negative or NaN delays as 0', async () => {
    const clock = new VirtualClock();
    const fired: string[] = [];
    clock.setTimeout(() => fired.push('zero'), 0);
    clock.setTimeout(() => fired.push('negative'), -5);
    clock.setTimeout(() => fired.push('nan'), Number.NaN);
    await clock.advance(0);
    expect(fired).toEqual(['zero', 'negative', 'nan']);
    expect(clock.now()).toBe(START);
  });

  it('cancels timers: a cancelled timer never fires, cancel after firing is harmless', async () => {
    const clock = new VirtualClock();
    const fired: string[] = [];
    const keep = clock.setTimeout(() => fired.push('keep'), 10);
    const drop = clock.setTimeout(() => fired.push('drop'), 10);
    expect(clock.pendingTimers()).toBe(2);

    drop.cancel();
    drop.cancel();
    expect(clock.pendingTimers()).toBe(1);

    await clock.advance(20);
    expect(fired).toEqual(['keep']);
    keep.cancel();
    expect(clock.pendingTimers()).toBe(0);
  });

  it('lets a timer cancel a later timer that is due in the same window', async () => {
    const clock = new VirtualClock();
    const fired: string[] = [];
    const later = clock.setTimeout(() => fired.push('later'), 20);
    clock.setTimeout(() => {
      fired.push('first');
      later.cancel();
    }, 10);
    await clock.advance(100);
    expect(fired).toEqual(['first']);
  });

  it('fires timers scheduled during an advance when they fall inside the window, not otherwise', async () => {
    const clock = new VirtualClock();
    const fired: Array<[string, number]> = [];
    clock.setTimeout(() => {
      fired.push(['outer', clock.now() - START]);
      clock.setTimeout(() => fired.push(['inner-inside', clock.now() - START]), 50);
      clock.setTimeout(() => fired.push(['inner-outside', clock.now() - START]), 200);
      // Same due time as an already queued timer: runs after it (scheduled later).
      clock.setTimeout(() => fired.push(['inner-tie', clock.now() - START]), 100);
    }, 100);
    clock.setTimeout(() => fired.push(['queued@200', clock.now() - START]), 200);

    await clock.advance(200);
    expect(fired).toEqual([
      ['outer', 100],
      ['inner-inside', 150],
      ['queued@200', 200],
      ['inner-tie', 200],
    ]);
    expect(clock.pendingTimers()).toBe(1);

    await clock.advance(100);
    expect(fired.at(-1)).toEqual(['inner-outside', 300]);
  });

  it('settles an async chain (timer -> awaits -> next timer) within one advance', async () => {
    const clock = new VirtualClock();
    const ticks: number[] = [];
    const loop = async () => {
      for (let i = 0; i < 5; i++) {
        await sleep(clock, 10);
        // Typical async work between timers: resolved promises, nextTick and macrotask hops.
        await Promise.resolve();
        await new Promise<void>((resolve) => process.nextTick(resolve));
        await hop();
        await hop();
        ticks.push(clock.now() - START);
      }
    };
    const done = loop();

    await clock.advance(50);
    expect(ticks).toEqual([10, 20, 30, 40, 50]);
    await done;
  });

  it('picks up timers from work started just before advancing', async () => {
    const clock = new VirtualClock();
    let fired = false;
    // Not awaited: the timer is scheduled only after a hop, i.e. after advance() was called.
    void hop().then(() => clock.setTimeout(() => (fired = true), 5));
    await clock.advance(5);
    expect(fired).toBe(true);
  });

  it('waits settleRealMs of real time between timers, so real I/O can schedule the next timer', async () => {
    const clock = new VirtualClock(START, { settleRealMs: 100 });
    const ticks: number[] = [];
    const loop = async () => {
      for (let i = 0; i < 3; i++) {
        await sleep(clock, 1_000);
        // Real 1 ms wait standing in for I/O; created before the clock's 100 ms real wait, so
        // Node fires it first regardless of machine load.
        await new Promise<void>((resolve) => globalThis.setTimeout(resolve, 1));
        ticks.push(clock.now() - START);
      }
    };
    const done = loop();
    await clock.advance(3_000);
    expect(ticks).toEqual([1_000, 2_000, 3_000]);
    await done;
  });

  it('advanceTo moves to an absolute time and refuses the past', async () => {
    const clock = new VirtualClock();
    const at: number[] = [];
    clock.setTimeout(() => at.push(clock.now()), 60_000);
    await clock.advanceTo(START + 120_000);
    expect(at).toEqual([START + 60_000]);
    expect(clock.now()).toBe(START + 120_000);
    await expect(clock.advanceTo(START)).rejects.toThrow(RangeError);
    await expect(clock.advance(-1)).rejects.toThrow(RangeError);
    expect(clock.now()).toBe(START + 120_000);
  });

  it('set() jumps forward without firing; overdue timers fire on the next advance at the current time', async () => {
    const clock = new VirtualClock();
    const at: number[] = [];
    clock.setTimeout(() => at.push(clock.now() - START), 10);
    clock.setTimeout(() => at.push(clock.now() - START), 20);

    clock.set(START + 1_000);
    expect(at).toEqual([]);
    expect(clock.now()).toBe(START + 1_000);
    expect(() => clock.set(START + 999)).toThrow(RangeError);
    clock.set(START + 1_000); // same time: allowed no-op

    await clock.advance(0);
    expect(at).toEqual([1_000, 1_000]);
  });

  it('runUntilIdle fires everything, including newly scheduled timers, and stops at the last one', async () => {
    const clock = new VirtualClock();
    const at: number[] = [];
    clock.setTimeout(() => {
      at.push(clock.now() - START);
      clock.setTimeout(() => at.push(clock.now() - START), 5_000);
    }, 1_000);
    clock.setTimeout(() => at.push(clock.now() - START), 3_000);

    await expect(clock.runUntilIdle()).resolves.toBe(3);
    expect(at).toEqual([1_000, 3_000, 6_000]);
    expect(clock.now()).toBe(START + 6_000);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('runUntilIdle is bounded: a periodic timer makes it throw instead of spinning', async () => {
    const clock = new VirtualClock();
    let runs = 0;
    const tick = () => {
      runs++;
      clock.setTimeout(tick, 1_000);
    };
    clock.setTimeout(tick, 1_000);
    await expect(clock.runUntilIdle(10_000)).rejects.toThrow(/still pending/);
    expect(runs).toBe(10);
    expect(clock.now()).toBe(START + 10_000);
  });

  it('throws instead of spinning when a timer reschedules itself with 0 ms', async () => {
    const clock = new VirtualClock(START, { maxTimersPerCall: 50, settleTurns: 1 });
    const spin = () => void clock.setTimeout(spin, 0);
    clock.setTimeout(spin, 0);
    await expect(clock.advance(1)).rejects.toThrow(/0 ms delay/);
  });

  it('rejects advance with the error a timer throws and keeps later timers queued', async () => {
    const clock = new VirtualClock();
    const fired: string[] = [];
    clock.setTimeout(() => {
      throw new Error('boom');
    }, 10);
    clock.setTimeout(() => fired.push('later'), 20);

    await expect(clock.advance(100)).rejects.toThrow('boom');
    expect(clock.now()).toBe(START + 10);
    expect(fired).toEqual([]);
    expect(clock.pendingTimers()).toBe(1);

    // The clock is usable again afterwards.
    await clock.advance(100);
    expect(fired).toEqual(['later']);
  });

  it('refuses a second advance while one is running', async () => {
    const clock = new VirtualClock();
    clock.setTimeout(() => {}, 10);
    const first = clock.advance(100);
    await expect(clock.advance(1)).rejects.toThrow(/already advancing/);
    expect(() => clock.set(START + 5_000)).toThrow(/advancing/);
    await first;
    expect(clock.now()).toBe(START + 100);
  });
});

describe('sleep() from @ferry/core on a VirtualClock', () => {
  it('resolves when the clock advances past the delay, not before', async () => {
    const clock = new VirtualClock();
    let resolved = false;
    const slept = sleep(clock, 60_000).then(() => (resolved = true));

    await clock.advance(59_999);
    expect(resolved).toBe(false);
    await clock.advance(1);
    expect(resolved).toBe(true);
    await slept;
  });

  it('rejects with the abort reason and cancels its timer', async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const slept = sleep(clock, 60_000, controller.signal);
    expect(clock.pendingTimers()).toBe(1);

    const reason = new Error('shutting down');
    controller.abort(reason);
    await expect(slept).rejects.toBe(reason);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('rejects at once when the signal is already aborted', async () => {
    const clock = new VirtualClock();
    const reason = new Error('already stopped');
    await expect(sleep(clock, 1_000, AbortSignal.abort(reason))).rejects.toBe(reason);
    expect(clock.pendingTimers()).toBe(0);
  });
});

import { afterEach, describe, expect, it, vi } from 'vitest';
import { guardedClock, MAX_TIMER_DELAY_MS, systemClock } from './clock.js';

const DAY = 24 * 60 * 60 * 1000;

describe('systemClock', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  // Fake timers follow Node's rule for delays above 2^31-1 ms (run after 1 ms instead), so they
  // show what a single Node timer would do with a monthly schedule's delay.
  it('waits a delay longer than a Node timer can hold in full, in steps', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const fired = vi.fn();
    systemClock.setTimeout(fired, 40 * DAY);
    vi.advanceTimersByTime(1000);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(MAX_TIMER_DELAY_MS);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(40 * DAY - MAX_TIMER_DELAY_MS - 1001);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(fired).toHaveBeenCalledTimes(1);
  });

  it('cancels a long timer between its steps, and never fires an infinite one', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const fired = vi.fn();
    const timer = systemClock.setTimeout(fired, 60 * DAY);
    vi.advanceTimersByTime(30 * DAY);
    timer.cancel();
    systemClock.setTimeout(fired, Infinity);
    vi.advanceTimersByTime(400 * DAY);
    expect(fired).not.toHaveBeenCalled();
  });

  // The same on Node's own timers: a 1 ms timer always runs before a 20 ms one, so if the long
  // delay were cut short its callback would run before the reference timer's.
  it('does not fire a 25-day timer early on real timers', async () => {
    const fired = vi.fn();
    const timer = systemClock.setTimeout(fired, MAX_TIMER_DELAY_MS + 10_000);
    await new Promise<void>((resolve) => systemClock.setTimeout(resolve, 20));
    expect(fired).not.toHaveBeenCalled();
    timer.cancel();
  });
});

describe('guardedClock', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('hands an error thrown by a timer callback to onError instead of the timer', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const errors: unknown[] = [];
    const clock = guardedClock(systemClock, (e) => errors.push(e));
    clock.setTimeout(() => {
      throw new Error('boom');
    }, 10);
    expect(() => vi.advanceTimersByTime(10)).not.toThrow();
    expect(errors).toEqual([new Error('boom')]);
  });

  it('catches the rejection of an async callback', async () => {
    const errors: unknown[] = [];
    const clock = guardedClock(systemClock, (e) => errors.push(e));
    await new Promise<void>((resolve) => {
      clock.setTimeout((async () => {
        resolve();
        throw new Error('later');
      }) as () => void, 0);
    });
    await Promise.resolve();
    expect(errors).toEqual([new Error('later')]);
  });

  it('tells the time of the clock it guards', () => {
    const clock = guardedClock({ now: () => 42, setTimeout: systemClock.setTimeout }, () => undefined);
    expect(clock.now()).toBe(42);
  });
});

import { describe, expect, it } from 'vitest';
import { DEFAULT_DELIVERY_OPTIONS, resolveDeliveryOptions } from './delivery-options.js';
import { nextAttemptAt, parseRetryAfter } from './delivery-schedule.js';

const S = 1000;
const H = 3_600_000;
const T = Date.UTC(2026, 0, 1);
const options = DEFAULT_DELIVERY_OPTIONS;
/** An attempt that took no time. */
const at = (ms: number) => ({ startedAt: ms, endedAt: ms });
const offsets = [0, 5 * S, 300 * S, 1800 * S, 2 * H, 5 * H, 10 * H, 24 * H];

/** Walks a whole cycle of failures, each attempt made exactly when due. */
function walk(random: () => number): number[] {
  const times = [T];
  for (;;) {
    const next = nextAttemptAt(T, times.length, at(times.at(-1)!), options, undefined, random);
    if (next === null) return times;
    times.push(next);
  }
}

describe('nextAttemptAt', () => {
  it('follows the documented schedule: 8 attempts, each within +/-10 % of its offset, the last at 24 h', () => {
    for (const r of [0, 0.5, 0.999999]) {
      const times = walk(() => r);
      expect(times).toHaveLength(8);
      times.forEach((t, i) => {
        const offset = offsets[i]!;
        if (i === 7) expect(t).toBe(T + 24 * H);
        else {
          expect(t - T).toBeGreaterThanOrEqual(Math.floor(offset * 0.9));
          expect(t - T).toBeLessThanOrEqual(Math.ceil(offset * 1.1));
        }
      });
    }
    expect(walk(() => 0.5).map((t) => t - T)).toEqual(offsets);
  });

  it('ends the cycle after the attempt at the window end, or any attempt after it', () => {
    expect(nextAttemptAt(T, 8, at(T + 24 * H), options)).toBeNull();
    expect(nextAttemptAt(T, 3, at(T + 30 * H), options)).toBeNull();
  });

  it('skips slots that passed while the engine was away instead of bursting', () => {
    // The 5 s attempt happened 3 h late: the next is the 5 h slot, not 5 min, 30 min and 2 h at once.
    expect(nextAttemptAt(T, 2, at(T + 3 * H), options, undefined, () => 0.5)).toBe(T + 5 * H);
  });

  it('honours Retry-After, but never past the window', () => {
    expect(nextAttemptAt(T, 1, at(T), options, 120 * S, () => 0.5)).toBe(T + 120 * S);
    // A shorter Retry-After does not pull the schedule in.
    expect(nextAttemptAt(T, 1, at(T), options, 1 * S, () => 0.5)).toBe(T + 5 * S);
    expect(nextAttemptAt(T, 7, at(T + 20 * H), options, 10 * H, () => 0.5)).toBe(T + 24 * H);
  });

  it('never schedules before the attempt it follows', () => {
    // The second attempt, pushed to 299 s by a Retry-After: the 5 min slot's low jitter (270 s) is behind it.
    const next = nextAttemptAt(T, 2, at(T + 299 * S), options, undefined, () => 0)!;
    expect(next).toBe(T + 299 * S);
    // An attempt made early by jitter (4.5 s) is followed by the next slot, not by its own again.
    expect(nextAttemptAt(T, 2, at(T + 4500), options, undefined, () => 0.5)).toBe(T + 300 * S);
  });

  it('waits for the attempt to end: one that timed out is retried no sooner', () => {
    // Began at T, timed out at T+15 s: the 5 s slot is behind it, so the retry follows at once.
    expect(nextAttemptAt(T, 1, { startedAt: T, endedAt: T + 15 * S }, options, undefined, () => 0.5)).toBe(T + 15 * S);
    // Retry-After counts from the response.
    expect(nextAttemptAt(T, 1, { startedAt: T, endedAt: T + 15 * S }, options, 60 * S, () => 0.5)).toBe(T + 75 * S);
  });

  it('takes a configured schedule', () => {
    const short = resolveDeliveryOptions({ scheduleMs: [0, 1000, 2000], jitter: 0 });
    expect(nextAttemptAt(T, 1, at(T), short)).toBe(T + 1000);
    expect(nextAttemptAt(T, 2, at(T + 1000), short)).toBe(T + 2000);
    expect(nextAttemptAt(T, 3, at(T + 2000), short)).toBeNull();
    expect(() => resolveDeliveryOptions({ scheduleMs: [5, 10] })).toThrow(/webhookDelivery/);
    expect(() => resolveDeliveryOptions({ scheduleMs: [0, 10, 10] })).toThrow(/webhookDelivery/);
    expect(() => resolveDeliveryOptions({ leaseTtlMs: 1000, timeoutMs: 2000 })).toThrow(/webhookDelivery/);
    expect(() => resolveDeliveryOptions({ leaseTtlMs: 30_000, timeoutMs: 15_000 })).toThrow(/twice/);
    for (const bad of [{ perSubscription: 0 }, { maxInFlight: -1 }, { pollIntervalMs: 0 }, { timeoutMs: 1.5 }, { responseBodyBytes: -1 }]) {
      expect(() => resolveDeliveryOptions(bad)).toThrow(/webhookDelivery/);
    }
  });
});

describe('parseRetryAfter', () => {
  it('reads delay-seconds and HTTP dates', () => {
    expect(parseRetryAfter('120', T)).toBe(120_000);
    expect(parseRetryAfter(' 0 ', T)).toBe(0);
    expect(parseRetryAfter(new Date(T + 90_000).toUTCString(), T)).toBe(90_000);
    expect(parseRetryAfter(new Date(T - 90_000).toUTCString(), T)).toBe(0);
  });

  it('ignores what it cannot read', () => {
    for (const v of [undefined, '', '-5', '1.5', 'soon', '2026-01-01', '99999999999']) expect(parseRetryAfter(v, T)).toBeUndefined();
  });
});

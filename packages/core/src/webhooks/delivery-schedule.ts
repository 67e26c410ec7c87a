import type { DeliveryOptions } from './delivery-options.js';

/**
 * When the next attempt of a delivery is due, given the start of its retry cycle, how many
 * attempts the cycle has made and when the last one began and ended; null when the cycle is over
 * (the delivery is `failed`).
 *
 * The schedule's offsets count from the cycle's first attempt (docs/api.md, Webhook delivery: T+0, 5 s ...
 * 24 h). The next attempt is the first slot still ahead, so an attempt made late (the engine was
 * down, a Retry-After pushed it) is followed by the next slot, never by a burst of missed ones.
 * Each slot gets +/-`jitter` of its offset, so receivers that failed together are not hit
 * together again; the last slot gets none, because it is the window's end and jitter could only
 * move it earlier, taking time from a receiver that is recovering. A `Retry-After` (429/503)
 * delays the attempt to at least that time, but never past the window's end.
 *
 * @param random - a number in [0, 1) (tests pass a fixed one).
 */
export function nextAttemptAt(
  cycleStartMs: number,
  attemptsMade: number,
  attempt: { startedAt: number; endedAt: number },
  options: Pick<DeliveryOptions, 'scheduleMs' | 'jitter'>,
  retryAfterMs?: number,
  random: () => number = Math.random,
): number | null {
  const offsets = options.scheduleMs;
  const last = offsets.length - 1;
  const windowEnd = cycleStartMs + offsets[last]!;
  const elapsed = attempt.startedAt - cycleStartMs;
  const slot = offsets.findIndex((offset, i) => i >= Math.max(1, attemptsMade) && offset > elapsed);
  if (slot < 0) return null;
  const offset = offsets[slot]!;
  let due = slot === last ? windowEnd : cycleStartMs + Math.round(offset * (1 + options.jitter * (2 * random() - 1)));
  // Never before the attempt it follows has ended (one that timed out ends 15 s after it began).
  due = Math.max(due, attempt.endedAt);
  if (retryAfterMs !== undefined) due = Math.max(due, attempt.endedAt + retryAfterMs);
  return Math.min(due, windowEnd);
}

/**
 * A `Retry-After` header as ms from `nowMs`: delay-seconds or an HTTP date. Undefined when
 * absent or unreadable (then the schedule alone decides).
 */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d{1,10}$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  // Only real HTTP dates: Date.parse accepts far looser text, but every HTTP date names a weekday or GMT.
  if (Number.isNaN(date) || !/GMT$/i.test(text)) return undefined;
  return Math.max(0, date - nowMs);
}

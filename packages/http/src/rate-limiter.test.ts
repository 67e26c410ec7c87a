import type { Clock } from '@ferry/core';
import { describe, expect, it } from 'vitest';
import { RateLimiter, rateLimitHeaders } from './rate-limiter.js';

function manualClock(start = 1_000_000): Clock & { advance(ms: number): void } {
  let t = start;
  return { now: () => t, setTimeout: () => ({ cancel() {} }), advance: (ms) => (t += ms) };
}

describe('RateLimiter', () => {
  const policy = { requests: 3, perSeconds: 60 };

  it('allows the quota, then refuses with the wait until one token', () => {
    const clock = manualClock();
    const limiter = new RateLimiter(clock);
    expect([1, 2, 3].map(() => limiter.take('k', policy).allowed)).toEqual([true, true, true]);
    const refused = limiter.take('k', policy);
    expect(refused).toMatchObject({ allowed: false, remaining: 0, retryAfterSeconds: 20 });
    clock.advance(19_000);
    expect(limiter.take('k', policy).allowed).toBe(false);
    clock.advance(1_000);
    expect(limiter.take('k', policy)).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('keeps keys apart and refills to the quota, never beyond', () => {
    const clock = manualClock();
    const limiter = new RateLimiter(clock);
    for (let i = 0; i < 3; i++) limiter.take('a', policy);
    expect(limiter.take('b', policy).allowed).toBe(true);
    clock.advance(3_600_000);
    expect(limiter.take('a', policy)).toMatchObject({ allowed: true, remaining: 2, resetSeconds: 20 });
  });

  it('starts over when the policy of a key changes', () => {
    const limiter = new RateLimiter(manualClock());
    for (let i = 0; i < 3; i++) limiter.take('k', policy);
    expect(limiter.take('k', { requests: 10, perSeconds: 60 })).toMatchObject({ allowed: true, remaining: 9 });
  });

  it('keeps memory bounded by evicting the least recently used bucket', () => {
    const limiter = new RateLimiter(manualClock(), 2);
    limiter.take('a', policy);
    limiter.take('a', policy);
    limiter.take('b', policy);
    limiter.take('c', policy); // evicts a
    expect(limiter.take('a', policy).remaining).toBe(2);
  });

  it('writes the IETF draft headers', () => {
    const limiter = new RateLimiter(manualClock());
    expect(rateLimitHeaders(limiter.take('k', { requests: 600, perSeconds: 60 }), 'default')).toEqual({
      'ratelimit-policy': '"default";q=600;w=60',
      ratelimit: '"default";r=599;t=1',
    });
  });
});

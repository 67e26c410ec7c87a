import type { Clock } from '@ferry/core';
import type { RateLimitSettings } from './types.js';

/** The outcome of taking one token. */
export interface RateLimitDecision {
  allowed: boolean;
  /** Tokens left after this request. */
  remaining: number;
  /** Seconds until the bucket is full again. */
  resetSeconds: number;
  /** When refused: seconds until one token is available. */
  retryAfterSeconds: number;
  /** The policy applied, for the headers. */
  policy: RateLimitSettings;
}

interface Bucket {
  tokens: number;
  /** Clock time of the last refill, in ms. */
  at: number;
  policy: RateLimitSettings;
}

/**
 * Token buckets (docs/api.md, The HTTP protocol: rate limits), one per key, refilled continuously at
 * `requests / perSeconds` per second. The state is per process: several servers behind a load
 * balancer each allow the full rate (docs/api.md says so).
 *
 * Memory stays bounded: at most `maxBuckets` buckets are kept, and a bucket that has refilled
 * completely carries no information, so it is the first to go.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly clock: Clock,
    private readonly maxBuckets = 100_000,
  ) {}

  /** Takes one token from `key`'s bucket under `policy`. */
  take(key: string, policy: RateLimitSettings): RateLimitDecision {
    const now = this.clock.now();
    const rate = policy.requests / (policy.perSeconds * 1000);
    let bucket = this.buckets.get(key);
    if (!bucket || bucket.policy.requests !== policy.requests || bucket.policy.perSeconds !== policy.perSeconds) {
      bucket = { tokens: policy.requests, at: now, policy };
      this.evictIfFull();
    } else {
      bucket.tokens = Math.min(policy.requests, bucket.tokens + Math.max(0, now - bucket.at) * rate);
      bucket.at = now;
      // Re-inserting keeps the map in least-recently-used order for eviction.
      this.buckets.delete(key);
    }
    this.buckets.set(key, bucket);
    const allowed = bucket.tokens >= 1;
    if (allowed) bucket.tokens -= 1;
    const remaining = Math.floor(bucket.tokens);
    return {
      allowed,
      remaining,
      resetSeconds: Math.ceil((policy.requests - bucket.tokens) / rate / 1000),
      retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((1 - bucket.tokens) / rate / 1000)),
      policy,
    };
  }

  private evictIfFull(): void {
    if (this.buckets.size < this.maxBuckets) return;
    const oldest = this.buckets.keys().next();
    if (!oldest.done) this.buckets.delete(oldest.value);
  }
}

/**
 * The IETF draft headers (draft-ietf-httpapi-ratelimit-headers): the policy as quota `q` per
 * window `w` seconds, and the current state as remaining `r` and seconds `t` until the quota is
 * whole again.
 */
export function rateLimitHeaders(decision: RateLimitDecision, name: string): Record<string, string> {
  return {
    'ratelimit-policy': `"${name}";q=${decision.policy.requests};w=${decision.policy.perSeconds}`,
    ratelimit: `"${name}";r=${decision.remaining};t=${decision.resetSeconds}`,
  };
}

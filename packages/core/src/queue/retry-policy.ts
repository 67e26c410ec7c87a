/** Capped exponential backoff with full jitter on its upper half. */
export interface BackoffPolicy {
  /** Delay before the first retry, in ms. */
  baseMs: number;
  /** Longest delay, in ms. */
  capMs: number;
}

/**
 * An attempt number whose delay is the cap, whatever the policy (the exponent stops at 30): what
 * a failure that no quick retry can fix waits.
 */
export const MAX_BACKOFF_ATTEMPT = 31;

/**
 * The delay before retry number `attempt` (1 for the first retry): `base * 2^(attempt-1)`,
 * capped, then drawn uniformly from its upper half so that many pipelines failing together
 * (one database restart) do not come back in lockstep.
 */
export function backoffDelay(policy: BackoffPolicy, attempt: number, random: () => number = Math.random): number {
  const exponential = policy.baseMs * 2 ** Math.min(Math.max(attempt - 1, 0), 30);
  const capped = Math.min(policy.capMs, exponential);
  return Math.round(capped / 2 + random() * (capped / 2));
}

import { describe, expect, it } from 'vitest';
import { backoffDelay } from './retry-policy.js';

describe('backoffDelay', () => {
  const policy = { baseMs: 1_000, capMs: 60_000 };

  it('doubles from the base, within the upper half of each step', () => {
    expect(backoffDelay(policy, 1, () => 0)).toBe(500);
    expect(backoffDelay(policy, 1, () => 0.999999)).toBe(1_000);
    expect(backoffDelay(policy, 3, () => 0)).toBe(2_000);
    expect(backoffDelay(policy, 3, () => 0.999999)).toBe(4_000);
  });

  it('never exceeds the cap, however many attempts', () => {
    for (const attempt of [7, 8, 50, 10_000]) expect(backoffDelay(policy, attempt, () => 0.999999)).toBeLessThanOrEqual(60_000);
    expect(backoffDelay(policy, 10_000, () => 0)).toBe(30_000);
  });
});

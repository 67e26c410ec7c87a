import { describe, expect, it } from 'vitest';
import { requests } from './destination.js';

describe('requests', () => {
  it('splits a batch into produce requests that stay within max_message_bytes', () => {
    expect(requests([100, 100, 100], 1_000_000)).toEqual([[0, 1, 2]]);
    // 100 batch overhead + 3 x (300 + 70) = 1210 > 1000: the third goes to a second request.
    expect(requests([300, 300, 300], 1000)).toEqual([[0, 1], [2]]);
    // A message alone over the budget still goes alone (the size check before refuses the rest).
    expect(requests([2000, 10], 1000)).toEqual([[0], [1]]);
    expect(requests([], 1000)).toEqual([]);
  });
});

import { describe, expect, it } from 'vitest';
import { CoalescedPump } from './coalesced-pump.js';

describe('CoalescedPump', () => {
  it('runs one round at a time; calls during a round ask for exactly one more', async () => {
    let rounds = 0;
    let release!: () => void;
    const pump = new CoalescedPump(async () => {
      rounds++;
      if (rounds === 1) await new Promise<void>((resolve) => (release = resolve));
    }, () => true);
    const first = pump.pump();
    const second = pump.pump();
    const third = pump.pump();
    expect(second).toBe(first);
    expect(third).toBe(first);
    release();
    await first;
    expect(rounds).toBe(2);
    expect(pump.current).toBeUndefined();
  });

  it('runs another round when one asks for it, and none once inactive', async () => {
    let rounds = 0;
    let active = true;
    const pump = new CoalescedPump(async () => {
      rounds++;
      if (rounds === 3) active = false;
      return true;
    }, () => active);
    await pump.pump();
    expect(rounds).toBe(3);
    await pump.pump();
    expect(rounds).toBe(3);
  });
});

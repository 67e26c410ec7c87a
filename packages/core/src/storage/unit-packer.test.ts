import { describe, expect, it } from 'vitest';
import { compressUnit, DecodedUnit, encodeUnit, type UnitEvent } from './event-units.js';
import { packUnitOffThread } from './unit-packer.js';

const events = (n: number, seed: number): UnitEvent[] =>
  Array.from({ length: n }, (_, k) => ({
    id: `evt_${String(seed * 10_000 + k).padStart(26, '0')}`,
    type: k % 50 === 0 ? 'rare.kind' : 'order.created',
    occurred_at: new Date(Date.UTC(2026, 0, 1) + k * 1000).toISOString(),
    payload: { k, note: `event ${k} of unit ${seed}`, nested: { ok: k % 2 === 0 } },
    status: k % 7 === 0 ? 'dead_lettered' : 'delivered',
    attempts: 1 + (k % 3),
    error: k % 7 === 0 ? { stage: 'destination', code: 'record_rejected', message: `no ${k}` } : null,
    dead_lettered_at: k % 7 === 0 ? '2026-01-01T00:00:00.000Z' : null,
  }));

describe('packUnitOffThread', () => {
  it('packs on its thread the bytes compressUnit makes in place, for units sent at once', async () => {
    const units = [0, 1, 129, 1000, 3].map((n, seed) => encodeUnit(events(n, seed)));
    const bodies = await Promise.all(units.map((u) => packUnitOffThread(u)));
    for (let u = 0; u < units.length; u++) {
      expect(Buffer.compare(bodies[u]!, compressUnit(units[u]!))).toBe(0);
      const decoded = new DecodedUnit(bodies[u]!);
      expect(decoded.length).toBe(units[u]!.count);
      const original = events(units[u]!.count, u);
      for (const k of [0, Math.floor(original.length / 2), original.length - 1].filter((k) => k >= 0 && k < original.length)) expect(decoded.event(k)).toEqual(original[k]);
    }
  });
});

import { describe, expect, it } from 'vitest';
import { MemoryHub } from './memory-connector.js';
import { VirtualClock } from './virtual-clock.js';

describe('MemoryStream.generate', () => {
  it('dates each made record a millisecond after the one before, spelled as Date spells it, across seconds, days and years', async () => {
    const signal = new AbortController().signal;
    for (const start of [Date.UTC(2026, 0, 1), Date.UTC(2025, 11, 31, 23, 59, 59, 990), Date.UTC(1969, 11, 31, 23, 59, 59, 500), Date.UTC(9999, 11, 31, 23, 59, 59, 995)]) {
      const stream = new MemoryHub({ clock: new VirtualClock(start) }).stream('s').generate(2_500, (i) => ({ type: 't', payload: { i } }));
      const { records } = await stream.read(0, 2_500, signal);
      expect(records.map((r) => r.occurredAt)).toEqual(records.map((_, i) => new Date(start + i).toISOString()));
    }
  });

  it("keeps a made record's own time", async () => {
    const stream = new MemoryHub().stream('s').generate(2, (i) => ({ type: 't', payload: {}, occurredAt: `2026-01-0${i + 1}T00:00:00Z` }));
    expect((await stream.read(0, 2, new AbortController().signal)).records.map((r) => r.occurredAt)).toEqual(['2026-01-01T00:00:00Z', '2026-01-02T00:00:00Z']);
  });
});

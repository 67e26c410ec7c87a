import { describe, expect, it } from 'vitest';
import { deriveEventId } from '../events/index.js';
import { toWorkItems } from './source-records.js';

describe('toWorkItems', () => {
  it("reads each record's time as Date.parse does, across minutes, hours, days and years, and derives the id from it", () => {
    const times: string[] = [];
    let ms = Date.UTC(1999, 11, 31, 23, 58, 59, 990);
    // Steps of 7.3 s and then of 41 days: runs of one minute, and jumps to another one.
    for (let i = 0; i < 400; i++) {
      ms += i % 50 === 49 ? 41 * 86_400_000 + 123 : 7_301;
      times.push(new Date(ms).toISOString());
    }
    const records = times.map((t, i) => ({ position: String(i), type: 't', occurredAt: t, payload: { i } }));
    const items = toWorkItems('pip_1', records, 0);
    // The plain canonical ones are kept as they are; the few on days 29-31 are re-spelled the same.
    expect(items.map((w) => w.event.occurredAt)).toEqual(times);
    expect(items.map((w) => w.event.id)).toEqual(times.map((t, i) => deriveEventId('pip_1', String(i), Date.parse(t))));
  });

  it('re-spells a time in another form, keeps a Date, and gives the read time to a record without a valid one', () => {
    const readAt = Date.UTC(2026, 0, 2);
    const items = toWorkItems('pip_1', [
      { position: 'a', type: 't', occurredAt: '2026-01-01T10:00:00+01:00', payload: {} },
      { position: 'b', type: 't', occurredAt: new Date(Date.UTC(2026, 0, 1, 9, 30)), payload: {} },
      { position: 'c', type: 't', occurredAt: 'not a time', payload: {} },
      { position: 'd', type: 't', occurredAt: '2026-02-30T00:00:00.000Z', payload: {} },
    ], readAt);
    expect(items.map((w) => w.event.occurredAt)).toEqual(['2026-01-01T09:00:00.000Z', '2026-01-01T09:30:00.000Z', '2026-01-02T00:00:00.000Z', '2026-03-02T00:00:00.000Z']);
    // The last days of months, leap years included, are kept; the days a month lacks roll over as Date.parse has them.
    const ends = ['2024-02-29T12:00:00.000Z', '2023-02-29T12:00:00.000Z', '2100-02-29T00:00:00.000Z', '2000-02-29T00:00:00.000Z', '2026-04-31T00:00:00.000Z', '2026-12-31T23:59:59.999Z', '2026-11-30T08:00:00.000Z'];
    const endItems = toWorkItems('pip_1', ends.map((t, i) => ({ position: String(i), type: 't', occurredAt: t, payload: {} })), readAt);
    expect(endItems.map((w) => w.event.occurredAt)).toEqual(ends.map((t) => new Date(Date.parse(t)).toISOString()));
    expect(endItems.map((w) => w.event.occurredAt)).toEqual(['2024-02-29T12:00:00.000Z', '2023-03-01T12:00:00.000Z', '2100-03-01T00:00:00.000Z', '2000-02-29T00:00:00.000Z', '2026-05-01T00:00:00.000Z', '2026-12-31T23:59:59.999Z', '2026-11-30T08:00:00.000Z']);
    expect(endItems.map((w) => w.event.id)).toEqual(ends.map((t, i) => deriveEventId('pip_1', String(i), Date.parse(t))));
    expect(items[0]!.event.id).toBe(deriveEventId('pip_1', 'a', Date.UTC(2026, 0, 1, 9)));
    expect(items[2]!.event.id).toBe(deriveEventId('pip_1', 'c'));
  });

  it('spells a UTC time to the second or to the microsecond with milliseconds, as Date.parse reads it', () => {
    const times = ['2026-01-01T00:00:02Z', '2026-01-01T00:00:02.1Z', '2026-01-01T00:00:02.12Z', '2026-01-01T00:00:02.123456Z', '2026-01-01T00:00:02.999999999Z', '2024-02-29T23:59:59Z', '2026-02-29T00:00:00Z', '2026-06-31T10:00:00.5Z', '2026-01-01T24:00:00Z'];
    const items = toWorkItems('pip_1', times.map((t, i) => ({ position: String(i), type: 't', occurredAt: t, payload: {} })), 0);
    expect(items.map((w) => w.event.occurredAt)).toEqual(times.map((t) => new Date(Date.parse(t)).toISOString()));
    expect(items.map((w) => w.event.occurredAt).slice(0, 6)).toEqual(['2026-01-01T00:00:02.000Z', '2026-01-01T00:00:02.100Z', '2026-01-01T00:00:02.120Z', '2026-01-01T00:00:02.123Z', '2026-01-01T00:00:02.999Z', '2024-02-29T23:59:59.000Z']);
    expect(items.map((w) => w.event.id)).toEqual(times.map((t, i) => deriveEventId('pip_1', String(i), Date.parse(t))));
  });
});

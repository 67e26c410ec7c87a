import { describe, expect, it } from 'vitest';
import { latestTickBetween } from './scheduler.js';

const at = (iso: string) => Date.parse(iso);

describe('latestTickBetween', () => {
  it('finds the latest tick after the last one handled, up to now', () => {
    expect(latestTickBetween('*/10 * * * *', at('2026-01-01T00:00:00Z'), at('2026-01-01T03:05:00Z'))).toBe(at('2026-01-01T03:00:00Z'));
    expect(latestTickBetween('*/10 * * * *', at('2026-01-01T00:00:00Z'), at('2026-01-01T03:00:00Z'))).toBe(at('2026-01-01T03:00:00Z'));
  });

  it('is null when no tick was missed', () => {
    expect(latestTickBetween('*/10 * * * *', at('2026-01-01T03:00:00Z'), at('2026-01-01T03:05:00Z'))).toBeNull();
    expect(latestTickBetween('0 0 1 1 *', at('2026-01-01T00:00:00Z'), at('2026-12-31T23:59:59Z'))).toBeNull();
  });

  it('stays cheap after long downtime of a per-second schedule, and finds yearly ticks', () => {
    expect(latestTickBetween('* * * * * *', at('2026-01-01T00:00:00Z'), at('2026-01-08T12:34:56Z'))).toBe(at('2026-01-08T12:34:56Z'));
    expect(latestTickBetween('0 0 1 1 *', at('2020-01-01T00:00:00Z'), at('2026-06-01T00:00:00Z'))).toBe(at('2026-01-01T00:00:00Z'));
  });
});

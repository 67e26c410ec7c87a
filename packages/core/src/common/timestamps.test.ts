import { describe, expect, it } from 'vitest';
import { parseIsoTimestamp } from './timestamps.js';
import { normalizeTimestamp } from './validation.js';

describe('timestamps', () => {
  it('refuses dates and times no calendar has, which Date.parse would roll over', () => {
    for (const text of ['2026-02-29T00:00:00Z', '2026-02-30T00:00:00Z', '2026-04-31T00:00:00Z', '2026-13-01T00:00:00Z', '2026-00-10T00:00:00Z', '2026-01-00T00:00:00Z', '2026-11-22T24:00:00Z', '2026-11-22T10:60:00Z', '2026-11-22T10:00:60Z', '2026-11-22T10:00:00+24:00']) {
      expect(parseIsoTimestamp(text), text).toBeNaN();
      expect(() => normalizeTimestamp(text, '/since'), text).toThrow(expect.objectContaining({ code: 'validation_failed' }));
    }
  });

  it('takes real ones, leap days and offsets included', () => {
    expect(normalizeTimestamp('2028-02-29T00:00:00Z', '/since')).toBe('2028-02-29T00:00:00.000Z');
    expect(normalizeTimestamp('2000-02-29T23:59:59.999+01:00', '/since')).toBe('2000-02-29T22:59:59.999Z');
    expect(normalizeTimestamp('2026-11-22T10:00:00.123456Z', '/since')).toBe('2026-11-22T10:00:00.123Z');
  });
});

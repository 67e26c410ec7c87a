import { describe, expect, it } from 'vitest';
import { isId } from '../common/index.js';
import { deriveEventId } from './event-id.js';

describe('deriveEventId', () => {
  it('is the same for the same pipeline and position, and differs otherwise', () => {
    expect(deriveEventId('pip_a', '42')).toBe(deriveEventId('pip_a', '42'));
    expect(deriveEventId('pip_a', '42')).not.toBe(deriveEventId('pip_a', '43'));
    expect(deriveEventId('pip_a', '42')).not.toBe(deriveEventId('pip_b', '42'));
    // The separator keeps ("ab", "c") and ("a", "bc") apart.
    expect(deriveEventId('ab', 'c')).not.toBe(deriveEventId('a', 'bc'));
  });

  it('spells a valid event id, with or without the record time', () => {
    for (let i = 0; i < 200; i++) {
      expect(isId('event', deriveEventId('pip_x', `p${i}`))).toBe(true);
      expect(isId('event', deriveEventId('pip_x', `p${i}`, 1_767_225_600_000 + i))).toBe(true);
    }
  });

  it('puts the record time first, as a ULID does, so ids of a stream grow with time', () => {
    const at = Date.parse('2026-01-01T00:00:00.000Z');
    const a = deriveEventId('pip_x', 'z', at);
    const b = deriveEventId('pip_x', 'a', at + 1);
    expect(a < b).toBe(true);
    // 2026-01-01T00:00:00Z in ULID time characters.
    expect(a.slice(4, 14)).toBe('01KDVDNA00');
    expect(deriveEventId('pip_x', 'z', at).slice(14)).toBe(deriveEventId('pip_x', 'z', at + 5).slice(14));
  });

  it('never changes: a re-read after an upgrade must find the ids it wrote before', () => {
    expect(deriveEventId('pip_01JABC', '42')).toBe('evt_41DFQMS8N452ZEWSV8YNCV7MJN');
    expect(deriveEventId('pip_01JABC', '0000000001A2B3C4:7', 1_767_225_600_123)).toBe('evt_01KDVDNA3V3BS50A9KC93XS889');
    expect(deriveEventId('pip_01JABC', 'ünïcødé 🚀')).toBe('evt_4RK6NKQ48EJ5HP7THW0NMD6NYE');
    expect(deriveEventId('pip_x', '1', 2 ** 48 - 1).slice(4, 14)).toBe('7ZZZZZZZZZ');
    expect(deriveEventId('pip_x', '1', 0).slice(4, 14)).toBe('0000000000');
  });

  it('ignores a time a ULID cannot hold', () => {
    expect(deriveEventId('pip_x', '1', -1)).toBe(deriveEventId('pip_x', '1'));
    expect(deriveEventId('pip_x', '1', 2 ** 48)).toBe(deriveEventId('pip_x', '1'));
    expect(deriveEventId('pip_x', '1', 1.5)).toBe(deriveEventId('pip_x', '1'));
  });
});

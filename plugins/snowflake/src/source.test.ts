import { describe, expect, it } from 'vitest';
import { exactNumber, positionOf, readSql, sourceSettings } from './source.js';

describe('exactNumber', () => {
  it('is a number when a double holds the text exactly, the text otherwise', () => {
    expect(exactNumber('42')).toBe(42);
    expect(exactNumber('-7')).toBe(-7);
    expect(exactNumber('1.5')).toBe(1.5);
    expect(exactNumber('12.50')).toBe(12.5);
    expect(exactNumber('3.000000000')).toBe(3);
    expect(exactNumber('9007199254740991')).toBe(9007199254740991);
    expect(exactNumber('9007199254740993')).toBe('9007199254740993');
    expect(exactNumber('12345678901234567890123456789012345678')).toBe('12345678901234567890123456789012345678');
    expect(exactNumber('0.1000000000000000055')).toBe('0.1000000000000000055');
    expect(exactNumber('NaN')).toBe('NaN');
  });
});

describe('readSql', () => {
  const login = { account: 'a', username: 'u', password: 'p' };
  it('reads a table after a bound cursor, in cursor order', () => {
    const settings = sourceSettings({ ...login, table: 'db.sales.orders', cursor_column: 'seq', type: 't', batch_size: 50 });
    expect(readSql(settings, true, 50)).toBe('SELECT ferry_rows.* FROM db.sales.orders AS ferry_rows WHERE ferry_rows.seq > ? ORDER BY ferry_rows.seq LIMIT 50');
    expect(readSql(settings, false, 0)).toBe('SELECT ferry_rows.* FROM db.sales.orders AS ferry_rows ORDER BY ferry_rows.seq LIMIT 0');
  });

  it('wraps a query without its trailing semicolon, ending the line so a trailing comment cannot swallow the parenthesis', () => {
    expect(sourceSettings({ ...login, query: ' SELECT * FROM t;; ', cursor_column: 'id', type: 't' }).from).toBe('(SELECT * FROM t\n)');
    expect(sourceSettings({ ...login, query: 'SELECT * FROM t -- recent', cursor_column: 'id', type: 't' }).from).toBe('(SELECT * FROM t -- recent\n)');
  });

  it('refuses a config the engine should have refused', () => {
    expect(() => sourceSettings({ ...login, table: 't', type: 't' })).toThrow(/cursor_column/);
    expect(() => sourceSettings({ ...login, table: 't; DROP TABLE x', cursor_column: 'id', type: 't' })).toThrow();
  });
});

describe('positionOf', () => {
  it('keeps a cursor value exactly: number text, strings, dates, timestamps to the nanosecond', () => {
    expect(positionOf('9007199254740993', 'number', 'seq')).toBe('9007199254740993');
    expect(positionOf('b-0001', 'text', 'key')).toBe('b-0001');
    expect(positionOf(new Date('2026-03-04T00:00:00Z'), 'date', 'day')).toBe('2026-03-04');
    const at = Object.assign(new Date('2026-03-04T05:06:07.123Z'), { getEpochSeconds: () => 1772600767, getNanoSeconds: () => 123_456_789 });
    expect(positionOf(at, 'timestamp', 'at')).toBe('2026-03-04T05:06:07.123456789Z');
  });

  it('refuses a null cursor as a bad record, and a FLOAT or BOOLEAN cursor as a configuration that cannot work', () => {
    expect(() => positionOf(null, 'number', 'seq')).toThrow(expect.objectContaining({ code: 'invalid_record', retryable: false }));
    expect(() => positionOf('1.5', 'real', 'score')).toThrow(expect.objectContaining({ code: 'configuration_invalid', message: expect.stringContaining('FLOAT') }));
    expect(() => positionOf(true, 'other', 'flag')).toThrow(expect.objectContaining({ code: 'configuration_invalid' }));
  });
});

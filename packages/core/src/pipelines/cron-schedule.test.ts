import { describe, expect, it } from 'vitest';
import { isFerryError } from '../common/index.js';
import { assertSchedule, nextFireAfter } from './cron-schedule.js';

function expectInvalid(expression: string): string {
  let caught: unknown;
  try {
    assertSchedule(expression);
  } catch (error) {
    caught = error;
  }
  expect(isFerryError(caught, 'invalid_schedule'), `${JSON.stringify(expression)} should be invalid`).toBe(true);
  expect((caught as { status: number }).status).toBe(422);
  return (caught as Error).message;
}

const iso = (ms: number) => new Date(ms).toISOString();
const at = (s: string) => Date.parse(s);

describe('assertSchedule', () => {
  it.each([
    '* * * * *',
    '0 * * * *',
    '*/15 9-17 * * MON-FRI',
    '0 0 1 1 *',
    '0 0 29 2 *',
    '0 0 31 * *',
    '  30 2 * * *  ',
    '*/5 * * * * *',
    '0 0 12 * * 0',
  ])('accepts %j', (expression) => {
    expect(() => assertSchedule(expression)).not.toThrow();
  });

  it.each(['', '   ', '* * * *', '0 0 * *', '* * * * * * *', '0 0 0 1 1 * 2026'])('refuses %j for its field count', (expression) => {
    expect(expectInvalid(expression)).toMatch(/5- or 6-field/);
  });

  it.each(['@daily', '@hourly', '@weekly', '@yearly', '@reboot'])('refuses the alias %s', (expression) => {
    expectInvalid(expression);
  });

  it.each([
    '60 * * * *',
    '* 24 * * *',
    '* * 32 * *',
    '* * 0 * *',
    '* * * 13 *',
    '* * * 0 *',
    '* * * * 8',
    '61 * * * * *',
    '*/0 * * * *',
    '5-1 * * * *',
    'a b c d e',
    '0 0 ? * *',
  ])('refuses the out-of-range or malformed %j', (expression) => {
    expectInvalid(expression);
  });

  it.each(['0 0 31 2 *', '0 0 30 2 *', '0 0 31 4 *', '0 0 31 4,6,9,11 *'])('refuses %j, which never fires', (expression) => {
    expectInvalid(expression);
  });
});

describe('nextFireAfter', () => {
  it('returns the next fire time in UTC', () => {
    expect(iso(nextFireAfter('0 9 * * *', at('2026-01-01T00:00:00.000Z')))).toBe('2026-01-01T09:00:00.000Z');
    expect(iso(nextFireAfter('0 9 * * *', at('2026-01-01T10:00:00.000Z')))).toBe('2026-01-02T09:00:00.000Z');
  });

  it('is strictly after the given time, even when that time matches', () => {
    expect(iso(nextFireAfter('0 * * * *', at('2026-01-01T00:00:00.000Z')))).toBe('2026-01-01T01:00:00.000Z');
    expect(iso(nextFireAfter('* * * * *', at('2026-01-01T00:00:00.000Z')))).toBe('2026-01-01T00:01:00.000Z');
  });

  it('rounds up to the next whole matching time from inside a second or minute', () => {
    expect(iso(nextFireAfter('*/10 * * * * *', at('2026-01-01T00:00:09.999Z')))).toBe('2026-01-01T00:00:10.000Z');
    expect(iso(nextFireAfter('*/10 * * * * *', at('2026-01-01T00:00:00.500Z')))).toBe('2026-01-01T00:00:10.000Z');
    expect(iso(nextFireAfter('0 * * * *', at('2026-01-01T00:59:59.999Z')))).toBe('2026-01-01T01:00:00.000Z');
  });

  it('handles day-of-week, month boundaries and leap days', () => {
    // 2026-01-01 is a Thursday.
    expect(iso(nextFireAfter('0 0 * * MON', at('2026-01-01T00:00:00.000Z')))).toBe('2026-01-05T00:00:00.000Z');
    expect(iso(nextFireAfter('0 0 31 * *', at('2026-02-01T00:00:00.000Z')))).toBe('2026-03-31T00:00:00.000Z');
    expect(iso(nextFireAfter('0 0 29 2 *', at('2026-01-01T00:00:00.000Z')))).toBe('2028-02-29T00:00:00.000Z');
  });

  it('is monotonic when fed its own result', () => {
    let t = at('2026-03-01T00:00:00.000Z');
    const fires: string[] = [];
    for (let i = 0; i < 3; i++) {
      t = nextFireAfter('30 */6 * * *', t);
      fires.push(iso(t));
    }
    expect(fires).toEqual(['2026-03-01T00:30:00.000Z', '2026-03-01T06:30:00.000Z', '2026-03-01T12:30:00.000Z']);
  });
});

describe('assertSchedule: reasons in its own words', () => {
  it('names the field at fault and what it takes', () => {
    expect(expectInvalid('61 * * * *')).toBe('Invalid schedule "61 * * * *": the minute field "61" is not valid (it takes 0-59, `*`, lists, ranges and `/` steps).');
    expect(expectInvalid('0 25 * * *')).toMatch(/the hour field "25" is not valid \(it takes 0-23/);
    expect(expectInvalid('0 0 * 13 *')).toMatch(/the month field "13"/);
    expect(expectInvalid('61 * * * * *')).toMatch(/the second field "61"/);
    expect(expectInvalid('* * * * 8')).toMatch(/the day-of-week field "8"/);
  });

  it('says when a valid expression never fires', () => {
    expect(expectInvalid('0 0 31 2 *')).toMatch(/it never fires/);
  });

  it('never quotes the cron library', () => {
    for (const expression of ['a b c d e', '*/0 * * * *', '5-1 * * * *', '0 0 ? * *', '@daily']) {
      expect(expectInvalid(expression)).not.toMatch(/Field|WARNING|Unknown alias|Invalid cron|luxon|sendAt/);
    }
  });
});

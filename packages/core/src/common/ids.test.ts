import { describe, expect, it } from 'vitest';
import type { Clock } from './clock.js';
import { ID_PREFIXES, IdGenerator, isId, type IdKind } from './ids.js';

function fixedClock(t: number): Clock & { t: number } {
  const clock = { t, now: () => clock.t, setTimeout: () => ({ cancel: () => undefined }) };
  return clock;
}

const T0 = Date.UTC(2026, 10, 22, 10, 0, 0);

describe('IdGenerator', () => {
  it('uses the documented prefixes', () => {
    expect(ID_PREFIXES).toMatchObject({
      connector: 'con',
      pipeline: 'pip',
      event: 'evt',
      run: 'run',
      webhook: 'whk',
      delivery: 'dlv',
      key: 'key',
    });
    const ids = new IdGenerator(fixedClock(T0));
    for (const kind of Object.keys(ID_PREFIXES) as IdKind[]) {
      const id = ids.create(kind);
      expect(id).toMatch(new RegExp(`^${ID_PREFIXES[kind]}_[0-9A-HJKMNP-TV-Z]{26}$`));
      expect(isId(kind, id)).toBe(true);
    }
  });

  it('is strictly increasing within the same millisecond', () => {
    const ids = new IdGenerator(fixedClock(T0));
    const made = Array.from({ length: 1000 }, () => ids.create('event'));
    expect(new Set(made).size).toBe(made.length);
    expect([...made].sort()).toEqual(made);
  });

  it('orders by the clock time across milliseconds', () => {
    const clock = fixedClock(T0);
    const ids = new IdGenerator(clock);
    const a = ids.create('pipeline');
    clock.t += 1;
    const b = ids.create('pipeline');
    clock.t += 86_400_000;
    const c = ids.create('pipeline');
    expect([c, a, b].sort()).toEqual([a, b, c]);
  });

  it('encodes the clock time in the id, not the wall time', () => {
    const past = new IdGenerator(fixedClock(Date.UTC(2001, 0, 1))).create('run');
    const future = new IdGenerator(fixedClock(Date.UTC(2090, 0, 1))).create('run');
    const now = new IdGenerator(fixedClock(T0)).create('run');
    expect([future, now, past].sort()).toEqual([past, now, future]);
    // The first 10 ULID characters are the timestamp.
    expect(new IdGenerator(fixedClock(T0)).create('run').slice(4, 14)).toBe(now.slice(4, 14));
  });
});

describe('isId', () => {
  const valid = 'con_01JD5Z7K3M8N9P0QRSTVWXYZ12';

  it('accepts a well-formed id of the kind', () => {
    expect(isId('connector', valid)).toBe(true);
  });

  it.each([
    ['wrong prefix', 'pipeline', valid],
    ['no prefix', 'connector', valid.slice(4)],
    ['uppercase prefix', 'connector', `CON_${valid.slice(4)}`],
    ['too short', 'connector', valid.slice(0, -1)],
    ['too long', 'connector', `${valid}0`],
    ['lowercase body', 'connector', valid.toLowerCase()],
    ['excluded letter I', 'connector', `con_${'I'.repeat(26)}`],
    ['excluded letter U', 'connector', `con_${'U'.repeat(26)}`],
    ['empty', 'connector', ''],
    ['trailing newline', 'connector', `${valid}\n`],
  ] as const)('refuses %s', (_name, kind, id) => {
    expect(isId(kind, id)).toBe(false);
  });
});

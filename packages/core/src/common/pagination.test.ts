import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Clock } from './clock.js';
import { isFerryError } from './errors.js';
import {
  CURSOR_TTL_MS,
  CursorCodec,
  DEFAULT_LIMIT,
  MAX_LIMIT,
  normalizeLimit,
  paginate,
  type CursorScope,
  type PageSpec,
} from './pagination.js';
import type { KeysetResult } from './pagination.js';

const T0 = Date.UTC(2026, 10, 22, 10, 0, 0);

function fakeClock(start = T0): Clock & { t: number } {
  const clock = {
    t: start,
    now: () => clock.t,
    setTimeout: () => ({ cancel: () => undefined }),
  };
  return clock;
}

const KEY = Buffer.alloc(32, 7);
const scope: CursorScope = { resource: 'pipelines', workspaceId: 'ws_a', filters: { state: 'active' } };

function expectInvalidCursor(fn: () => unknown): void {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(isFerryError(caught, 'invalid_cursor')).toBe(true);
  const err = caught as { status: number; errors?: { pointer: string; code: string }[] };
  expect(err.status).toBe(400);
  expect(err.errors?.[0]).toMatchObject({ pointer: '/cursor', code: 'invalid_cursor' });
}

/** Flips one base64url character of `s` at `index` to a different one. */
function flipChar(s: string, index: number): string {
  const c = s[index]!;
  const replacement = c === 'A' ? 'B' : 'A';
  return s.slice(0, index) + replacement + s.slice(index + 1);
}

describe('CursorCodec', () => {
  it('round-trips a keyset position', () => {
    const codec = new CursorCodec(KEY, fakeClock());
    const position = ['2026-11-22T10:00:00.000Z', 'evt_01JABC'];
    const cursor = codec.encode(position, scope);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(codec.decode(cursor, scope)).toEqual(position);
  });

  it('round-trips an empty position and positions with odd characters', () => {
    const codec = new CursorCodec(KEY, fakeClock());
    expect(codec.decode(codec.encode([], scope), scope)).toEqual([]);
    const odd = ['a.b', 'é"\\', ''];
    expect(codec.decode(codec.encode(odd, scope), scope)).toEqual(odd);
  });

  it('does not reveal the workspace or filters in the cursor', () => {
    const codec = new CursorCodec(KEY, fakeClock());
    const secretScope: CursorScope = { resource: 'pipelines', workspaceId: 'ws_distinctive_zq9', filters: { name: 'filter_value_xk3' } };
    const cursor = codec.encode(['pip_1'], secretScope);
    const body = Buffer.from(cursor.split('.')[0]!, 'base64url').toString('utf8');
    expect(body).not.toContain('ws_distinctive_zq9');
    expect(body).not.toContain('filter_value_xk3');
  });

  it('ignores undefined filter members and filter key order', () => {
    const codec = new CursorCodec(KEY, fakeClock());
    const cursor = codec.encode(['x'], { resource: 'r', workspaceId: 'w', filters: { a: 1, b: 'two', c: undefined } });
    expect(codec.decode(cursor, { resource: 'r', workspaceId: 'w', filters: { b: 'two', a: 1 } })).toEqual(['x']);
  });

  it('refuses a cursor whose body was tampered with', () => {
    const codec = new CursorCodec(KEY, fakeClock());
    const cursor = codec.encode(['pip_1'], scope);
    const [body, mac] = cursor.split('.') as [string, string];
    // A forged body with a different position, signed with the old mac.
    const forged = Buffer.from(JSON.stringify([1, ['pip_9'], 'x', 9_999_999_999])).toString('base64url');
    expectInvalidCursor(() => codec.decode(`${forged}.${mac}`, scope));
    expectInvalidCursor(() => codec.decode(`${flipChar(body, 3)}.${mac}`, scope));
  });

  it('refuses a cursor whose mac was tampered with or truncated', () => {
    const codec = new CursorCodec(KEY, fakeClock());
    const cursor = codec.encode(['pip_1'], scope);
    const [body, mac] = cursor.split('.') as [string, string];
    expectInvalidCursor(() => codec.decode(`${body}.${flipChar(mac, 0)}`, scope));
    expectInvalidCursor(() => codec.decode(`${body}.${mac.slice(0, -2)}`, scope));
    expectInvalidCursor(() => codec.decode(`${body}.`, scope));
    expectInvalidCursor(() => codec.decode(`${body}.${mac}AAAA`, scope));
  });

  it('refuses a cursor signed with another key', () => {
    const other = new CursorCodec(Buffer.alloc(32, 8), fakeClock());
    const codec = new CursorCodec(KEY, fakeClock());
    expectInvalidCursor(() => codec.decode(other.encode(['pip_1'], scope), scope));
  });

  it('refuses a cursor used with other filters, another workspace or another listing', () => {
    const codec = new CursorCodec(KEY, fakeClock());
    const cursor = codec.encode(['pip_1'], scope);
    expectInvalidCursor(() => codec.decode(cursor, { ...scope, filters: { state: 'paused' } }));
    expectInvalidCursor(() => codec.decode(cursor, { ...scope, filters: {} }));
    expectInvalidCursor(() => codec.decode(cursor, { ...scope, filters: { state: 'active', name: 'x' } }));
    expectInvalidCursor(() => codec.decode(cursor, { ...scope, workspaceId: 'ws_b' }));
    expectInvalidCursor(() => codec.decode(cursor, { ...scope, resource: 'connectors' }));
    // The same scope still works.
    expect(codec.decode(cursor, { ...scope, filters: { state: 'active' } })).toEqual(['pip_1']);
  });

  it('accepts a cursor until its expiry and refuses it after', () => {
    const clock = fakeClock();
    const codec = new CursorCodec(KEY, clock);
    const cursor = codec.encode(['pip_1'], scope);
    clock.t = T0 + CURSOR_TTL_MS - 1000;
    expect(codec.decode(cursor, scope)).toEqual(['pip_1']);
    clock.t = T0 + CURSOR_TTL_MS + 1000;
    expectInvalidCursor(() => codec.decode(cursor, scope));
  });

  it('uses a 72 hour default ttl and honours a custom one', () => {
    expect(CURSOR_TTL_MS).toBe(72 * 3600 * 1000);
    const clock = fakeClock();
    const codec = new CursorCodec(KEY, clock, 60_000);
    const cursor = codec.encode(['a'], scope);
    clock.t = T0 + 59_000;
    expect(codec.decode(cursor, scope)).toEqual(['a']);
    clock.t = T0 + 61_000;
    expectInvalidCursor(() => codec.decode(cursor, scope));
  });

  it('refuses malformed strings', () => {
    const codec = new CursorCodec(KEY, fakeClock());
    const valid = codec.encode(['pip_1'], scope);
    const samples = [
      '',
      'nodot',
      '.',
      '.abc',
      `.${valid}`,
      'abc.def',
      '%%%.%%%',
      'a'.repeat(5000),
      `${valid.split('.')[0]!}${'A'.repeat(3000)}.${valid.split('.')[1]!}`,
      '\u0000.\u0000',
      'null.null',
    ];
    for (const sample of samples) expectInvalidCursor(() => codec.decode(sample, scope));
  });

  it('refuses a correctly signed body that is not a cursor', () => {
    // Sign arbitrary bodies with the real key: the mac is HMAC-SHA256 truncated to 16 bytes, base64url.
    const codec = new CursorCodec(KEY, fakeClock());
    const sign = (body: string) => `${body}.${createHmac('sha256', KEY).update(body).digest().subarray(0, 16).toString('base64url')}`;
    // The signing helper matches the codec: a real cursor re-signed this way still decodes.
    const real = codec.encode(['p'], scope).split('.')[0]!;
    expect(codec.decode(sign(real), scope)).toEqual(['p']);
    const enc = (value: string) => Buffer.from(value).toString('base64url');
    expectInvalidCursor(() => codec.decode(sign(enc('not json')), scope));
    expectInvalidCursor(() => codec.decode(sign(enc('{"a":1}')), scope));
    expectInvalidCursor(() => codec.decode(sign(enc('[2,["x"],"h",9999999999]')), scope));
    expectInvalidCursor(() => codec.decode(sign(enc('[1,[1,2],"h",9999999999]')), scope));
  });
});

describe('normalizeLimit', () => {
  it.each([
    [undefined, DEFAULT_LIMIT],
    [1, 1],
    [50, 50],
    [99, 99],
    [100, 100],
    [101, MAX_LIMIT],
    [1_000_000, MAX_LIMIT],
  ])('normalizes %s to %s', (input, expected) => {
    expect(normalizeLimit(input)).toBe(expected);
  });

  it.each([[0], [-1], [1.5], [Number.NaN], [Number.POSITIVE_INFINITY], ['10'], [null], [true], [{}]])(
    'refuses %s with validation_failed on /limit',
    (input) => {
      let caught: unknown;
      try {
        normalizeLimit(input);
      } catch (error) {
        caught = error;
      }
      expect(isFerryError(caught, 'validation_failed')).toBe(true);
      expect((caught as { errors: { pointer: string }[] }).errors[0]?.pointer).toBe('/limit');
    },
  );
});

describe('paginate', () => {
  interface Row {
    id: string;
  }
  const rows = (...ids: string[]): Row[] => ids.map((id) => ({ id }));
  const spec = (tail = false): PageSpec<Row> => ({ scope, key: (row) => [row.id], tail });

  function fetcher(result: KeysetResult<Row>) {
    const calls: { after: string[] | undefined; limit: number }[] = [];
    const fetch = async (after: string[] | undefined, limit: number) => {
      calls.push({ after, limit });
      return result;
    };
    return { calls, fetch };
  }

  it('builds the envelope with a cursor to the last row when there is more', async () => {
    const codec = new CursorCodec(KEY, fakeClock());
    const { calls, fetch } = fetcher({ rows: rows('a', 'b'), hasMore: true });
    const page = await paginate(codec, { limit: 2 }, spec(), fetch, (rs) => rs.map((r) => r.id.toUpperCase()));
    expect(page.data).toEqual(['A', 'B']);
    expect(page.has_more).toBe(true);
    expect(page.next_cursor).not.toBeNull();
    expect(codec.decode(page.next_cursor!, scope)).toEqual(['b']);
    expect(calls).toEqual([{ after: undefined, limit: 2 }]);
  });

  it('passes the default and clamped limit and the decoded cursor to fetch', async () => {
    const codec = new CursorCodec(KEY, fakeClock());
    const { calls, fetch } = fetcher({ rows: [], hasMore: false });
    await paginate(codec, {}, spec(), fetch, (rs) => rs);
    await paginate(codec, { limit: 500, cursor: codec.encode(['x', 'y'], scope) }, spec(), fetch, (rs) => rs);
    expect(calls).toEqual([
      { after: undefined, limit: 50 },
      { after: ['x', 'y'], limit: 100 },
    ]);
  });

  it('sets next_cursor to null when has_more is false', async () => {
    const codec = new CursorCodec(KEY, fakeClock());
    const { fetch } = fetcher({ rows: rows('a', 'b'), hasMore: false });
    const page = await paginate(codec, {}, spec(), fetch, async (rs) => rs);
    expect(page).toEqual({ data: rows('a', 'b'), next_cursor: null, has_more: false });
  });

  it('with tail, sets next_cursor whenever data is non-empty', async () => {
    const codec = new CursorCodec(KEY, fakeClock());
    const { fetch } = fetcher({ rows: rows('a', 'b'), hasMore: false });
    const page = await paginate(codec, {}, spec(true), fetch, (rs) => rs);
    expect(page.has_more).toBe(false);
    expect(page.next_cursor).not.toBeNull();
    expect(codec.decode(page.next_cursor!, scope)).toEqual(['b']);
  });

  it('with tail and no data, next_cursor is null', async () => {
    const codec = new CursorCodec(KEY, fakeClock());
    const { fetch } = fetcher({ rows: [], hasMore: false });
    const page = await paginate(codec, {}, spec(true), fetch, (rs) => rs);
    expect(page).toEqual({ data: [], next_cursor: null, has_more: false });
  });

  it('refuses a bad limit or cursor before fetching', async () => {
    const codec = new CursorCodec(KEY, fakeClock());
    const { calls, fetch } = fetcher({ rows: [], hasMore: false });
    await expect(paginate(codec, { limit: 0 }, spec(), fetch, (rs) => rs)).rejects.toMatchObject({ code: 'validation_failed' });
    await expect(paginate(codec, { cursor: 'garbage' }, spec(), fetch, (rs) => rs)).rejects.toMatchObject({ code: 'invalid_cursor' });
    const otherScope = codec.encode(['a'], { ...scope, workspaceId: 'ws_other' });
    await expect(paginate(codec, { cursor: otherScope }, spec(), fetch, (rs) => rs)).rejects.toMatchObject({ code: 'invalid_cursor' });
    expect(calls).toEqual([]);
  });
});

describe('CursorCodec properties', () => {
  it('any change to a valid cursor is rejected, and nothing else decodes', () => {
    const codec = new CursorCodec(KEY, fakeClock());
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 30 }), { minLength: 1, maxLength: 3 }), fc.nat(), fc.string({ minLength: 1, maxLength: 1 }), (position, at, replacement) => {
        const cursor = codec.encode(position, scope);
        expect(codec.decode(cursor, scope)).toEqual(position);
        const index = at % cursor.length;
        fc.pre(cursor[index] !== replacement);
        const tampered = cursor.slice(0, index) + replacement + cursor.slice(index + 1);
        expectInvalidCursor(() => codec.decode(tampered, scope));
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (garbage) => {
        expectInvalidCursor(() => codec.decode(garbage, scope));
      }),
      { numRuns: 2000 },
    );
  });
});

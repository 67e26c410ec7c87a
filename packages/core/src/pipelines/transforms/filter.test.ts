import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import type { JsonObject, TransformContext, TransformEvent } from '../../plugin-api/index.js';
import { filterStep, FilterStepSchema, type FilterStep } from './filter.js';

const ctx: TransformContext = { pipelineId: 'pip_1', workspaceId: 'ws_1', salt: 'salt' };

const payload: JsonObject = {
  status: 'shipped',
  total: 42,
  zero: 0,
  flag: false,
  none: null,
  customer: { email: 'ada@example.com', tier: 'gold', tags: ['a', 'b'] },
  at: '2026-11-22T10:00:00.000Z',
};

function event(p: JsonObject = payload): TransformEvent {
  return { id: 'evt_1', type: 'order.created', occurredAt: '2026-11-22T10:00:00.000Z', payload: p };
}

async function keeps(step: Omit<FilterStep, 'type'>, p: JsonObject = payload): Promise<boolean> {
  const input = event(p);
  const before = structuredClone(input);
  const out = await filterStep.apply(input, { type: 'filter', ...step }, ctx);
  expect(input).toEqual(before);
  if (out !== null) {
    expect(out).toEqual(input);
    expect(out).not.toBe(input);
  }
  return out !== null;
}

describe('filter step: apply', () => {
  it('eq compares deep JSON values', async () => {
    expect(await keeps({ path: 'status', op: 'eq', value: 'shipped' })).toBe(true);
    expect(await keeps({ path: 'status', op: 'eq', value: 'pending' })).toBe(false);
    expect(await keeps({ path: 'customer.tags', op: 'eq', value: ['a', 'b'] })).toBe(true);
    expect(await keeps({ path: 'customer.tags', op: 'eq', value: ['b', 'a'] })).toBe(false);
    expect(await keeps({ path: 'customer', op: 'eq', value: { tags: ['a', 'b'], tier: 'gold', email: 'ada@example.com' } })).toBe(true);
    expect(await keeps({ path: 'customer', op: 'eq', value: { tier: 'gold' } })).toBe(false);
    expect(await keeps({ path: 'none', op: 'eq', value: null })).toBe(true);
  });

  it('eq never coerces types', async () => {
    expect(await keeps({ path: 'total', op: 'eq', value: '42' })).toBe(false);
    expect(await keeps({ path: 'zero', op: 'eq', value: false })).toBe(false);
    expect(await keeps({ path: 'none', op: 'eq', value: {} })).toBe(false);
    expect(await keeps({ path: 'customer.tags', op: 'eq', value: { 0: 'a', 1: 'b' } })).toBe(false);
  });

  it('eq on a missing path does not match; neq does', async () => {
    expect(await keeps({ path: 'missing', op: 'eq', value: null })).toBe(false);
    expect(await keeps({ path: 'missing', op: 'neq', value: 'x' })).toBe(true);
  });

  it('neq is the complement of eq', async () => {
    expect(await keeps({ path: 'status', op: 'neq', value: 'shipped' })).toBe(false);
    expect(await keeps({ path: 'status', op: 'neq', value: 'pending' })).toBe(true);
    expect(await keeps({ path: 'customer.tags', op: 'neq', value: ['a', 'b'] })).toBe(false);
    expect(await keeps({ path: 'total', op: 'neq', value: '42' })).toBe(true);
  });

  it('gt/gte/lt/lte compare numbers numerically', async () => {
    expect(await keeps({ path: 'total', op: 'gt', value: 41 })).toBe(true);
    expect(await keeps({ path: 'total', op: 'gt', value: 42 })).toBe(false);
    expect(await keeps({ path: 'total', op: 'gte', value: 42 })).toBe(true);
    expect(await keeps({ path: 'total', op: 'gte', value: 42.5 })).toBe(false);
    expect(await keeps({ path: 'total', op: 'lt', value: 100 })).toBe(true);
    expect(await keeps({ path: 'total', op: 'lt', value: 42 })).toBe(false);
    expect(await keeps({ path: 'total', op: 'lte', value: 42 })).toBe(true);
    expect(await keeps({ path: 'total', op: 'lte', value: 9 })).toBe(false);
    // Numerically, not as text: '9' > '42' as strings, 9 < 42 as numbers.
    expect(await keeps({ path: 'total', op: 'gt', value: 9 })).toBe(true);
  });

  it('gt/gte/lt/lte compare strings lexicographically', async () => {
    expect(await keeps({ path: 'at', op: 'gte', value: '2026-11-22T10:00:00.000Z' })).toBe(true);
    expect(await keeps({ path: 'at', op: 'gt', value: '2026-11-22T10:00:00.000Z' })).toBe(false);
    expect(await keeps({ path: 'at', op: 'lt', value: '2027-01-01' })).toBe(true);
    expect(await keeps({ path: 'status', op: 'lte', value: 'shipped' })).toBe(true);
    expect(await keeps({ path: 'status', op: 'gt', value: 'Z' })).toBe(true); // lower case sorts after upper case
  });

  it('gt/gte/lt/lte never match mismatched types or missing values', async () => {
    for (const op of ['gt', 'gte', 'lt', 'lte'] as const) {
      expect(await keeps({ path: 'total', op, value: '42' })).toBe(false);
      expect(await keeps({ path: 'status', op, value: 1 })).toBe(false);
      expect(await keeps({ path: 'none', op, value: 0 })).toBe(false);
      expect(await keeps({ path: 'flag', op, value: 0 })).toBe(false);
      expect(await keeps({ path: 'customer', op, value: 'a' })).toBe(false);
      expect(await keeps({ path: 'missing', op, value: 0 })).toBe(false);
    }
  });

  it('in matches any element by deep equality', async () => {
    expect(await keeps({ path: 'status', op: 'in', value: ['pending', 'shipped'] })).toBe(true);
    expect(await keeps({ path: 'status', op: 'in', value: ['pending'] })).toBe(false);
    expect(await keeps({ path: 'status', op: 'in', value: [] })).toBe(false);
    expect(await keeps({ path: 'total', op: 'in', value: ['42'] })).toBe(false);
    expect(await keeps({ path: 'customer.tags', op: 'in', value: [['a', 'b']] })).toBe(true);
    expect(await keeps({ path: 'none', op: 'in', value: [null] })).toBe(true);
    expect(await keeps({ path: 'missing', op: 'in', value: [null] })).toBe(false);
  });

  it('exists matches any present value, null and falsy included', async () => {
    expect(await keeps({ path: 'customer.email', op: 'exists' })).toBe(true);
    expect(await keeps({ path: 'none', op: 'exists' })).toBe(true);
    expect(await keeps({ path: 'zero', op: 'exists' })).toBe(true);
    expect(await keeps({ path: 'flag', op: 'exists' })).toBe(true);
    expect(await keeps({ path: 'customer.phone', op: 'exists' })).toBe(false);
    expect(await keeps({ path: 'status.deeper', op: 'exists' })).toBe(false);
    expect(await keeps({ path: 'toString', op: 'exists' })).toBe(false);
  });

  it('matches tests strings against the regular expression', async () => {
    expect(await keeps({ path: 'customer.email', op: 'matches', value: '@example\\.com$' })).toBe(true);
    expect(await keeps({ path: 'customer.email', op: 'matches', value: '^bob' })).toBe(false);
    // Case-sensitive, no flags.
    expect(await keeps({ path: 'status', op: 'matches', value: 'SHIPPED' })).toBe(false);
  });

  it('matches never matches non-strings', async () => {
    expect(await keeps({ path: 'total', op: 'matches', value: '42' })).toBe(false);
    expect(await keeps({ path: 'customer.tags', op: 'matches', value: 'a' })).toBe(false);
    expect(await keeps({ path: 'missing', op: 'matches', value: '.*' })).toBe(false);
  });

  it('gives the same answer on repeated use of a cached pattern', async () => {
    const step = { path: 'status', op: 'matches', value: 'ship' } as const;
    expect(await keeps(step)).toBe(true);
    expect(await keeps(step)).toBe(true);
    expect(await keeps(step, { status: 'pending' })).toBe(false);
  });

  it('reads nested paths through arrays', async () => {
    expect(await keeps({ path: 'customer.tags.1', op: 'eq', value: 'b' })).toBe(true);
  });

  it('throws (dead-letter) rather than filtering silently when the step is invalid', () => {
    expect(() => filterStep.apply(event(), { type: 'filter', path: 'status', op: 'eq' }, ctx)).toThrow(/needs a value/);
    expect(() => filterStep.apply(event(), { type: 'filter', path: 'status', op: 'matches', value: '(' }, ctx)).toThrow(
      /regular expression/,
    );
    expect(() => filterStep.apply(event(), { type: 'filter', path: 'status', op: 'in', value: 'shipped' }, ctx)).toThrow(/array/);
  });

  it('throws on a forbidden path', () => {
    expect(() => filterStep.apply(event(), { type: 'filter', path: '__proto__', op: 'exists' }, ctx)).toThrow(/not allowed/);
  });
});

describe('filter step: validate', () => {
  const validate = (step: FilterStep) => filterStep.validate?.(step) ?? [];

  it('accepts well-formed steps', () => {
    expect(validate({ type: 'filter', path: 'a', op: 'exists' })).toEqual([]);
    expect(validate({ type: 'filter', path: 'a', op: 'eq', value: null })).toEqual([]);
    expect(validate({ type: 'filter', path: 'a', op: 'neq', value: { x: 1 } })).toEqual([]);
    expect(validate({ type: 'filter', path: 'a', op: 'in', value: [1, 'b'] })).toEqual([]);
    expect(validate({ type: 'filter', path: 'a', op: 'matches', value: '^a+$' })).toEqual([]);
    expect(validate({ type: 'filter', path: 'a', op: 'gt', value: 1 })).toEqual([]);
    expect(validate({ type: 'filter', path: 'a', op: 'lte', value: '2026' })).toEqual([]);
  });

  it.each(['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'in', 'matches'] as const)('requires a value for %s', (op) => {
    expect(validate({ type: 'filter', path: 'a', op })).toEqual([{ pointer: '/value', code: 'required', detail: expect.any(String) }]);
  });

  it('requires an array for in', () => {
    expect(validate({ type: 'filter', path: 'a', op: 'in', value: 'x' })).toEqual([
      { pointer: '/value', code: 'type', detail: expect.any(String) },
    ]);
  });

  it('requires a compiling regular expression string for matches', () => {
    expect(validate({ type: 'filter', path: 'a', op: 'matches', value: '([a-z' })).toEqual([
      { pointer: '/value', code: 'invalid_pattern', detail: expect.stringContaining('Not a valid regular expression') },
    ]);
    expect(validate({ type: 'filter', path: 'a', op: 'matches', value: 5 })).toEqual([
      { pointer: '/value', code: 'type', detail: expect.any(String) },
    ]);
  });

  it('requires a number or a string for ordering operators', () => {
    expect(validate({ type: 'filter', path: 'a', op: 'gt', value: true })).toEqual([
      { pointer: '/value', code: 'type', detail: expect.any(String) },
    ]);
    expect(validate({ type: 'filter', path: 'a', op: 'lt', value: null })[0]?.code).toBe('type');
  });
});

describe('filter step: schema', () => {
  it('accepts every operator, with or without value', () => {
    for (const op of ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'in', 'exists', 'matches']) {
      expect(Value.Check(FilterStepSchema, { type: 'filter', path: 'a.b', op, value: 1 })).toBe(true);
    }
    expect(Value.Check(FilterStepSchema, { type: 'filter', path: 'a', op: 'exists' })).toBe(true);
  });

  it('rejects unknown fields, unknown operators, bad paths and another type', () => {
    const errors = [...Value.Errors(FilterStepSchema, { type: 'filter', path: 'a', op: 'eq', value: 1, extra: true })];
    expect(errors.map((e) => e.path)).toContain('/extra');
    expect(Value.Check(FilterStepSchema, { type: 'filter', path: 'a', op: 'like', value: 1 })).toBe(false);
    expect(Value.Check(FilterStepSchema, { type: 'filter', path: 'a..b', op: 'exists' })).toBe(false);
    expect(Value.Check(FilterStepSchema, { type: 'filter', path: 'a.__proto__', op: 'exists' })).toBe(false);
    expect(Value.Check(FilterStepSchema, { type: 'filter', path: '', op: 'exists' })).toBe(false);
    expect(Value.Check(FilterStepSchema, { type: 'set', path: 'a', op: 'exists' })).toBe(false);
    expect([...Value.Errors(FilterStepSchema, { type: 'filter', op: 'exists' })].map((e) => e.path)).toContain('/path');
  });
});

describe('filter: patterns that could stall the engine', () => {
  const step = (value: string) => ({ type: 'filter', path: 'name', op: 'matches', value }) as FilterStep;

  // Each of these takes minutes on a backtracking engine against a 30-character value; on a
  // linear-time one they are ordinary patterns.
  it.each(['(a|a)*$', '(a|aa)+$', '^(a+)+$', '(x+x+)+y', '^(\\w+\\s?)*$'])('runs %s in linear time', async (pattern) => {
    expect(filterStep.validate!(step(pattern))).toEqual([]);
    const hostile = `${'a'.repeat(30)}!`;
    expect(await filterStep.apply(event({ name: hostile }), step(pattern), ctx)).toEqual(pattern === '(a|a)*$' ? expect.anything() : null);
    // A value 10,000 times longer still answers (tens of milliseconds where it would take
    // longer than the universe's age).
    await filterStep.apply(event({ name: `${'a'.repeat(300_000)}!` }), step(pattern), ctx);
  });

  it('refuses what a linear-time engine lacks: backreferences and lookaround', () => {
    for (const pattern of ['(a*)\\1*b', '(?=a)b', '(?!a)b', '(?<=a)b', '(?<!a)b']) {
      expect(filterStep.validate!(step(pattern))).toEqual([expect.objectContaining({ pointer: '/value', code: 'unsafe_pattern' })]);
      expect(() => filterStep.apply(event({ name: 'aab' }), step(pattern), ctx)).toThrow(/linear-time/);
    }
  });

  it('refuses patterns over 1,000 characters and accepts ordinary ones', () => {
    expect(filterStep.validate!(step('x'.repeat(1001)))[0]?.code).toBe('unsafe_pattern');
    expect(filterStep.validate!(step('^[a-z]+@example\\.com$'))).toEqual([]);
    expect(filterStep.validate!(step('(?i)^BOB'))).toEqual([]);
  });

  it('matches values of any length', async () => {
    expect(await filterStep.apply(event({ name: 'a'.repeat(10_001) }), step('^a+$'), ctx)).not.toBeNull();
  });
});

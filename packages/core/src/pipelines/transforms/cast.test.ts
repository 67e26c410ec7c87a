import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import type { JsonObject, JsonValue, TransformContext, TransformEvent } from '../../plugin-api/index.js';
import { castStep, CastStepSchema, castValue, type CastTarget } from './cast.js';

const ctx: TransformContext = { pipelineId: 'pip_1', workspaceId: 'ws_1', salt: 'salt' };

function event(payload: JsonObject): TransformEvent {
  return { id: 'evt_1', type: 'order.created', occurredAt: '2026-11-22T10:00:00.000Z', payload };
}

async function cast(payload: JsonObject, path: string, to: CastTarget): Promise<JsonObject> {
  const input = event(payload);
  const before = structuredClone(input);
  const out = await castStep.apply(input, { type: 'cast', path, to }, ctx);
  expect(input).toEqual(before);
  expect(out).not.toBeNull();
  expect(out).not.toBe(input);
  return (out as TransformEvent).payload;
}

describe('cast step: apply', () => {
  it('converts the value at a nested path, keeping the rest', async () => {
    expect(await cast({ order: { total: '12.50', id: 'o1' } }, 'order.total', 'number')).toEqual({ order: { total: 12.5, id: 'o1' } });
  });

  it('leaves a missing path unchanged', async () => {
    expect(await cast({ a: 1 }, 'b', 'number')).toEqual({ a: 1 });
    expect(await cast({ a: 'x' }, 'a.b', 'timestamp')).toEqual({ a: 'x' });
  });

  it('gives null for null, whatever the target, and never dead-letters it', async () => {
    for (const to of ['string', 'number', 'boolean', 'timestamp'] as const) {
      expect(await cast({ n: null, keep: 1 }, 'n', to)).toEqual({ n: null, keep: 1 });
      expect(castValue(null, to)).toBeNull();
    }
  });

  it('throws (dead-letter) when the value cannot be converted', () => {
    expect(() => castStep.apply(event({ n: 'abc' }), { type: 'cast', path: 'n', to: 'number' }, ctx)).toThrow(
      'Cannot cast "abc" to a number.',
    );
  });

  it('does not mutate the input payload', async () => {
    const payload = { a: { n: '1' } };
    await cast(payload, 'a.n', 'number');
    expect(payload).toEqual({ a: { n: '1' } });
  });
});

describe('castValue: string', () => {
  it.each<[JsonValue, string]>([
    ['x', 'x'],
    [42, '42'],
    [1.5, '1.5'],
    [true, 'true'],
    [false, 'false'],
    [{ a: 1 }, '{"a":1}'],
    [[1, 'b'], '[1,"b"]'],
  ])('%j -> %j', (input, expected) => {
    expect(castValue(input, 'string')).toBe(expected);
  });
});

describe('castValue: number', () => {
  it.each<[JsonValue, number]>([
    [42, 42],
    ['42', 42],
    ['-1.5', -1.5],
    ['+3', 3],
    [' 7 ', 7],
    ['1e3', 1000],
    ['.5', 0.5],
    ['5.', 5],
    ['0', 0],
    [true, 1],
    [false, 0],
  ])('%j -> %j', (input, expected) => {
    expect(castValue(input, 'number')).toBe(expected);
  });

  it.each<JsonValue>(['', '   ', 'abc', '12abc', '0x10', '0b1', 'Infinity', '-Infinity', 'NaN', '1e999', '1,5', [], [1], {}])(
    'throws for %j',
    (input) => {
      expect(() => castValue(input, 'number')).toThrow(/to a number/);
    },
  );
});

describe('castValue: boolean', () => {
  it.each<[JsonValue, boolean]>([
    [true, true],
    [false, false],
    ['true', true],
    ['false', false],
    [1, true],
    [0, false],
    ['1', true],
    ['0', false],
  ])('%j -> %j', (input, expected) => {
    expect(castValue(input, 'boolean')).toBe(expected);
  });

  it.each<JsonValue>(['yes', 'TRUE', 'False', '', 2, -1, 0.5, {}, []])('throws for %j', (input) => {
    expect(() => castValue(input, 'boolean')).toThrow(/to a boolean/);
  });
});

describe('castValue: timestamp', () => {
  it.each<[JsonValue, string]>([
    ['2026-11-22T10:00:00.000Z', '2026-11-22T10:00:00.000Z'],
    ['2026-11-22T10:00:00Z', '2026-11-22T10:00:00.000Z'],
    ['2026-11-22T10:00Z', '2026-11-22T10:00:00.000Z'],
    ['2026-11-22T10:00:00.5Z', '2026-11-22T10:00:00.500Z'],
    ['2026-11-22T10:00:00.123456789Z', '2026-11-22T10:00:00.123Z'],
    ['2026-11-22T12:30:00+02:30', '2026-11-22T10:00:00.000Z'],
    ['2026-11-22T05:00:00-0500', '2026-11-22T10:00:00.000Z'],
    ['2026-11-22 10:00:00z', '2026-11-22T10:00:00.000Z'],
    ['2026-11-22', '2026-11-22T00:00:00.000Z'],
    ['2024-02-29', '2024-02-29T00:00:00.000Z'],
    // No offset: read as UTC, never as the host's local time.
    ['2026-11-22T10:00:00', '2026-11-22T10:00:00.000Z'],
    [0, '1970-01-01T00:00:00.000Z'],
    [1795341600000, '2026-11-22T10:00:00.000Z'],
    [-86400000, '1969-12-31T00:00:00.000Z'],
  ])('%j -> %j', (input, expected) => {
    expect(castValue(input, 'timestamp')).toBe(expected);
  });

  it.each<JsonValue>([
    'yesterday',
    'Nov 22 2026',
    '2026-13-01',
    '2026-02-30',
    '2025-02-29',
    '2026-11-31',
    '2026-11-22T24:00:00Z',
    '2026-11-22T10:60:00Z',
    '2026-11-22T10:00:00+25:00',
    '1795255200000',
    '',
    8.64e15 + 1,
    true,
    {},
  ])('throws for %j', (input) => {
    expect(() => castValue(input, 'timestamp')).toThrow(/to a timestamp/);
  });
});

describe('cast step: schema', () => {
  it('accepts each target and rejects others, unknown fields and bad paths', () => {
    for (const to of ['string', 'number', 'boolean', 'timestamp']) {
      expect(Value.Check(CastStepSchema, { type: 'cast', path: 'a.b', to })).toBe(true);
    }
    expect(Value.Check(CastStepSchema, { type: 'cast', path: 'a', to: 'date' })).toBe(false);
    expect(Value.Check(CastStepSchema, { type: 'cast', path: 'a' })).toBe(false);
    expect([...Value.Errors(CastStepSchema, { type: 'cast', path: 'a', to: 'number', strict: true })].map((e) => e.path)).toContain(
      '/strict',
    );
    expect(Value.Check(CastStepSchema, { type: 'cast', path: 'a.', to: 'number' })).toBe(false);
    expect(Value.Check(CastStepSchema, { type: 'cast', path: 'a.prototype', to: 'number' })).toBe(false);
  });
});

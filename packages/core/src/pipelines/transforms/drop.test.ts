import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import type { JsonObject, TransformContext, TransformEvent } from '../../plugin-api/index.js';
import { dropStep, DropStepSchema } from './drop.js';

const ctx: TransformContext = { pipelineId: 'pip_1', workspaceId: 'ws_1', salt: 'salt' };

function event(payload: JsonObject): TransformEvent {
  return { id: 'evt_1', type: 'order.created', occurredAt: '2026-11-22T10:00:00.000Z', payload };
}

async function run(payload: JsonObject, paths: string[]): Promise<JsonObject> {
  const input = event(payload);
  const before = structuredClone(input);
  const out = await dropStep.apply(input, { type: 'drop', paths }, ctx);
  expect(input).toEqual(before);
  expect(out).not.toBeNull();
  expect(out).not.toBe(input);
  return (out as TransformEvent).payload;
}

describe('drop step', () => {
  it('removes top-level and nested values', async () => {
    expect(await run({ a: 1, b: 2, c: { d: 3, e: 4 } }, ['a', 'c.d'])).toEqual({ b: 2, c: { e: 4 } });
  });

  it('removes whole objects and null values', async () => {
    expect(await run({ a: { deep: 1 }, n: null, k: 1 }, ['a', 'n'])).toEqual({ k: 1 });
  });

  it('skips missing paths', async () => {
    expect(await run({ a: 1 }, ['missing', 'a.b', 'x.y.z'])).toEqual({ a: 1 });
    expect(await run({ a: 1, b: 2 }, ['missing', 'b'])).toEqual({ a: 1 });
  });

  it('splices array elements', async () => {
    expect(await run({ items: [{ secret: 1, sku: 'a' }, 'b'] }, ['items.0.secret', 'items.1'])).toEqual({ items: [{ sku: 'a' }] });
  });

  it('schema: requires a non-empty array of valid paths, rejects unknown fields', () => {
    expect(Value.Check(DropStepSchema, { type: 'drop', paths: ['a', 'b.c'] })).toBe(true);
    expect(Value.Check(DropStepSchema, { type: 'drop', paths: [] })).toBe(false);
    expect(Value.Check(DropStepSchema, { type: 'drop', paths: 'a' })).toBe(false);
    expect(Value.Check(DropStepSchema, { type: 'drop' })).toBe(false);
    expect(Value.Check(DropStepSchema, { type: 'drop', paths: ['a', ''] })).toBe(false);
    expect([...Value.Errors(DropStepSchema, { type: 'drop', paths: ['ok', 'a..b'] })].map((e) => e.path)).toContain('/paths/1');
    expect(Value.Check(DropStepSchema, { type: 'drop', paths: ['prototype'] })).toBe(false);
    expect([...Value.Errors(DropStepSchema, { type: 'drop', paths: ['a'], path: 'b' })].map((e) => e.path)).toContain('/path');
  });
});

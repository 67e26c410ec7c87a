import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import type { JsonObject, TransformContext, TransformEvent } from '../../plugin-api/index.js';
import { setStep, SetStepSchema } from './set.js';

const ctx: TransformContext = { pipelineId: 'pip_1', workspaceId: 'ws_1', salt: 'salt' };

function event(payload: JsonObject): TransformEvent {
  return { id: 'evt_1', type: 'order.created', occurredAt: '2026-11-22T10:00:00.000Z', payload };
}

async function run(payload: JsonObject, path: string, value: unknown): Promise<TransformEvent> {
  const input = event(payload);
  const before = structuredClone(input);
  const out = await setStep.apply(input, { type: 'set', path, value }, ctx);
  expect(input).toEqual(before);
  expect(out).not.toBeNull();
  return out as TransformEvent;
}

describe('set step', () => {
  it('sets a top-level constant, keeping the rest of the event', async () => {
    const out = await run({ a: 1 }, 'source', 'shop');
    expect(out).toEqual({ ...event({ a: 1, source: 'shop' }) });
  });

  it('overwrites an existing value', async () => {
    expect((await run({ a: 1 }, 'a', 2)).payload).toEqual({ a: 2 });
  });

  it('creates intermediate objects for nested paths', async () => {
    expect((await run({ customer: { id: 1 } }, 'customer.meta.origin', 'api')).payload).toEqual({
      customer: { id: 1, meta: { origin: 'api' } },
    });
  });

  it('accepts any JSON value, null and objects included', async () => {
    expect((await run({}, 'x', null)).payload).toEqual({ x: null });
    expect((await run({}, 'x', { deep: [1, { two: 2 }] })).payload).toEqual({ x: { deep: [1, { two: 2 }] } });
    expect((await run({}, 'x', false)).payload).toEqual({ x: false });
  });

  it('does not share the constant between events', async () => {
    const step = { type: 'set' as const, path: 'tags', value: ['a'] };
    const first = await setStep.apply(event({}), step, ctx);
    (first?.payload.tags as string[]).push('mutated');
    const second = await setStep.apply(event({}), step, ctx);
    expect(second?.payload).toEqual({ tags: ['a'] });
    expect(step.value).toEqual(['a']);
  });

  it('does not mutate the input, even nested', async () => {
    const payload = { customer: { id: 1 } };
    const out = await run(payload, 'customer.id', 2);
    expect(payload.customer.id).toBe(1);
    expect(out.payload.customer).not.toBe(payload.customer);
  });

  it('throws when a non-object blocks the path', () => {
    expect(() => setStep.apply(event({ customer: 'c' }), { type: 'set', path: 'customer.email', value: 'e' }, ctx)).toThrow(
      /is a string/,
    );
  });

  it('schema: requires path and value, rejects unknown fields and bad paths', () => {
    expect(Value.Check(SetStepSchema, { type: 'set', path: 'a.b', value: null })).toBe(true);
    expect(Value.Check(SetStepSchema, { type: 'set', path: 'a', value: { x: [1] } })).toBe(true);
    expect([...Value.Errors(SetStepSchema, { type: 'set', path: 'a' })].map((e) => e.path)).toContain('/value');
    expect([...Value.Errors(SetStepSchema, { type: 'set', value: 1 })].map((e) => e.path)).toContain('/path');
    expect([...Value.Errors(SetStepSchema, { type: 'set', path: 'a', value: 1, extra: 1 })].map((e) => e.path)).toContain('/extra');
    expect(Value.Check(SetStepSchema, { type: 'set', path: 'a.', value: 1 })).toBe(false);
    expect(Value.Check(SetStepSchema, { type: 'set', path: '__proto__.x', value: 1 })).toBe(false);
    expect(Value.Check(SetStepSchema, { type: 'set', path: 'x.constructor', value: 1 })).toBe(false);
  });
});

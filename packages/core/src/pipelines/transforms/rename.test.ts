import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import type { JsonObject, TransformContext, TransformEvent } from '../../plugin-api/index.js';
import { renameStep, RenameStepSchema } from './rename.js';

const ctx: TransformContext = { pipelineId: 'pip_1', workspaceId: 'ws_1', salt: 'salt' };

function event(payload: JsonObject): TransformEvent {
  return { id: 'evt_1', type: 'order.created', occurredAt: '2026-11-22T10:00:00.000Z', payload };
}

async function run(payload: JsonObject, from: string, to: string): Promise<JsonObject> {
  const input = event(payload);
  const before = structuredClone(input);
  const out = await renameStep.apply(input, { type: 'rename', from, to }, ctx);
  expect(input).toEqual(before);
  expect(out).not.toBeNull();
  expect(out).not.toBe(input);
  expect({ ...out, payload: undefined }).toEqual({ ...input, payload: undefined });
  return (out as TransformEvent).payload;
}

describe('rename step', () => {
  it('moves a top-level value', async () => {
    expect(await run({ a: 1, b: 2 }, 'a', 'c')).toEqual({ b: 2, c: 1 });
  });

  it('moves between nested paths, creating intermediate objects', async () => {
    expect(await run({ customer: { mail: 'e', id: 1 } }, 'customer.mail', 'contact.email')).toEqual({
      customer: { id: 1 },
      contact: { email: 'e' },
    });
  });

  it('moves objects and falsy values alike', async () => {
    expect(await run({ a: { x: [1] } }, 'a', 'b')).toEqual({ b: { x: [1] } });
    expect(await run({ a: null }, 'a', 'b')).toEqual({ b: null });
    expect(await run({ a: 0 }, 'a', 'b')).toEqual({ b: 0 });
  });

  it('replaces an existing value at the target', async () => {
    expect(await run({ a: 1, b: 2 }, 'a', 'b')).toEqual({ b: 1 });
  });

  it('can nest a value under its own old name', async () => {
    expect(await run({ a: 1 }, 'a', 'a.value')).toEqual({ a: { value: 1 } });
    expect(await run({ a: { b: 1 } }, 'a.b', 'a')).toEqual({ a: 1 });
  });

  it('leaves the event unchanged when from is missing', async () => {
    expect(await run({ a: 1 }, 'missing', 'b')).toEqual({ a: 1 });
    expect(await run({ a: 1 }, 'a.b', 'c')).toEqual({ a: 1 });
  });

  it('leaves the event unchanged when from equals to', async () => {
    expect(await run({ a: 1 }, 'a', 'a')).toEqual({ a: 1 });
  });

  it('does not share the moved value with the input', async () => {
    const payload = { a: { x: 1 } };
    const out = await run(payload, 'a', 'b');
    expect(out.b).not.toBe(payload.a);
  });

  it('throws when a non-object blocks the target', () => {
    expect(() => renameStep.apply(event({ a: 1, b: 'text' }), { type: 'rename', from: 'a', to: 'b.c' }, ctx)).toThrow(/is a string/);
  });

  it('schema: requires from and to, rejects unknown fields and bad paths', () => {
    expect(Value.Check(RenameStepSchema, { type: 'rename', from: 'a', to: 'b.c' })).toBe(true);
    expect([...Value.Errors(RenameStepSchema, { type: 'rename', from: 'a' })].map((e) => e.path)).toContain('/to');
    expect([...Value.Errors(RenameStepSchema, { type: 'rename', from: 'a', to: 'b', path: 'c' })].map((e) => e.path)).toContain('/path');
    expect(Value.Check(RenameStepSchema, { type: 'rename', from: 'a', to: '__proto__' })).toBe(false);
    expect(Value.Check(RenameStepSchema, { type: 'rename', from: '.a', to: 'b' })).toBe(false);
  });
});

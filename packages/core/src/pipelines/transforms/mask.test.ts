import { createHash } from 'node:crypto';
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import type { JsonObject, TransformContext, TransformEvent } from '../../plugin-api/index.js';
import { maskHash, maskStep, MaskStepSchema, REDACTED, type MaskStep } from './mask.js';

const ctx: TransformContext = { pipelineId: 'pip_1', workspaceId: 'ws_1', salt: 'pipeline-salt' };

function event(payload: JsonObject): TransformEvent {
  return { id: 'evt_1', type: 'order.created', occurredAt: '2026-11-22T10:00:00.000Z', payload };
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

async function run(payload: JsonObject, step: Omit<MaskStep, 'type'>, context = ctx): Promise<JsonObject> {
  const input = event(payload);
  const before = structuredClone(input);
  const out = await maskStep.apply(input, { type: 'mask', ...step }, context);
  expect(input).toEqual(before);
  expect(out).not.toBeNull();
  expect(out).not.toBe(input);
  return (out as TransformEvent).payload;
}

describe('mask step', () => {
  it('hashes by default: hex SHA-256 of salt, colon, JSON of the value', async () => {
    const out = await run({ customer: { email: 'ada@example.com', id: 1 } }, { path: 'customer.email' });
    expect(out).toEqual({ customer: { email: sha256('pipeline-salt:"ada@example.com"'), id: 1 } });
    expect(out.customer).toMatchObject({ email: expect.stringMatching(/^[0-9a-f]{64}$/) });
  });

  it('hash is stable per salt and differs across salts and JSON types', async () => {
    const a = await run({ v: 'x' }, { path: 'v', method: 'hash' });
    const b = await run({ v: 'x' }, { path: 'v', method: 'hash' });
    const other = await run({ v: 'x' }, { path: 'v' }, { ...ctx, salt: 'other' });
    expect(a.v).toBe(b.v);
    expect(a.v).not.toBe(other.v);
    expect(maskHash('s', 1)).not.toBe(maskHash('s', '1'));
  });

  it('hashes non-string values through their JSON text', async () => {
    expect((await run({ n: 42 }, { path: 'n' })).n).toBe(sha256('pipeline-salt:42'));
    expect((await run({ n: null }, { path: 'n' })).n).toBe(sha256('pipeline-salt:null'));
    expect((await run({ o: { a: [1] } }, { path: 'o' })).o).toBe(sha256('pipeline-salt:{"a":[1]}'));
  });

  it('redacts with ***', async () => {
    expect(await run({ card: '4242', keep: 1 }, { path: 'card', method: 'redact' })).toEqual({ card: REDACTED, keep: 1 });
    expect(REDACTED).toBe('***');
    expect(await run({ a: { b: { c: 1 } } }, { path: 'a.b', method: 'redact' })).toEqual({ a: { b: '***' } });
  });

  it('leaves a missing path alone', async () => {
    expect(await run({ a: 1 }, { path: 'customer.email' })).toEqual({ a: 1 });
    expect(await run({ a: 'text' }, { path: 'a.b', method: 'redact' })).toEqual({ a: 'text' });
  });

  it('masks array elements by index', async () => {
    expect(await run({ emails: ['a', 'b'] }, { path: 'emails.1', method: 'redact' })).toEqual({ emails: ['a', '***'] });
  });

  it('schema: method is optional and limited; unknown fields and bad paths rejected', () => {
    expect(Value.Check(MaskStepSchema, { type: 'mask', path: 'a' })).toBe(true);
    expect(Value.Check(MaskStepSchema, { type: 'mask', path: 'a', method: 'hash' })).toBe(true);
    expect(Value.Check(MaskStepSchema, { type: 'mask', path: 'a', method: 'redact' })).toBe(true);
    expect(Value.Check(MaskStepSchema, { type: 'mask', path: 'a', method: 'md5' })).toBe(false);
    expect([...Value.Errors(MaskStepSchema, { type: 'mask', path: 'a', salt: 'x' })].map((e) => e.path)).toContain('/salt');
    expect(Value.Check(MaskStepSchema, { type: 'mask', path: 'a..b' })).toBe(false);
    expect(Value.Check(MaskStepSchema, { type: 'mask', path: 'constructor' })).toBe(false);
    expect(Value.Check(MaskStepSchema, { type: 'mask' })).toBe(false);
  });
});

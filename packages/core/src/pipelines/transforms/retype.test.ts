import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import type { JsonObject, TransformContext, TransformEvent } from '../../plugin-api/index.js';
import { fillRetypeTemplate, RETYPE_MAX_LENGTH, retypePlaceholders, retypeStep, RetypeStepSchema } from './retype.js';

const ctx: TransformContext = { pipelineId: 'pip_1', workspaceId: 'ws_1', salt: 'salt' };

function event(payload: JsonObject): TransformEvent {
  return { id: 'evt_1', type: 'order.created', occurredAt: '2026-11-22T10:00:00.000Z', payload };
}

async function retype(payload: JsonObject, to: string): Promise<TransformEvent> {
  const input = event(payload);
  const before = structuredClone(input);
  const out = await retypeStep.apply(input, { type: 'retype', to }, ctx);
  expect(input).toEqual(before);
  expect(out).not.toBeNull();
  expect(out).not.toBe(input);
  expect(out?.payload).toEqual(input.payload);
  return out as TransformEvent;
}

describe('retype step', () => {
  it('sets a constant type', async () => {
    const out = await retype({ a: 1 }, 'order.imported');
    expect(out).toEqual({ ...event({ a: 1 }), type: 'order.imported' });
  });

  it('fills placeholders from nested payload paths', async () => {
    expect((await retype({ status: 'shipped' }, 'order.{payload.status}')).type).toBe('order.shipped');
    expect((await retype({ meta: { kind: 'refund', v: 2 } }, '{payload.meta.kind}.v{payload.meta.v}')).type).toBe('refund.v2');
    expect((await retype({ tags: ['first'] }, 'tag.{payload.tags.0}')).type).toBe('tag.first');
  });

  it('inserts strings as they are and other values as JSON', async () => {
    expect((await retype({ s: 'a"b' }, 'x.{payload.s}')).type).toBe('x.a"b');
    expect((await retype({ n: 1.5 }, 'x.{payload.n}')).type).toBe('x.1.5');
    expect((await retype({ b: false }, 'x.{payload.b}')).type).toBe('x.false');
    expect((await retype({ n: null }, 'x.{payload.n}')).type).toBe('x.null');
    expect((await retype({ o: { k: [1] } }, 'x.{payload.o}')).type).toBe('x.{"k":[1]}');
  });

  it('fills the same placeholder every time it appears', async () => {
    expect((await retype({ a: 'z' }, '{payload.a}.{payload.a}')).type).toBe('z.z');
  });

  it('leaves braces that are not payload placeholders as literal text', async () => {
    expect((await retype({ a: 'z' }, '{event.id}.{payload}.{a}')).type).toBe('{event.id}.{payload}.{a}');
  });

  it('does not re-expand placeholders brought in by a value', async () => {
    expect((await retype({ a: '{payload.b}', b: 'no' }, '{payload.a}')).type).toBe('{payload.b}');
  });

  it('throws (dead-letter) when a placeholder value is missing', () => {
    expect(() => retypeStep.apply(event({ a: 1 }), { type: 'retype', to: 'order.{payload.status}' }, ctx)).toThrow(
      /no value at "status"/,
    );
    expect(() => retypeStep.apply(event({ a: 'x' }), { type: 'retype', to: '{payload.a.b}' }, ctx)).toThrow(/no value/);
  });

  it('throws when the filled type is empty or too long', () => {
    expect(() => retypeStep.apply(event({ a: '' }), { type: 'retype', to: '{payload.a}' }, ctx)).toThrow(/empty/);
    const long = 'x'.repeat(RETYPE_MAX_LENGTH);
    expect(() => retypeStep.apply(event({ a: long }), { type: 'retype', to: 'y.{payload.a}' }, ctx)).toThrow(/longer than/);
  });

  it('throws on a forbidden placeholder path that skipped validation', () => {
    expect(() => retypeStep.apply(event({}), { type: 'retype', to: '{payload.__proto__}' }, ctx)).toThrow(/not allowed/);
  });

  it('helpers: lists placeholders and fills templates', () => {
    expect(retypePlaceholders('a.{payload.x}.{payload.y.z}.{other}')).toEqual(['x', 'y.z']);
    expect(fillRetypeTemplate('{payload.x}', { x: 3 })).toBe('3');
  });
});

describe('retype step: validate', () => {
  const validate = (to: string) => retypeStep.validate?.({ type: 'retype', to }) ?? [];

  it('accepts templates with valid placeholders', () => {
    expect(validate('order.created')).toEqual([]);
    expect(validate('order.{payload.status}.{payload.meta.kind}')).toEqual([]);
  });

  it.each(['{payload.}', '{payload.a..b}', '{payload.__proto__}', '{payload.a.constructor}', '{payload..a}'])(
    'reports an invalid placeholder in %j',
    (to) => {
      expect(validate(to)).toEqual([{ pointer: '/to', code: 'invalid_placeholder', detail: expect.any(String) }]);
    },
  );
});

describe('retype step: schema', () => {
  it('requires a non-empty to and rejects unknown fields', () => {
    expect(Value.Check(RetypeStepSchema, { type: 'retype', to: 'x' })).toBe(true);
    expect(Value.Check(RetypeStepSchema, { type: 'retype', to: '' })).toBe(false);
    expect(Value.Check(RetypeStepSchema, { type: 'retype' })).toBe(false);
    expect(Value.Check(RetypeStepSchema, { type: 'retype', to: 1 })).toBe(false);
    expect(Value.Check(RetypeStepSchema, { type: 'retype', to: 'x'.repeat(RETYPE_MAX_LENGTH + 1) })).toBe(false);
    expect([...Value.Errors(RetypeStepSchema, { type: 'retype', to: 'x', from: 'y' })].map((e) => e.path)).toContain('/from');
  });
});

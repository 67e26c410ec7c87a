import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { isFerryError } from './errors.js';
import { assertSchema, compile, pointerToken, schemaErrors } from './validation.js';

const DISTINCTIVE = 'zz-Distinctive-Value-93f1';

const Schema = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    mode: Type.Union([Type.Literal('insert'), Type.Literal('upsert')]),
    count: Type.Optional(Type.Integer()),
    enabled: Type.Optional(Type.Boolean()),
    tags: Type.Optional(Type.Array(Type.String())),
    nested: Type.Optional(
      Type.Object({ inner: Type.String(), id: Type.Optional(Type.String()) }, { additionalProperties: false }),
    ),
  },
  { additionalProperties: false },
);

const valid = { name: 'n', mode: 'insert' };

describe('schemaErrors', () => {
  it('returns nothing for a valid value', () => {
    expect(schemaErrors(Schema, valid)).toEqual([]);
    expect(schemaErrors(Schema, { ...valid, count: 3, enabled: true, tags: ['a'], nested: { inner: 'x' } })).toEqual([]);
  });

  it('refuses U+0000 in any string or key as invalid_character, on top of schema errors', () => {
    expect(schemaErrors(Schema, { ...valid, name: 'a\u0000b', tags: ['ok', '\u0000'] })).toEqual([
      { pointer: '/name', code: 'invalid_character', detail: expect.any(String) },
      { pointer: '/tags/1', code: 'invalid_character', detail: expect.any(String) },
    ]);
    const free = Type.Record(Type.String(), Type.Unknown());
    expect(schemaErrors(free, { 'a/b\u0000': 1, deep: { x: [{ y: '\u0000' }] } }, { prefix: '/config' }).map((e) => [e.pointer, e.code])).toEqual([
      ['/config/a~1b\u0000', 'invalid_character'],
      ['/config/deep/x/0/y', 'invalid_character'],
    ]);
    // A pointer already reported by the schema is not reported twice.
    expect(schemaErrors(Schema, { ...valid, mode: '\u0000' }).map((e) => e.code)).toEqual(['enum']);
  });

  it('reports every missing required field as required', () => {
    const errors = schemaErrors(Schema, {});
    expect(errors.map((e) => [e.pointer, e.code])).toEqual([
      ['/name', 'required'],
      ['/mode', 'required'],
    ]);
  });

  it('reports an unknown field as unknown_field', () => {
    expect(schemaErrors(Schema, { ...valid, surprise: 1 })).toEqual([
      { pointer: '/surprise', code: 'unknown_field', detail: expect.any(String) },
    ]);
  });

  it('reports listed top-level fields as read_only and others as unknown_field', () => {
    const errors = schemaErrors(Schema, { ...valid, id: 'con_1', created_at: 'x', other: 1 }, { readOnly: ['id', 'created_at'] });
    const byPointer = Object.fromEntries(errors.map((e) => [e.pointer, e.code]));
    expect(byPointer).toEqual({ '/id': 'read_only', '/created_at': 'read_only', '/other': 'unknown_field' });
  });

  it('does not report a nested field as read_only even when its name is listed', () => {
    const errors = schemaErrors(Schema, { ...valid, nested: { inner: 'x', id: 'ok', extra: 1 } }, { readOnly: ['extra'] });
    expect(errors).toEqual([{ pointer: '/nested/extra', code: 'unknown_field', detail: expect.any(String) }]);
  });

  it.each([
    ['name', 5],
    ['count', 'three'],
    ['count', 1.5],
    ['enabled', 'yes'],
    ['tags', 'a'],
    ['nested', 'x'],
  ])('reports a wrong type on %s as type', (field, value) => {
    expect(schemaErrors(Schema, { ...valid, [field]: value })).toEqual([{ pointer: `/${field}`, code: 'type', detail: expect.any(String) }]);
  });

  it('reports a non-object root as type with an empty pointer', () => {
    expect(schemaErrors(Schema, 'string')).toEqual([{ pointer: '', code: 'type', detail: expect.any(String) }]);
  });

  it('reports a too short string as too_short', () => {
    expect(schemaErrors(Schema, { ...valid, name: '' })).toEqual([{ pointer: '/name', code: 'too_short', detail: expect.any(String) }]);
  });

  it('reports a value outside a union of literals as enum, naming the allowed values', () => {
    const errors = schemaErrors(Schema, { ...valid, mode: 'merge' });
    expect(errors).toEqual([{ pointer: '/mode', code: 'enum', detail: expect.stringContaining('"insert"') }]);
    expect(errors[0]?.detail).toContain('"upsert"');
  });

  it('treats a nullable union of literals as enum too', () => {
    const S = Type.Object({ m: Type.Union([Type.Literal('a'), Type.Null()]) });
    expect(schemaErrors(S, { m: 'b' })).toEqual([{ pointer: '/m', code: 'enum', detail: expect.stringContaining('null') }]);
  });

  it('reports a single literal mismatch as enum', () => {
    const S = Type.Object({ type: Type.Literal('filter') });
    expect(schemaErrors(S, { type: 'map' })).toEqual([{ pointer: '/type', code: 'enum', detail: expect.any(String) }]);
  });

  it("reports a nullable field's own error when given something else than null", () => {
    const S = Type.Object({ days: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()]), note: Type.Union([Type.String({ maxLength: 3 }), Type.Null()]) });
    expect(schemaErrors(S, { days: 0, note: null })).toEqual([{ pointer: '/days', code: 'out_of_range', detail: expect.any(String) }]);
    expect(schemaErrors(S, { days: 1.5, note: 'long' })).toEqual([
      { pointer: '/days', code: 'type', detail: expect.any(String) },
      { pointer: '/note', code: 'too_long', detail: expect.any(String) },
    ]);
    expect(schemaErrors(S, { days: null, note: null })).toEqual([]);
  });

  it('keeps other unions generic', () => {
    const S = Type.Object({ v: Type.Union([Type.String(), Type.Number()]) });
    expect(schemaErrors(S, { v: true })).toEqual([{ pointer: '/v', code: 'invalid', detail: expect.any(String) }]);
  });

  it('reports nested fields with their full pointer and the prefix', () => {
    const errors = schemaErrors(Schema, { ...valid, nested: { inner: 5, extra: 1 }, tags: ['ok', 7] }, { prefix: '/config' });
    expect(errors.map((e) => [e.pointer, e.code]).sort()).toEqual([
      ['/config/nested/extra', 'unknown_field'],
      ['/config/nested/inner', 'type'],
      ['/config/tags/1', 'type'],
    ]);
  });

  it('reports a missing nested required field', () => {
    expect(schemaErrors(Schema, { ...valid, nested: {} })).toEqual([{ pointer: '/nested/inner', code: 'required', detail: expect.any(String) }]);
  });

  it('escapes pointer tokens per RFC 6901', () => {
    expect(schemaErrors(Schema, { ...valid, 'a/b~c': 1 })[0]?.pointer).toBe('/a~1b~0c');
  });

  it('reports at most one error per pointer', () => {
    const S = Type.Object({ v: Type.String({ minLength: 5, pattern: '^[0-9]+$' }) });
    const errors = schemaErrors(S, { v: 'ab' });
    expect(errors).toHaveLength(1);
    expect(errors[0]?.pointer).toBe('/v');
    const many = schemaErrors(Schema, { name: 1, mode: 'x', count: 'y', id: 1, nested: { inner: 1 } }, { readOnly: ['id'] });
    const pointers = many.map((e) => e.pointer);
    expect(new Set(pointers).size).toBe(pointers.length);
    expect(pointers.length).toBe(5);
  });

  it('never echoes the offending value in a detail', () => {
    const S = Type.Object(
      {
        name: Type.String({ maxLength: 3 }),
        pattern: Type.String({ pattern: '^[0-9]+$' }),
        mode: Type.Union([Type.Literal('a'), Type.Literal('b')]),
        lit: Type.Literal('x'),
        num: Type.Number(),
        list: Type.Array(Type.String(), { maxItems: 1 }),
      },
      { additionalProperties: false },
    );
    const errors = schemaErrors(
      S,
      {
        name: DISTINCTIVE,
        pattern: DISTINCTIVE,
        mode: DISTINCTIVE,
        lit: DISTINCTIVE,
        num: DISTINCTIVE,
        list: [DISTINCTIVE, DISTINCTIVE],
        id: DISTINCTIVE,
        [DISTINCTIVE]: DISTINCTIVE,
      },
      { readOnly: ['id'] },
    );
    expect(errors.length).toBeGreaterThanOrEqual(8);
    for (const error of errors) expect(error.detail).not.toContain(DISTINCTIVE);
  });
});

describe('assertSchema', () => {
  it('passes a valid value and throws validation_failed with the field errors otherwise', () => {
    expect(() => assertSchema(Schema, valid)).not.toThrow();
    let caught: unknown;
    try {
      assertSchema(Schema, { mode: 'insert', x: 1 }, { prefix: '/body' });
    } catch (error) {
      caught = error;
    }
    expect(isFerryError(caught, 'validation_failed')).toBe(true);
    expect((caught as { errors: { pointer: string; code: string }[] }).errors.map((e) => [e.pointer, e.code]).sort()).toEqual([
      ['/body/name', 'required'],
      ['/body/x', 'unknown_field'],
    ]);
  });
});

describe('compile', () => {
  it('caches the compiled checker per schema', () => {
    expect(compile(Schema)).toBe(compile(Schema));
    expect(compile(Type.Object({}))).not.toBe(compile(Type.Object({})));
  });
});

describe('pointerToken', () => {
  it('escapes ~ before / (RFC 6901), so the two never collide', () => {
    expect(pointerToken('a/b')).toBe('a~1b');
    expect(pointerToken('a~b')).toBe('a~0b');
    expect(pointerToken('~1')).toBe('~01');
    expect(pointerToken('plain')).toBe('plain');
  });

  it('checks strings at any depth of object without overflowing the stack', () => {
    let deep: unknown = 'a\u0000';
    for (let i = 0; i < 100_000; i++) deep = { k: deep };
    const errors = schemaErrors(Type.Unknown(), deep);
    expect(errors).toHaveLength(1);
    expect(errors[0]!.code).toBe('invalid_character');
  });
});

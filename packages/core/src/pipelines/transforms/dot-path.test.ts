import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../plugin-api/index.js';
import { DOT_PATH_PATTERN, DotPath, DotPathError, copyAlong, deletePath, getPath, hasPath, parseDotPath, setPath, withoutPath } from './dot-path.js';

describe('parseDotPath', () => {
  it('splits on dots', () => {
    expect(parseDotPath('customer.email')).toEqual(['customer', 'email']);
    expect(parseDotPath('a')).toEqual(['a']);
  });

  it.each(['', '.', 'a.', '.a', 'a..b'])('rejects empty segments in %j', (path) => {
    expect(() => parseDotPath(path)).toThrow(DotPathError);
  });

  it.each(['__proto__', 'a.__proto__', 'constructor.x', 'a.prototype.b'])('rejects forbidden segment in %j', (path) => {
    expect(() => parseDotPath(path)).toThrow(/not allowed/);
  });

  it('allows names that merely contain a forbidden word', () => {
    expect(parseDotPath('constructorName.__proto__x.prototypes')).toEqual(['constructorName', '__proto__x', 'prototypes']);
  });
});

describe('getPath / hasPath', () => {
  const payload: JsonObject = { customer: { email: 'a@b.c', tags: ['x', { id: 7 }] }, none: null, zero: 0 };

  it('reads nested values', () => {
    expect(getPath(payload, 'customer.email')).toBe('a@b.c');
    expect(getPath(payload, 'customer')).toEqual({ email: 'a@b.c', tags: ['x', { id: 7 }] });
  });

  it('enters arrays by canonical index', () => {
    expect(getPath(payload, 'customer.tags.0')).toBe('x');
    expect(getPath(payload, 'customer.tags.1.id')).toBe(7);
    expect(getPath(payload, 'customer.tags.01')).toBeUndefined();
    expect(getPath(payload, 'customer.tags.2')).toBeUndefined();
    expect(getPath(payload, 'customer.tags.length')).toBeUndefined();
  });

  it('returns undefined for missing paths and through primitives', () => {
    expect(getPath(payload, 'customer.phone')).toBeUndefined();
    expect(getPath(payload, 'customer.email.length')).toBeUndefined();
    expect(getPath(payload, 'none.x')).toBeUndefined();
    expect(getPath(payload, 'missing.deeply.nested')).toBeUndefined();
  });

  it('ignores inherited members', () => {
    expect(getPath(payload, 'toString')).toBeUndefined();
    expect(getPath(payload, 'customer.hasOwnProperty')).toBeUndefined();
    expect(hasPath(payload, 'valueOf')).toBe(false);
  });

  it('counts null and falsy values as present', () => {
    expect(hasPath(payload, 'none')).toBe(true);
    expect(hasPath(payload, 'zero')).toBe(true);
    expect(hasPath(payload, 'nope')).toBe(false);
  });

  it('throws on invalid paths', () => {
    expect(() => getPath(payload, 'a..b')).toThrow(DotPathError);
    expect(() => hasPath(payload, '__proto__')).toThrow(DotPathError);
  });
});

describe('setPath', () => {
  it('sets top-level and nested values, creating intermediate objects', () => {
    const payload: JsonObject = { a: 1 };
    setPath(payload, 'a', 2);
    setPath(payload, 'b.c.d', 'x');
    expect(payload).toEqual({ a: 2, b: { c: { d: 'x' } } });
  });

  it('keeps siblings of existing intermediate objects', () => {
    const payload: JsonObject = { customer: { name: 'n' } };
    setPath(payload, 'customer.email', 'e');
    expect(payload).toEqual({ customer: { name: 'n', email: 'e' } });
  });

  it('replaces an existing array element and descends into one', () => {
    const payload: JsonObject = { items: [{ sku: 'a' }, 'b'] };
    setPath(payload, 'items.1', 'c');
    setPath(payload, 'items.0.qty', 2);
    expect(payload).toEqual({ items: [{ sku: 'a', qty: 2 }, 'c'] });
  });

  it('refuses to append to or index past an array', () => {
    const payload: JsonObject = { items: ['a'] };
    expect(() => setPath(payload, 'items.1', 'b')).toThrow(/array without an element/);
    expect(() => setPath(payload, 'items.x', 'b')).toThrow(/array/);
    expect(() => setPath(payload, 'items.5.sku', 'b')).toThrow(/array/);
    expect(payload).toEqual({ items: ['a'] });
  });

  it('refuses to overwrite a primitive or null in the way', () => {
    const payload: JsonObject = { a: 'text', n: null, items: [1] };
    expect(() => setPath(payload, 'a.b', 1)).toThrow(/"a" is a string/);
    expect(() => setPath(payload, 'n.b', 1)).toThrow(/is null/);
    expect(() => setPath(payload, 'items.0.x', 1)).toThrow(/"items.0" is a number/);
  });

  it('never touches Object.prototype', () => {
    const payload: JsonObject = {};
    expect(() => setPath(payload, '__proto__.polluted', true)).toThrow(DotPathError);
    expect(() => setPath(payload, 'constructor.prototype.polluted', true)).toThrow(DotPathError);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('creates an own property even when the name is inherited', () => {
    const payload: JsonObject = {};
    setPath(payload, 'toString.x', 1);
    expect(payload).toEqual({ toString: { x: 1 } });
  });
});

describe('deletePath', () => {
  it('removes nested values and reports whether it did', () => {
    const payload: JsonObject = { a: { b: 1, c: 2 } };
    expect(deletePath(payload, 'a.b')).toBe(true);
    expect(deletePath(payload, 'a.b')).toBe(false);
    expect(deletePath(payload, 'x.y')).toBe(false);
    expect(deletePath(payload, 'a.c.d')).toBe(false);
    expect(payload).toEqual({ a: { c: 2 } });
  });

  it('splices array elements', () => {
    const payload: JsonObject = { items: ['a', 'b', 'c'] };
    expect(deletePath(payload, 'items.0')).toBe(true);
    expect(deletePath(payload, 'items.5')).toBe(false);
    expect(deletePath(payload, 'items.x')).toBe(false);
    expect(payload).toEqual({ items: ['b', 'c'] });
  });

  it('ignores inherited members and rejects forbidden segments', () => {
    const payload: JsonObject = {};
    expect(deletePath(payload, 'toString')).toBe(false);
    expect(() => deletePath(payload, 'constructor')).toThrow(DotPathError);
  });
});

describe('DotPath schema', () => {
  const schema = DotPath();

  it.each(['a', 'customer.email', 'items.0.sku', 'with space.ok', 'constructorName', 'a-b_c.$d'])('accepts %j', (path) => {
    expect(Value.Check(schema, path)).toBe(true);
  });

  it.each(['', '.', 'a.', '.a', 'a..b', '__proto__', 'a.__proto__', 'a.constructor', 'prototype.a', 'x'.repeat(257), 1])(
    'rejects %j',
    (path) => {
      expect(Value.Check(schema, path)).toBe(false);
    },
  );

  it('is a valid unicode-mode pattern for other JSON Schema validators', () => {
    expect(() => new RegExp(DOT_PATH_PATTERN, 'u')).not.toThrow();
  });
});

describe('copyAlong', () => {
  it('copies the containers on the paths, shares the rest, and leaves the root unchanged when the copy is changed there', () => {
    const root = { a: { b: { c: 1 }, keep: { k: 1 } }, items: [{ sku: 'x' }, { sku: 'y' }], other: { o: 1 } };
    const before = structuredClone(root);
    const copy = copyAlong(root, ['a.b.c', 'items.1.sku', 'missing.deeper']) as unknown as typeof root;
    expect(copy).toEqual(root);
    expect(copy).not.toBe(root);
    expect(copy.a).not.toBe(root.a);
    expect(copy.a.b).not.toBe(root.a.b);
    expect(copy.items).not.toBe(root.items);
    expect(copy.items[1]).not.toBe(root.items[1]);
    // Off the paths: shared.
    expect(copy.a.keep).toBe(root.a.keep);
    expect(copy.items[0]).toBe(root.items[0]);
    expect(copy.other).toBe(root.other);
    const changed = copy as unknown as JsonObject;
    setPath(changed, 'a.b.c', 2);
    setPath(changed, 'items.1.sku', 'z');
    deletePath(changed, 'a.b');
    setPath(changed, 'missing.deeper', true);
    expect(root).toEqual(before);
  });

  it('parses each path once and hands out the same frozen segments', () => {
    expect(parseDotPath('x.y')).toBe(parseDotPath('x.y'));
    expect(Object.isFrozen(parseDotPath('x.y'))).toBe(true);
    expect(() => parseDotPath('x..y')).toThrow(DotPathError);
  });
});

describe('withoutPath', () => {
  it('copies only what lies on the path and leaves the input alone', () => {
    const root = { a: { b: 1, c: [1, { d: 2, e: 3 }] }, f: { g: 1 }, h: 'x' };
    const frozen = structuredClone(root);
    const out = withoutPath(root, 'a.c.1.d')!;
    expect(out).toEqual({ a: { b: 1, c: [1, { e: 3 }] }, f: { g: 1 }, h: 'x' });
    expect(root).toEqual(frozen);
    expect(out.f).toBe(root.f);
    expect(withoutPath(root, 'a.c.0')).toEqual({ a: { b: 1, c: [{ d: 2, e: 3 }] }, f: { g: 1 }, h: 'x' });
    expect(Object.keys(withoutPath(root, 'a')!)).toEqual(['f', 'h']);
  });

  it('is undefined when nothing is at the path', () => {
    const root = { a: { b: 1 }, c: [1] };
    for (const path of ['x', 'a.x', 'a.b.c', 'c.1', 'c.01', 'c.x']) expect(withoutPath(root, path)).toBeUndefined();
  });

  it('keeps a __proto__ key as an own property and never touches the prototype', () => {
    const root = JSON.parse('{"__proto__": {"polluted": true}, "a": 1, "b": 2}') as Record<string, unknown>;
    const out = withoutPath(root as never, 'a')!;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.hasOwn(out, '__proto__')).toBe(true);
    expect(JSON.stringify(out)).toBe('{"__proto__":{"polluted":true},"b":2}');
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });
});

import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { joinSecrets, mergeConfig, scrub, secretPaths, secretStrings, splitSecrets } from './config-secrets.js';
import { REDACTED, Secret } from './secret.js';
import type { JsonObject } from './types.js';

const Schema = Type.Object({
  host: Type.String(),
  password: Secret(Type.String()),
  sasl: Type.Optional(
    Type.Object({
      mechanism: Type.String(),
      password: Secret(Type.String()),
      deep: Type.Optional(Type.Object({ token: Secret(Type.String()) })),
    }),
  ),
  auth: Type.Union([
    Type.Object({ kind: Type.Literal('key'), private_key: Secret(Type.String()), password: Secret(Type.String()) }),
    Type.Object({ kind: Type.Literal('password'), password: Secret(Type.String()) }),
  ]),
  headers: Type.Optional(Secret(Type.Record(Type.String(), Type.String()))),
});

const paths = secretPaths(Schema);

describe('secretPaths', () => {
  it('finds secrets through nested objects, Optional and Union, without duplicates', () => {
    expect(paths.map((p) => p.join('.')).sort()).toEqual(
      ['auth.password', 'auth.private_key', 'headers', 'password', 'sasl.deep.token', 'sasl.password'].sort(),
    );
  });

  it('finds nothing in a schema without secrets', () => {
    expect(secretPaths(Type.Object({ a: Type.String(), b: Type.Object({ c: Type.Number() }) }))).toEqual([]);
  });

  it('treats a schema that is itself secret as the root path', () => {
    expect(secretPaths(Secret(Type.String()))).toEqual([[]]);
  });

  it('does not change the schema it is given', () => {
    const plain = Type.String();
    const secret = Secret(plain);
    expect(secretPaths(plain)).toEqual([]);
    expect(secretPaths(secret)).toEqual([[]]);
  });
});

const config: JsonObject = {
  host: 'db.example.com',
  password: 'pw-top-1234',
  sasl: { mechanism: 'plain', password: 'pw-sasl-5678', deep: { token: 'tok-9999' } },
  auth: { kind: 'key', private_key: 'PEM-abc', password: 'pass-key' },
  headers: { 'X-Api-Key': 'hdr-secret' },
};

describe('splitSecrets', () => {
  it('puts "********" in the plain part and returns the secret values by path', () => {
    const { plain, secrets } = splitSecrets(config, paths);
    expect(plain).toEqual({
      host: 'db.example.com',
      password: REDACTED,
      sasl: { mechanism: 'plain', password: REDACTED, deep: { token: REDACTED } },
      auth: { kind: 'key', private_key: REDACTED, password: REDACTED },
      headers: REDACTED,
    });
    expect(REDACTED).toBe('********');
    const byPath = Object.fromEntries(secrets.map((s) => [s.path.join('.'), s.value]));
    expect(byPath).toEqual({
      password: 'pw-top-1234',
      'sasl.password': 'pw-sasl-5678',
      'sasl.deep.token': 'tok-9999',
      'auth.private_key': 'PEM-abc',
      'auth.password': 'pass-key',
      headers: { 'X-Api-Key': 'hdr-secret' },
    });
    expect(JSON.stringify(plain)).not.toMatch(/pw-|tok-|PEM|pass-key|hdr-secret/);
  });

  it('does not mutate its input', () => {
    const before = structuredClone(config);
    splitSecrets(config, paths);
    expect(config).toEqual(before);
  });

  it('skips absent secret fields instead of inventing them', () => {
    const { plain, secrets } = splitSecrets({ host: 'h', auth: { kind: 'password', password: 'p' } }, paths);
    expect(plain).toEqual({ host: 'h', auth: { kind: 'password', password: REDACTED } });
    expect(secrets).toEqual([{ path: ['auth', 'password'], value: 'p' }]);
  });

  it('round-trips through joinSecrets', () => {
    const { plain, secrets } = splitSecrets(config, paths);
    expect(joinSecrets(plain, secrets)).toEqual(config);
  });
});

describe('joinSecrets', () => {
  it('puts secrets back without mutating the plain part', () => {
    const plain: JsonObject = { host: 'h', password: REDACTED };
    const joined = joinSecrets(plain, [
      { path: ['password'], value: 'p1' },
      { path: ['sasl', 'password'], value: 'p2' },
    ]);
    expect(joined).toEqual({ host: 'h', password: 'p1', sasl: { password: 'p2' } });
    expect(plain).toEqual({ host: 'h', password: REDACTED });
  });
});

describe('mergeConfig', () => {
  const current: JsonObject = {
    host: 'a',
    port: 5432,
    password: 'stored-secret',
    sasl: { mechanism: 'plain', password: 'stored-sasl', extra: 1 },
    brokers: ['b1:9092', 'b2:9092'],
    ssl: { ca: 'CA', reject_unauthorized: true },
  };

  it('merges nested objects field by field', () => {
    const merged = mergeConfig(current, { host: 'b', ssl: { reject_unauthorized: false } }, paths);
    expect(merged).toEqual({ ...current, host: 'b', ssl: { ca: 'CA', reject_unauthorized: false } });
  });

  it('keeps __proto__ from a JSON patch as an own key, for the schema to refuse, never as a prototype', () => {
    const patch = JSON.parse('{"__proto__":{"polluted":true},"ssl":{"__proto__":{"x":1}}}') as JsonObject;
    const merged = mergeConfig(current, patch, paths);
    expect(Object.getPrototypeOf(merged)).toBe(Object.prototype);
    expect(Object.keys(merged)).toContain('__proto__');
    expect(Object.getOwnPropertyDescriptor(merged, '__proto__')?.value).toEqual({ polluted: true });
    expect(Object.keys(merged.ssl as object)).toContain('__proto__');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('removes a field patched with null, nested too', () => {
    const merged = mergeConfig(current, { port: null, ssl: { ca: null } }, paths);
    expect(merged).not.toHaveProperty('port');
    expect(merged.ssl).toEqual({ reject_unauthorized: true });
  });

  it('keeps the stored secret when the patch sends "********"', () => {
    const merged = mergeConfig(current, { password: REDACTED, sasl: { password: REDACTED, mechanism: 'scram' } }, paths);
    expect(merged.password).toBe('stored-secret');
    expect(merged.sasl).toEqual({ mechanism: 'scram', password: 'stored-sasl', extra: 1 });
  });

  it('replaces a secret with a new value', () => {
    expect(mergeConfig(current, { password: 'new-secret' }, paths).password).toBe('new-secret');
  });

  it('stores "********" literally in a field that is not secret', () => {
    expect(mergeConfig(current, { host: REDACTED }, paths).host).toBe(REDACTED);
  });

  it('replaces arrays instead of merging them', () => {
    expect(mergeConfig(current, { brokers: ['c:9092'] }, paths).brokers).toEqual(['c:9092']);
  });

  it('replaces a secret object as a whole rather than merging into it', () => {
    const cur: JsonObject = { headers: { a: '1', b: '2' } };
    expect(mergeConfig(cur, { headers: { c: '3' } }, paths).headers).toEqual({ c: '3' });
  });

  it('replaces a scalar with an object and adds new fields', () => {
    const merged = mergeConfig({ ssl: false }, { ssl: { ca: 'X' }, new_field: 'n' }, paths);
    expect(merged).toEqual({ ssl: { ca: 'X' }, new_field: 'n' });
  });

  it('mutates neither input', () => {
    const cur = structuredClone(current);
    const patch: JsonObject = { ssl: { ca: 'new' }, brokers: ['x'] };
    const patchBefore = structuredClone(patch);
    const merged = mergeConfig(cur, patch, paths);
    expect(cur).toEqual(current);
    expect(patch).toEqual(patchBefore);
    (merged.brokers as string[]).push('y');
    expect(patch.brokers).toEqual(['x']);
  });
});

describe('secretStrings and scrub', () => {
  it('collects string secrets of at least 4 characters, nested values included', () => {
    const strings = secretStrings([
      { path: ['a'], value: 'long-secret' },
      { path: ['b'], value: 'abc' },
      { path: ['c'], value: { x: 'nested-1', y: ['arr-2', 12] } },
      { path: ['d'], value: 12345 },
    ]);
    expect(strings.sort()).toEqual(['arr-2', 'long-secret', 'nested-1']);
  });

  it('replaces every occurrence of every secret', () => {
    const text = 'auth failed for pw-top-1234 (retry pw-top-1234) via tok-9999';
    expect(scrub(text, ['pw-top-1234', 'tok-9999'])).toBe('auth failed for ******** (retry ********) via ********');
  });

  it('leaves text without secrets unchanged', () => {
    expect(scrub('nothing to see', ['pw-top-1234'])).toBe('nothing to see');
    expect(scrub('nothing to see', [])).toBe('nothing to see');
  });

  it('treats secrets as plain strings, not patterns', () => {
    expect(scrub('a.b.c and abbc', ['a.b'])).toBe('********.c and abbc');
  });
});

describe('secrets inside collections', () => {
  it('refuses a schema with a Secret() inside an array or a record, which could not be sealed', () => {
    expect(() => secretPaths(Type.Object({ tokens: Type.Array(Secret(Type.String())) }))).toThrow(/inside an array or record/);
    expect(() => secretPaths(Type.Object({ keys: Type.Record(Type.String(), Type.Object({ key: Secret(Type.String()) })) }))).toThrow(/inside an array or record/);
    expect(secretPaths(Type.Object({ hosts: Type.Array(Type.String()), auth: Type.Object({ key: Secret(Type.String()) }) }))).toEqual([['auth', 'key']]);
  });
});

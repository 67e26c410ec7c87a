import { Kind, type TSchema } from '@sinclair/typebox';
import { FerryError } from '../common/index.js';
import type { JsonObject, JsonValue } from './types.js';
import { isSecretSchema, REDACTED } from './secret.js';

/** A path of object keys into a config. */
export type ConfigPath = readonly string[];

/**
 * Every path the schema marks secret: object properties are walked recursively, and the object
 * members of unions too (a config may be one of several shapes). A secret inside an array or a
 * record has no fixed path to seal and redact, so such a schema is refused outright rather than
 * letting the value through in clear.
 */
export function secretPaths(schema: TSchema, base: ConfigPath = []): ConfigPath[] {
  if (isSecretSchema(schema)) return [base];
  const out: ConfigPath[] = [];
  const s = schema as TSchema & { properties?: Record<string, TSchema>; anyOf?: TSchema[] };
  if (s[Kind] === 'Object' && s.properties) {
    for (const [key, child] of Object.entries(s.properties)) out.push(...secretPaths(child, [...base, key]));
  }
  for (const nested of collectionMembers(s)) {
    if (containsSecret(nested)) {
      throw new FerryError('configuration_invalid', `A Secret() field at ${base.join('.') || 'the config root'} sits inside an array or record; secret fields must be object properties.`);
    }
  }
  if (s.anyOf) {
    for (const member of s.anyOf) {
      for (const path of secretPaths(member, base)) if (!out.some((p) => p.join('\0') === path.join('\0'))) out.push(path);
    }
  }
  return out;
}

function collectionMembers(schema: TSchema): TSchema[] {
  const s = schema as TSchema & { items?: TSchema | TSchema[]; patternProperties?: Record<string, TSchema>; additionalProperties?: unknown };
  const out: TSchema[] = [];
  if (s.items) out.push(...(Array.isArray(s.items) ? s.items : [s.items]));
  if (s.patternProperties) out.push(...Object.values(s.patternProperties));
  if (s.additionalProperties && typeof s.additionalProperties === 'object') out.push(s.additionalProperties as TSchema);
  return out;
}

function containsSecret(schema: TSchema): boolean {
  if (isSecretSchema(schema)) return true;
  const s = schema as TSchema & { properties?: Record<string, TSchema>; anyOf?: TSchema[]; allOf?: TSchema[] };
  return [...Object.values(s.properties ?? {}), ...(s.anyOf ?? []), ...(s.allOf ?? []), ...collectionMembers(s)].some(containsSecret);
}

function getAt(obj: JsonObject, path: ConfigPath): JsonValue | undefined {
  let cur: JsonValue | undefined = obj;
  for (const key of path) {
    if (cur === null || typeof cur !== 'object' || Array.isArray(cur) || !Object.hasOwn(cur, key)) return undefined;
    cur = (cur as JsonObject)[key];
  }
  return cur;
}

function setAt(obj: JsonObject, path: ConfigPath, value: JsonValue): void {
  let cur: JsonObject = obj;
  for (const key of path.slice(0, -1)) {
    const next = cur[key];
    if (next === null || typeof next !== 'object' || Array.isArray(next)) cur[key] = {};
    cur = cur[key] as JsonObject;
  }
  cur[path[path.length - 1]!] = value;
}

/** A config split into what may be stored in clear and the secret values (by path). */
export interface SplitConfig {
  plain: JsonObject;
  secrets: { path: ConfigPath; value: JsonValue }[];
}

/**
 * Moves every secret value out of `config` (a deep copy is split; the input is untouched). The
 * plain part keeps `"********"` where a secret was, so it is exactly what responses show and
 * listing connectors never needs to decrypt anything.
 */
export function splitSecrets(config: JsonObject, paths: readonly ConfigPath[]): SplitConfig {
  const plain = structuredClone(config);
  const secrets: SplitConfig['secrets'] = [];
  for (const path of paths) {
    const value = getAt(plain, path);
    if (value === undefined) continue;
    secrets.push({ path, value });
    setAt(plain, path, REDACTED);
  }
  return { plain, secrets };
}

/** Puts secret values back into a plain config. */
export function joinSecrets(plain: JsonObject, secrets: SplitConfig['secrets']): JsonObject {
  const out = structuredClone(plain);
  for (const { path, value } of secrets) setAt(out, path, value);
  return out;
}

/**
 * Merges a patch over a config, object by object. A secret field sent back as `"********"`
 * (a config read from the API and sent back) keeps its stored value instead of becoming the
 * literal string; `null` removes a field.
 */
export function mergeConfig(current: JsonObject, patch: JsonObject, paths: readonly ConfigPath[], base: ConfigPath = []): JsonObject {
  const out: JsonObject = structuredClone(current);
  for (const [key, value] of Object.entries(patch)) {
    const path = [...base, key];
    const isSecret = paths.some((p) => p.length === path.length && p.every((k, i) => k === path[i]));
    if (isSecret && value === REDACTED) continue;
    // Own properties only: `__proto__` in a JSON body is an ordinary key, and must reach the
    // schema (which refuses it as an unknown field) rather than set the object's prototype.
    const existing = Object.hasOwn(out, key) ? out[key] : undefined;
    if (value === null) {
      delete out[key];
    } else if (!isSecret && typeof value === 'object' && !Array.isArray(value) && typeof existing === 'object' && existing !== null && !Array.isArray(existing)) {
      defineOwn(out, key, mergeConfig(existing, value, paths, path));
    } else {
      defineOwn(out, key, structuredClone(value));
    }
  }
  return out;
}

/** Sets `key` as an own, enumerable property, whatever its name (`__proto__` included). */
function defineOwn(target: JsonObject, key: string, value: JsonValue): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Every secret value of a config as a string, to scrub from error messages before they are stored. */
export function secretStrings(secrets: SplitConfig['secrets']): string[] {
  const out: string[] = [];
  const walk = (v: JsonValue) => {
    if (typeof v === 'string' && v.length >= 4) out.push(v);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  for (const s of secrets) walk(s.value);
  return out;
}

/** Replaces every occurrence of a secret in `text` with `"********"`. */
export function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) out = out.split(s).join(REDACTED);
  return out;
}

import { Type, type TString } from '@sinclair/typebox';
import type { JsonObject, JsonValue } from '../../plugin-api/index.js';

/**
 * Segment names a dot path may never contain. Writing through them would reach an object's
 * prototype (prototype pollution), and reading through them would expose engine internals, so
 * they are refused outright rather than treated as ordinary keys.
 */
export const FORBIDDEN_PATH_SEGMENTS: ReadonlySet<string> = new Set(['__proto__', 'prototype', 'constructor']);

// One segment: at least one non-dot character, and not one of the forbidden names. The
// lookahead is anchored to the segment's end so `constructorName` or `__proto__x` stay allowed.
const SEGMENT = '(?!(?:__proto__|prototype|constructor)(?:\\.|$))[^.]+';

/**
 * The JSON Schema `pattern` every dot-path field of a step carries: segments separated by single
 * dots, none empty (no leading, trailing or doubled dot), none forbidden. It is plain ECMAScript
 * syntax that is also valid under the `u` flag, so any JSON Schema validator accepts it.
 */
export const DOT_PATH_PATTERN = `^${SEGMENT}(?:\\.${SEGMENT})*$`;

/** Longest accepted dot path, in characters. */
export const DOT_PATH_MAX_LENGTH = 256;

/**
 * The schema of a dot-path field in a step definition. Enforcing the path rules here means a bad
 * path is a 400 when the pipeline is created, not a dead-lettered event later.
 */
export function DotPath(description = 'Dot path into the event payload, e.g. `customer.email`.'): TString {
  return Type.String({ minLength: 1, maxLength: DOT_PATH_MAX_LENGTH, pattern: DOT_PATH_PATTERN, description });
}

/** Thrown for a dot path that is syntactically invalid or names a forbidden segment. */
export class DotPathError extends Error {
  override readonly name = 'DotPathError';

  constructor(
    /** The offending path. */
    readonly path: string,
    reason: string,
  ) {
    super(`Invalid path ${JSON.stringify(path)}: ${reason}.`);
  }
}

/**
 * Splits a dot path into its segments. Throws {@link DotPathError} for an empty segment or a
 * forbidden one: the helpers below are also reachable by plugins and by data written before a
 * schema tightened, so they do not rely on the schema alone.
 */
export function parseDotPath(path: string): readonly string[] {
  let segments = parsedPaths.get(path);
  if (segments) return segments;
  const parsed = path.split('.');
  for (const segment of parsed) {
    if (segment === '') throw new DotPathError(path, 'empty segment');
    if (FORBIDDEN_PATH_SEGMENTS.has(segment)) throw new DotPathError(path, `segment ${JSON.stringify(segment)} is not allowed`);
  }
  segments = Object.freeze(parsed);
  if (parsedPaths.size >= PARSED_PATHS_LIMIT) parsedPaths.delete(parsedPaths.keys().next().value!);
  parsedPaths.set(path, segments);
  return segments;
}

// A step's paths are the same for every event: each is split and checked once, not per event
// and access. Bounded, as paths come from pipelines' configs; frozen, as they are shared.
const PARSED_PATHS_LIMIT = 1_000;
const parsedPaths = new Map<string, readonly string[]>();

/**
 * A copy of `root` that a step may change along `paths` without touching `root`: the root and
 * every object or array on the way down each path (as far as it exists) are copied, one level
 * each; everything else is shared. Steps leave their input alone and never change a value in
 * place that they did not copy, so sharing is safe, and it costs a few objects per event where
 * `structuredClone` copied the whole payload.
 */
export function copyAlong(root: JsonObject, paths: readonly string[]): JsonObject {
  const copy: JsonObject = { ...root };
  for (const path of paths) {
    let container: JsonObject | JsonValue[] = copy;
    for (const segment of parseDotPath(path)) {
      const next = child(container, segment);
      if (Array.isArray(next)) {
        const copied = [...next];
        assignChild(container, segment, copied);
        container = copied;
      } else if (isObject(next)) {
        const copied = { ...next };
        assignChild(container, segment, copied);
        container = copied;
      } else {
        break;
      }
    }
  }
  return copy;
}

/** Puts `value` at an existing `segment` of `container`. */
function assignChild(container: JsonObject | JsonValue[], segment: string, value: JsonValue): void {
  if (Array.isArray(container)) container[Number(segment)] = value;
  else container[segment] = value;
}

// Only canonical indexes (`0`, `12`, never `01` or `-1`) address array elements, so that every
// element has exactly one path.
const INDEX = /^(?:0|[1-9][0-9]*)$/;

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An own element or property of a container; inherited members (`toString`) do not count. */
function child(container: JsonValue | undefined, segment: string): JsonValue | undefined {
  if (Array.isArray(container)) return INDEX.test(segment) ? container[Number(segment)] : undefined;
  if (isObject(container) && Object.hasOwn(container, segment)) return container[segment];
  return undefined;
}

/**
 * The value at `path`, or `undefined` when any segment is missing. Objects are entered by key and
 * arrays by canonical index (`items.0.sku`). Returns the stored value itself, not a copy.
 */
export function getPath(root: JsonObject, path: string): JsonValue | undefined {
  let current: JsonValue | undefined = root;
  for (const segment of parseDotPath(path)) {
    current = child(current, segment);
    if (current === undefined) return undefined;
  }
  return current;
}

/**
 * True when `path` leads to a value. A JSON `null` is a value here: the key is present, which is
 * what a filter's `exists` asks.
 */
export function hasPath(root: JsonObject, path: string): boolean {
  return getPath(root, path) !== undefined;
}

function describeType(value: JsonValue): string {
  if (value === null) return 'null';
  return Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}

/**
 * Sets the value at `path` in place, creating missing intermediate objects. Throws when the way
 * is blocked by a value that is not a container (a string, a number, `null`) or by an array
 * index outside the array: overwriting that value would silently destroy data, so the step fails
 * and the event is dead-lettered instead. An array element may be replaced but not appended.
 */
export function setPath(root: JsonObject, path: string, value: JsonValue): void {
  const segments = parseDotPath(path);
  let container: JsonObject | JsonValue[] = root;
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i] as string;
    const last = i === segments.length - 1;
    if (Array.isArray(container)) {
      if (!INDEX.test(segment) || Number(segment) >= container.length) {
        throw new Error(`Cannot set ${JSON.stringify(path)}: ${JSON.stringify(segments.slice(0, i).join('.'))} is an array without an element ${JSON.stringify(segment)}.`);
      }
      const index = Number(segment);
      if (last) {
        container[index] = value;
        return;
      }
      const next: JsonValue = container[index] as JsonValue;
      if (!isObject(next) && !Array.isArray(next)) {
        throw new Error(`Cannot set ${JSON.stringify(path)}: ${JSON.stringify(segments.slice(0, i + 1).join('.'))} is ${describeType(next)}.`);
      }
      container = next;
      continue;
    }
    if (last) {
      container[segment] = value;
      return;
    }
    if (!Object.hasOwn(container, segment)) {
      const created: JsonObject = {};
      container[segment] = created;
      container = created;
      continue;
    }
    const next = container[segment] as JsonValue;
    if (!isObject(next) && !Array.isArray(next)) {
      throw new Error(`Cannot set ${JSON.stringify(path)}: ${JSON.stringify(segments.slice(0, i + 1).join('.'))} is ${describeType(next)}.`);
    }
    container = next;
  }
}

/**
 * A copy of `root` without the value at `path`, or undefined when there is none. Only what lies
 * on the path is copied (the rest is shared), and the object that loses a key is built again
 * without it rather than `delete`d from: a deleted key turns a V8 object into a slow dictionary,
 * and every later step's copy and the destination's JSON.stringify of it got several times slower.
 */
export function withoutPath(root: JsonObject, path: string): JsonObject | undefined {
  return without(root, parseDotPath(path), 0) as JsonObject | undefined;
}

function without(container: JsonObject | JsonValue[], segments: readonly string[], i: number): JsonObject | JsonValue[] | undefined {
  const segment = segments[i]!;
  const last = i === segments.length - 1;
  if (Array.isArray(container)) {
    if (!INDEX.test(segment) || Number(segment) >= container.length) return undefined;
    const index = Number(segment);
    const copy = [...container];
    if (last) {
      copy.splice(index, 1);
      return copy;
    }
    const next = container[index];
    const inner = isObject(next) || Array.isArray(next) ? without(next, segments, i + 1) : undefined;
    if (inner === undefined) return undefined;
    copy[index] = inner;
    return copy;
  }
  if (!Object.hasOwn(container, segment)) return undefined;
  if (last) {
    const copy: JsonObject = {};
    for (const key of Object.keys(container)) if (key !== segment) defineOwn(copy, key, container[key]!);
    return copy;
  }
  const next = container[segment];
  const inner = isObject(next) || Array.isArray(next) ? without(next, segments, i + 1) : undefined;
  if (inner === undefined) return undefined;
  const copy: JsonObject = { ...container };
  defineOwn(copy, segment, inner);
  return copy;
}

/** `target[key] = value` as an own property, `__proto__` included (a payload may have that key; assigning it would set the prototype). */
function defineOwn(target: JsonObject, key: string, value: JsonValue): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

/**
 * Removes the value at `path` in place; returns whether something was removed. A missing path is
 * not an error. An array element is spliced out, so later elements move up (as JSON Patch
 * `remove` does) rather than leaving a hole that JSON cannot represent.
 */
export function deletePath(root: JsonObject, path: string): boolean {
  const segments = parseDotPath(path);
  const last = segments[segments.length - 1] as string;
  let container: JsonValue | undefined = root;
  for (const segment of segments.slice(0, -1)) {
    container = child(container, segment);
    if (container === undefined) return false;
  }
  if (Array.isArray(container)) {
    if (!INDEX.test(last) || Number(last) >= container.length) return false;
    container.splice(Number(last), 1);
    return true;
  }
  if (isObject(container) && Object.hasOwn(container, last)) {
    delete container[last];
    return true;
  }
  return false;
}

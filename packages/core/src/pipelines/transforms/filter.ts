import { RE2JS } from 're2js';
import { Type, type Static } from '@sinclair/typebox';
import { defineTransform, type JsonValue } from '../../plugin-api/index.js';
import { DotPath, getPath } from './dot-path.js';

/** The comparison operators of the `filter` step. */
export const FILTER_OPS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'in', 'exists', 'matches'] as const;

/** One comparison operator of the `filter` step. */
export type FilterOp = (typeof FILTER_OPS)[number];

/**
 * Schema of a `filter` step. `value` is optional in the schema because `exists` takes none; the
 * per-operator rules (required, array for `in`, a compiling pattern for `matches`) live in
 * `validate`, which a schema cannot express as readable errors.
 */
export const FilterStepSchema = Type.Object(
  {
    type: Type.Literal('filter'),
    path: DotPath('Dot path of the payload value to test.'),
    op: Type.Union(FILTER_OPS.map((op) => Type.Literal(op))),
    value: Type.Optional(Type.Unknown({ description: 'The JSON value to compare with; not used by `exists`.' })),
  },
  { additionalProperties: false },
);

/** A `filter` step definition. */
export type FilterStep = Static<typeof FilterStepSchema>;

// Patterns are compiled once, not per event; the bound keeps a stream of distinct pipelines
// from growing the cache without limit.
const PATTERN_CACHE_LIMIT = 256;
const patterns = new Map<string, RE2JS>();

/** Longest pattern accepted, in characters. */
export const MAX_PATTERN_LENGTH = 1_000;

/** Thrown for a pattern the linear-time engine cannot run (backreferences, lookaround...). */
class UnsafePatternError extends Error {}

/**
 * Compiles a `matches` pattern for RE2JS, a linear-time engine with RE2's semantics. A pattern
 * comes from an API client and runs on the event loop against every event; on a backtracking
 * engine (JavaScript's own) patterns such as `(a|aa)+$` or `(a*)\1*b` take exponential time on
 * a 30-character value and stall every pipeline and request of the engine, and no static check
 * catches them all. RE2 cannot backtrack: whatever the pattern, a match costs time linear in the
 * value. What RE2 lacks on purpose (backreferences, lookaround) is refused as unsafe; what is not
 * a regular expression at all is invalid.
 */
function compilePattern(source: string): RE2JS {
  let regex = patterns.get(source);
  if (!regex) {
    if (source.length > MAX_PATTERN_LENGTH) throw new UnsafePatternError(`the pattern is longer than ${MAX_PATTERN_LENGTH} characters`);
    try {
      regex = RE2JS.compile(source);
    } catch (error) {
      // JavaScript's parser only tells which of the two it is: nothing here ever runs on it.
      new RegExp(source);
      throw new UnsafePatternError(`it uses syntax a linear-time matcher does not support, such as backreferences or lookaround (${(error as Error).message})`);
    }
    if (patterns.size >= PATTERN_CACHE_LIMIT) patterns.clear();
    patterns.set(source, regex);
  }
  return regex;
}

/** Deep equality of two JSON values: same type, same array order, same object keys. */
function jsonEqual(a: JsonValue, b: JsonValue): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, i) => jsonEqual(item, b[i] as JsonValue));
  }
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((key) => Object.hasOwn(b, key) && jsonEqual(a[key] as JsonValue, b[key] as JsonValue));
}

/**
 * Orders two values for `gt`/`gte`/`lt`/`lte`: numbers numerically, strings by UTF-16 code units
 * (the order ISO timestamps sort correctly in). Any other pairing, a missing value included, has
 * no order and so never matches, rather than being coerced the way JavaScript would.
 */
function order(actual: JsonValue | undefined, expected: JsonValue): number | undefined {
  if (typeof actual === 'number' && typeof expected === 'number') return actual - expected;
  if (typeof actual === 'string' && typeof expected === 'string') return actual < expected ? -1 : actual > expected ? 1 : 0;
  return undefined;
}

/** Field problems of a filter step that its schema cannot express. */
function problems(step: FilterStep): { pointer: string; code: string; detail: string }[] {
  if (step.op === 'exists') return [];
  if (step.value === undefined) {
    return [{ pointer: '/value', code: 'required', detail: `Operator "${step.op}" needs a value.` }];
  }
  switch (step.op) {
    case 'in':
      if (!Array.isArray(step.value)) return [{ pointer: '/value', code: 'type', detail: 'Operator "in" needs an array of values.' }];
      return [];
    case 'matches':
      if (typeof step.value !== 'string') return [{ pointer: '/value', code: 'type', detail: 'Operator "matches" needs a regular expression string.' }];
      try {
        compilePattern(step.value);
      } catch (error) {
        if (error instanceof UnsafePatternError) return [{ pointer: '/value', code: 'unsafe_pattern', detail: `Refused: ${error.message}.` }];
        return [{ pointer: '/value', code: 'invalid_pattern', detail: `Not a valid regular expression: ${(error as Error).message}` }];
      }
      return [];
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      // Anything else could never match, which is a configuration mistake worth a 400.
      if (typeof step.value !== 'number' && typeof step.value !== 'string') {
        return [{ pointer: '/value', code: 'type', detail: `Operator "${step.op}" compares with a number or a string.` }];
      }
      return [];
    default:
      return [];
  }
}

function matches(step: FilterStep, actual: JsonValue | undefined): boolean {
  // The schema does not constrain `value`, and it comes from a JSON body, so it is JSON.
  const expected = step.value as JsonValue;
  switch (step.op) {
    case 'exists':
      return actual !== undefined;
    case 'eq':
      return actual !== undefined && jsonEqual(actual, expected);
    case 'neq':
      // The exact complement of `eq`, so an `eq` and a `neq` on the same value split the events
      // into two disjoint sets; a missing value is therefore "not equal".
      return actual === undefined || !jsonEqual(actual, expected);
    case 'in':
      return actual !== undefined && (expected as JsonValue[]).some((candidate) => jsonEqual(actual, candidate));
    case 'matches':
      return typeof actual === 'string' && compilePattern(expected as string).test(actual);
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      const sign = order(actual, expected);
      if (sign === undefined || Number.isNaN(sign)) return false;
      if (step.op === 'gt') return sign > 0;
      if (step.op === 'gte') return sign >= 0;
      if (step.op === 'lt') return sign < 0;
      return sign <= 0;
    }
  }
}

/** Filter steps found valid; weak, so a pipeline's steps go with its chain. */
const validSteps = new WeakSet<FilterStep>();

/**
 * The `filter` step: keeps events whose payload value at `path` satisfies `op` against `value`
 * and returns `null` for the others, which the engine records as `filtered`.
 *
 * - `eq` / `neq`: deep JSON equality (and its exact complement; a missing value is `neq`).
 * - `gt`, `gte`, `lt`, `lte`: numbers numerically, strings lexicographically; mismatched types
 *   and missing values never match.
 * - `in`: the value deep-equals one element of the `value` array.
 * - `exists`: the path leads to a value (`null` included).
 * - `matches`: the value is a string in which the regular expression `value` finds a match
 *   (RE2 syntax, no flags; linear time whatever the pattern and value).
 */
export const filterStep = defineTransform({
  type: 'filter',
  schema: FilterStepSchema,
  validate: problems,
  apply(event, step) {
    // Validation normally runs at create time; re-checking here means a step stored before a rule
    // existed fails loudly (dead-letter) instead of silently filtering every event. Once per step
    // object (a pipeline's chain keeps its own), not once per event.
    if (!validSteps.has(step)) {
      const problem = problems(step)[0];
      if (problem) throw new Error(`Invalid filter step: ${problem.detail}`);
      validSteps.add(step);
    }
    return matches(step, getPath(event.payload, step.path)) ? { ...event } : null;
  },
});

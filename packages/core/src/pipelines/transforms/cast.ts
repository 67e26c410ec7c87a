import { Type, type Static } from '@sinclair/typebox';
import { parseIsoTimestamp } from '../../common/index.js';
import { defineTransform, type JsonValue } from '../../plugin-api/index.js';
import { DotPath, getPath, setPath } from './dot-path.js';

/** The target types of the `cast` step. */
export const CAST_TARGETS = ['string', 'number', 'boolean', 'timestamp'] as const;

/** One target type of the `cast` step. */
export type CastTarget = (typeof CAST_TARGETS)[number];

/** Schema of a `cast` step. */
export const CastStepSchema = Type.Object(
  {
    type: Type.Literal('cast'),
    path: DotPath('Dot path of the value to convert.'),
    to: Type.Union(CAST_TARGETS.map((target) => Type.Literal(target))),
  },
  { additionalProperties: false },
);

/** A `cast` step definition. */
export type CastStep = Static<typeof CastStepSchema>;

function describe(value: JsonValue): string {
  const text = JSON.stringify(value);
  // Error messages end up in the event's dead-letter record; keep them short.
  return text.length > 64 ? `${text.slice(0, 61)}...` : text;
}

// Plain decimal notation only. `Number()` alone would also take `''`, `'  '` (both 0), hex,
// binary and `'Infinity'`, none of which a data field means as a number.
const DECIMAL = /^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/;

function toNumber(value: JsonValue): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'string') {
    const text = value.trim();
    const number = DECIMAL.test(text) ? Number(text) : Number.NaN;
    // JSON has no NaN or Infinity, and `1e999` overflows to Infinity.
    if (Number.isFinite(number)) return number;
  }
  throw new Error(`Cannot cast ${describe(value)} to a number.`);
}

function toBoolean(value: JsonValue): boolean {
  if (value === true || value === 1 || value === 'true' || value === '1') return true;
  if (value === false || value === 0 || value === 'false' || value === '0') return false;
  throw new Error(`Cannot cast ${describe(value)} to a boolean.`);
}

function toTimestamp(value: JsonValue): string {
  // `new Date(n)` is invalid beyond +-8.64e15 ms; `toISOString` would throw a bare RangeError.
  const ms = typeof value === 'number' ? value : typeof value === 'string' ? parseIsoTimestamp(value.trim()) : Number.NaN;
  const date = new Date(ms);
  if (!Number.isFinite(ms) || Number.isNaN(date.getTime())) {
    throw new Error(`Cannot cast ${describe(value)} to a timestamp: expected an ISO 8601 string or epoch milliseconds.`);
  }
  return date.toISOString();
}

function toText(value: JsonValue): string {
  return typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value);
}

/**
 * Converts one JSON value to `to`, throwing when it cannot be converted faithfully. `null`
 * gives `null` whatever the target (never an error, never the text `"null"`).
 *
 * - `string`: objects and arrays as JSON text, anything else by `String()`.
 * - `number`: numbers as they are; decimal strings (surrounding spaces allowed); `true`/`false`
 *   as 1/0. Anything else, including empty, hex and non-finite strings, throws.
 * - `boolean`: `true`, `false`, `"true"`, `"false"`, `1`, `0`, `"1"`, `"0"`; anything else throws.
 * - `timestamp`: an ISO 8601 string or epoch milliseconds, to ISO 8601 UTC with milliseconds
 *   (`2026-11-22T10:00:00.000Z`); a date-time without an offset is read as UTC.
 */
export function castValue(value: JsonValue, to: CastTarget): JsonValue {
  // Null is the absence of a value in every type: nothing to convert, and no reason to fail.
  if (value === null) return null;
  switch (to) {
    case 'string':
      return toText(value);
    case 'number':
      return toNumber(value);
    case 'boolean':
      return toBoolean(value);
    case 'timestamp':
      return toTimestamp(value);
  }
}

/**
 * The `cast` step: converts the value at `path` with {@link castValue}. `null` stays `null` and a
 * missing path leaves the event unchanged (neither is an error); a value that cannot be converted throws, so the event is dead-lettered at
 * this stage instead of reaching the destination with the wrong type.
 */
export const castStep = defineTransform({
  type: 'cast',
  schema: CastStepSchema,
  apply(event, step) {
    const value = getPath(event.payload, step.path);
    if (value === undefined) return { ...event };
    const payload = structuredClone(event.payload);
    setPath(payload, step.path, castValue(value, step.to));
    return { ...event, payload };
  },
});

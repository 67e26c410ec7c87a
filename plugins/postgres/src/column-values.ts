import { parseExactJson, type JsonValue } from '@ferry/core';
import { parse as parseArray } from 'postgres-array';

/**
 * Type OIDs of the built-in types whose text the plugin turns into something other than a
 * string. Every other type (text, uuid, interval, inet, enums, domains over text, ...) stays the
 * server's text, which is exact by definition.
 */
const OID = {
  bool: 16,
  bytea: 17,
  int8: 20,
  int2: 21,
  int4: 23,
  oid: 26,
  json: 114,
  float4: 700,
  float8: 701,
  money: 790,
  timestamp: 1114,
  timestamptz: 1184,
  numeric: 1700,
  jsonb: 3802,
} as const;

/** Array type OIDs and the type of their elements. */
const ARRAY_ELEMENT: ReadonlyMap<number, number> = new Map([
  [1000, OID.bool],
  [1001, OID.bytea],
  [1016, OID.int8],
  [1005, OID.int2],
  [1007, OID.int4],
  [1028, OID.oid],
  [199, OID.json],
  [1021, OID.float4],
  [1022, OID.float8],
  [1115, OID.timestamp],
  [1185, OID.timestamptz],
  [1231, OID.numeric],
  [3807, OID.jsonb],
]);

/**
 * Array types whose elements stay text (text, varchar, char, name, uuid, date, time, timetz,
 * interval, inet, cidr, macaddr, money, xml): arrays of strings.
 */
const TEXT_ARRAYS: ReadonlySet<number> = new Set([1009, 1015, 1014, 1002, 1003, 2951, 1182, 1183, 1270, 1187, 1041, 651, 1040, 791, 143]);

/** Converts one column's text (never null) into its JSON value. */
export type ColumnConverter = (text: string) => JsonValue;

const asText: ColumnConverter = (text) => text;
const converters = new Map<number, ColumnConverter>();

/**
 * The converter of a column type, by OID: how a value of that type travels in a payload
 * (docs/concepts.md, Data moves exactly). The server's text output is the input, with the session
 * settings the plugin sets on every connection (`DateStyle=ISO`, `TimeZone=UTC`,
 * `IntervalStyle=postgres`, `bytea_output=hex`):
 *
 * - `int2`, `int4`, `oid`: numbers. `int8` and `numeric`: strings of their exact digits, always
 *   (one JSON type per column, whatever the value). `money`: its text.
 * - `float4`, `float8`: numbers; `NaN` and the infinities, which JSON has no number for, their text.
 * - `bool`: booleans. `json`, `jsonb`: their JSON, numbers a double cannot hold exactly kept as
 *   strings of their digits.
 * - `bytea`: base64 of the bytes.
 * - `timestamptz`: ISO 8601 in UTC with every fractional digit the server keeps (microseconds),
 *   `2026-11-26T10:00:00.123456Z`; `timestamp`: the same without a zone. `infinity` and dates
 *   a Date cannot hold (BC, year 10000+) stay the server's text.
 * - arrays of the types above, and of text-like types: arrays of their converted elements (nested
 *   for more dimensions, `null` for NULL elements); arrays of other types (enums, composites),
 *   their text.
 * - everything else: the server's text.
 */
export function columnConverter(oid: number): ColumnConverter {
  let converter = converters.get(oid);
  if (converter === undefined) {
    converter = makeConverter(oid);
    converters.set(oid, converter);
  }
  return converter;
}

function makeConverter(oid: number): ColumnConverter {
  switch (oid) {
    case OID.bool:
      return (text) => text === 't';
    case OID.int2:
    case OID.int4:
    case OID.oid:
      return (text) => Number(text);
    case OID.float4:
    case OID.float8:
      return (text) => {
        const n = Number(text);
        return Number.isFinite(n) ? n : text;
      };
    case OID.json:
    case OID.jsonb:
      return parseExactJson;
    case OID.bytea:
      return byteaToBase64;
    case OID.timestamptz:
      return timestamptzToIso;
    case OID.timestamp:
      return timestampToIso;
    default: {
      if (TEXT_ARRAYS.has(oid)) return (text) => parseArray(text, (item) => item) as JsonValue;
      const element = ARRAY_ELEMENT.get(oid);
      if (element === undefined) return asText;
      const convert = columnConverter(element);
      return (text) => parseArray(text, (item) => convert(item)) as JsonValue;
    }
  }
}

/** `\x0aff` (hex output) as base64; the legacy escape format is decoded by Postgres's rules. */
function byteaToBase64(text: string): string {
  if (text.startsWith('\\x')) return Buffer.from(text.slice(2), 'hex').toString('base64');
  return Buffer.from(unescapeBytea(text), 'latin1').toString('base64');
}

function unescapeBytea(text: string): string {
  return text.replace(/\\(\\|[0-7]{3})/g, (_, code: string) => (code === '\\' ? '\\' : String.fromCharCode(parseInt(code, 8))));
}

const TIMESTAMP = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?)(?:([+-]\d{2})(?::(\d{2}))?(?::(\d{2}))?)?$/;

/**
 * The length of the date and time at the start of `text` when it has the server's usual form,
 * `YYYY-MM-DD HH:MM:SS` with an optional fraction of 1 to 6 digits, checked character by
 * character: 19 to 26, or 0 when it has not. Every value of a timestamp column goes through
 * here, and the regular expression's match (an array and five strings) was most of the cost.
 */
function plainDateTime(text: string): number {
  if (text.length < 19) return 0;
  for (let k = 0; k < 19; k++) {
    const c = text.charCodeAt(k);
    const expected = SHAPE.charCodeAt(k);
    if (expected === DIGIT_MARK ? c < 48 || c > 57 : c !== expected) return 0;
  }
  if (text.charCodeAt(19) !== 46 /* . */) return 19;
  let end = 20;
  while (end < 26 && text.charCodeAt(end) >= 48 && text.charCodeAt(end) <= 57) end++;
  return end > 20 ? end : 0;
}

/** What {@link plainDateTime} checks: `9` a digit, anything else itself. */
const SHAPE = '9999-99-99 99:99:99';
const DIGIT_MARK = 57;

/** `2026-11-26 10:00:00.123456+00` as `2026-11-26T10:00:00.123456Z` (other offsets kept as `+05:30`). */
function timestamptzToIso(text: string): string {
  // The server's output in UTC: the same as below, without a match.
  const at = plainDateTime(text);
  if (at > 0 && text.length === at + 3 && text.charCodeAt(at) === 43 /* + */ && text.charCodeAt(at + 1) === 48 && text.charCodeAt(at + 2) === 48) {
    return `${text.slice(0, 10)}T${text.slice(11, at)}Z`;
  }
  const m = TIMESTAMP.exec(text);
  if (!m || m[3] === undefined || m[5] !== undefined) return text;
  const offset = m[3] === '+00' && (m[4] === undefined || m[4] === '00') ? 'Z' : `${m[3]}:${m[4] ?? '00'}`;
  return `${m[1]}T${m[2]}${offset}`;
}

/** `2026-11-26 10:00:00.123456` as `2026-11-26T10:00:00.123456`: it has no zone, none is invented. */
function timestampToIso(text: string): string {
  const at = plainDateTime(text);
  if (at > 0 && at === text.length) return `${text.slice(0, 10)}T${text.slice(11)}`;
  const m = TIMESTAMP.exec(text);
  return m && m[3] === undefined ? `${m[1]}T${m[2]}` : text;
}

import { isSafeNumber, parse as parseLossless } from 'lossless-json';
import type { JsonValue } from './json.js';

/**
 * A number token that a double might not hold exactly: 16 or more digits and dots in a row
 * (a double keeps 15 to 17 significant digits), or an exponent (`1e400` overflows). Only where a
 * JSON value can start (the text's start, or after `:`, `,` or `[`): unanchored, the check fired
 * on ULIDs, UUIDs and digit ids inside strings, about a sixth of real lines, sending them down
 * the exact path at 2 to 3 times the cost. A string that still matches (`":1234567890123456"`)
 * only takes that slower path, whose answer is the same. Linear: a match starts only at one of
 * those characters and scans the run of digits after it.
 */
const MAYBE_INEXACT = /(?:^|[:,[])\s*-?\d(?:[\d.]{15}|[\d.]*[eE])/;

/**
 * Parses JSON without changing a value on the way (data moves exactly): a number is a JSON
 * number when a double holds it exactly (its digits survive the round trip, as `12.5`, `1e3` or
 * `9007199254740991` do), and otherwise a string of its exact text: `12345678901234567890`,
 * `0.1000000000000000055511151231257827`, `1e400` (never `Infinity`). Everything else is as
 * `JSON.parse` gives it, duplicate keys included (the last wins) and `__proto__` an ordinary key.
 *
 * Text without a long number or an exponent, the common case, goes straight to `JSON.parse`.
 * Throws a `SyntaxError` on text that is not JSON.
 */
export function parseExactJson(text: string): JsonValue {
  if (!MAYBE_INEXACT.test(text)) return JSON.parse(text) as JsonValue;
  return parseLossless(text, null, {
    parseNumber: (digits: string) => (isSafeNumber(digits) ? Number(digits) : digits),
    onDuplicateKey: ({ newValue }) => newValue,
  }) as JsonValue;
}

import type { FieldError } from '@ferry/core';
import { decodePercent, hasInvalidCharacter, MAX_LIMIT, pointerToken } from '@ferry/core/internal';
import { HttpProblem } from './problem.js';
import type { QueryParam } from './route.js';

/** Query parameters every listing takes (docs/api.md, Lists). */
export const PAGE_QUERY: Record<string, QueryParam> = {
  limit: { kind: 'limit' },
  cursor: { kind: 'cursor' },
  order: { kind: 'enum', values: ['asc', 'desc'], description: '`asc`, oldest first (the default), or `desc`, newest first. A cursor keeps the order it was made with; the other order refuses it (`invalid_cursor`).' },
};

/** One `name=value` pair of a query string, decoded exactly, or what keeps it from decoding. */
type QueryPair = { name: string; value: string; fault?: undefined } | { name: string; fault: 'invalid_encoding' | 'invalid_character' };

/**
 * Splits a query string into its pairs and decodes them as form encoding does (`+` is a space),
 * but refusing rather than repairing: a malformed escape (`%zz`) or escapes whose bytes are not
 * UTF-8 are `invalid_encoding`, and the CESU-8 bytes of a lone surrogate `invalid_character`.
 * (`URLSearchParams` would keep the first as text and turn the others into U+FFFD, so a filter
 * would silently search for something the client never sent.)
 */
function queryPairs(search: string): QueryPair[] {
  const pairs: QueryPair[] = [];
  for (const piece of search.split('&')) {
    if (piece === '') continue;
    const eq = piece.indexOf('=');
    const rawName = eq < 0 ? piece : piece.slice(0, eq);
    const name = decodePercent(rawName, true);
    const value = decodePercent(eq < 0 ? '' : piece.slice(eq + 1), true);
    // A name that does not decode is reported under its raw spelling: it is all there is.
    const shownName = 'text' in name ? name.text : rawName;
    const fault = 'fault' in name ? name.fault : 'fault' in value ? value.fault : undefined;
    if (fault !== undefined) pairs.push({ name: shownName, fault: fault !== 'malformed_escape' && fault.surrogate ? 'invalid_character' : 'invalid_encoding' });
    else pairs.push({ name: shownName, value: 'text' in value ? value.text : '' });
  }
  return pairs;
}

/**
 * Reads a query string against a route's parameters: each known parameter at most once, no
 * unknown ones (400 with every problem at once, pointers `/<name>` like the service's own).
 * `limit` must be an integer of at least 1 (larger than 100 is lowered by the service), an
 * integer parameter an integer within its bounds (`type`, `out_of_range`: the codes the service
 * would give). Timestamps are left to the services, which report them with the same codes.
 */
export function parseQuery(search: string, spec: Record<string, QueryParam> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (search === '') return out;
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  for (const pair of queryPairs(search)) {
    const { name } = pair;
    const param = spec && Object.hasOwn(spec, name) ? spec[name] : undefined;
    const pointer = `/${pointerToken(name)}`;
    if (pair.fault === 'invalid_encoding') {
      errors.push({ pointer, code: 'invalid_encoding', detail: 'This query parameter is not valid percent-encoded UTF-8.' });
      seen.add(name);
      continue;
    }
    const value = pair.fault === undefined ? pair.value : '';
    // `%00` decodes to U+0000, which no storage keeps (Postgres refuses it outright).
    if (pair.fault === 'invalid_character' || hasInvalidCharacter(name) || hasInvalidCharacter(value)) {
      errors.push({ pointer, code: 'invalid_character', detail: 'Text cannot contain the NUL character (U+0000) or a lone UTF-16 surrogate.' });
      seen.add(name);
      continue;
    }
    if (!param) {
      if (!seen.has(name)) errors.push({ pointer, code: 'unknown_field', detail: 'This query parameter is not allowed here.' });
      seen.add(name);
      continue;
    }
    if (seen.has(name)) {
      errors.push({ pointer, code: 'type', detail: 'This query parameter may be given only once.' });
      continue;
    }
    seen.add(name);
    switch (param.kind) {
      case 'limit':
        // The service's rule, checked here too so one answer lists every query problem.
        if (!/^\d+$/.test(value) || Number(value) < 1) errors.push({ pointer, code: 'invalid_limit', detail: 'limit must be an integer of at least 1.' });
        else out[name] = Math.min(Number(value), MAX_LIMIT);
        break;
      case 'enum':
        if (!param.values.includes(value)) errors.push({ pointer, code: 'enum', detail: `Expected one of ${param.values.join(', ')}.` });
        else out[name] = value;
        break;
      case 'integer': {
        // Digits only, as for `limit`: `1e3`, ` 5` or `5.0` are not what a client means by 5.
        const n = /^-?\d+$/.test(value) ? Number(value) : Number.NaN;
        if (Number.isNaN(n)) errors.push({ pointer, code: 'type', detail: 'Expected an integer.' });
        else if (n < param.minimum || n > param.maximum) errors.push({ pointer, code: 'out_of_range', detail: `Expected an integer from ${param.minimum} to ${param.maximum}.` });
        else out[name] = n;
        break;
      }
      case 'string':
        if (value.length === 0 || value.length > (param.maxLength ?? 200)) {
          errors.push({ pointer, code: value.length === 0 ? 'too_short' : 'too_long', detail: `Expected 1 to ${param.maxLength ?? 200} characters.` });
        } else out[name] = value;
        break;
      default:
        out[name] = value;
    }
  }
  if (errors.length > 0) {
    // A request whose only problems are of one of these kinds answers with that kind's own code.
    const code = errors.every((e) => e.code === 'invalid_character') ? 'invalid_character' : errors.every((e) => e.code === 'invalid_encoding') ? 'invalid_encoding' : 'validation_failed';
    throw new HttpProblem(code, 'The query string is not valid.', { errors });
  }
  return out;
}

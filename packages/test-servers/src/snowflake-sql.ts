/**
 * The few rewrites that take the Snowflake SQL a client sends to SQL Postgres runs. Everything
 * else (MERGE, `::` casts, VARIANT and TIMESTAMP_TZ through domains, PARSE_JSON through a function)
 * is the same text on both, which is the point: the emulation stays small enough to trust.
 */

/** One bound value as snowflake-sdk sends it: text (or null), or one text per row for an array bind. */
export type BindValue = string | null | (string | null)[];

/**
 * Replaces each `?` placeholder outside literals, quoted identifiers and comments with `$1`,
 * `$2`, ... in order, and returns how many there were.
 */
export function numberPlaceholders(sql: string): { text: string; count: number } {
  let out = '';
  let count = 0;
  let i = 0;
  while (i < sql.length) {
    const c = sql[i]!;
    const end = skipQuoted(sql, i);
    if (end > i) {
      out += sql.slice(i, end);
      i = end;
    } else if (c === '?') {
      out += `$${++count}`;
      i++;
    } else {
      out += c;
      i++;
    }
  }
  return { text: out, count };
}

/** The index after a literal, quoted identifier or comment starting at `i`, or `i` when none does. */
function skipQuoted(sql: string, i: number): number {
  const c = sql[i];
  const next = sql[i + 1];
  if (c === "'" || c === '"') {
    let j = i + 1;
    while (j < sql.length) {
      if (sql[j] === '\\' && c === "'") j += 2;
      else if (sql[j] === c && sql[j + 1] === c) j += 2;
      else if (sql[j] === c) return j + 1;
      else j++;
    }
    return sql.length;
  }
  if (c === '-' && next === '-') {
    const j = sql.indexOf('\n', i);
    return j === -1 ? sql.length : j + 1;
  }
  if (c === '/' && next === '*') {
    const j = sql.indexOf('*/', i + 2);
    return j === -1 ? sql.length : j + 2;
  }
  if (c === '$' && next === '$') {
    const j = sql.indexOf('$$', i + 2);
    return j === -1 ? sql.length : j + 2;
  }
  return i;
}

/**
 * Snowflake's `FROM VALUES (...), (...)` (a VALUES list without parentheses or alias, whose
 * columns are `column1`, `column2`, ...) as Postgres spells it: `FROM (VALUES ...) AS
 * ferry_values`. Postgres names VALUES columns `column1`, ... too. With `arrayRows`, the list
 * must be one row of placeholders, bound to arrays: it becomes an `unnest` of those arrays, one
 * row per element, which is how Snowflake runs an array-bound statement.
 */
export function rewriteFromValues(sql: string, arrayBound: boolean): { text: string; rewritten: boolean } {
  const pattern = /\bFROM\s+VALUES\s*\(/gi;
  let match: RegExpExecArray | null;
  while ((match = pattern.exec(sql)) !== null) {
    if (insideQuoted(sql, match.index)) continue;
    const listStart = match.index + match[0].length - 1;
    const listEnd = endOfValuesList(sql, listStart);
    const list = sql.slice(listStart, listEnd);
    let replacement: string;
    if (arrayBound) {
      const params = /^\(\s*(\$\d+(?:\s*,\s*\$\d+)*)\s*\)$/.exec(list.trim());
      if (params === null) return { text: sql, rewritten: false };
      const names = params[1]!.split(',').map((p) => p.trim());
      replacement = `FROM unnest(${names.map((p) => `${p}::text[]`).join(', ')}) AS ferry_values(${names.map((_, k) => `column${k + 1}`).join(', ')})`;
    } else {
      replacement = `FROM (VALUES ${list}) AS ferry_values`;
    }
    return { text: sql.slice(0, match.index) + replacement + sql.slice(listEnd), rewritten: true };
  }
  return { text: sql, rewritten: false };
}

/** True when `index` falls inside a literal, quoted identifier or comment. */
function insideQuoted(sql: string, index: number): boolean {
  let i = 0;
  while (i < index) {
    const end = skipQuoted(sql, i);
    if (end > i) {
      if (end > index) return true;
      i = end;
    } else i++;
  }
  return false;
}

/** The end of a VALUES list of parenthesised rows separated by commas, starting at the first `(`. */
function endOfValuesList(sql: string, start: number): number {
  let i = start;
  for (;;) {
    i = endOfParenthesised(sql, i);
    let j = i;
    while (j < sql.length && /\s/.test(sql[j]!)) j++;
    if (sql[j] !== ',') return i;
    j++;
    while (j < sql.length && /\s/.test(sql[j]!)) j++;
    if (sql[j] !== '(') return i;
    i = j;
  }
}

/** The index after the parenthesised group opening at `start`. */
function endOfParenthesised(sql: string, start: number): number {
  let depth = 0;
  let i = start;
  while (i < sql.length) {
    const end = skipQuoted(sql, i);
    if (end > i) {
      i = end;
      continue;
    }
    if (sql[i] === '(') depth++;
    else if (sql[i] === ')' && --depth === 0) return i + 1;
    i++;
  }
  return sql.length;
}

/**
 * What the emulated database needs so Snowflake's type names and functions mean the same thing:
 * VARIANT holds JSON (jsonb), the TIMESTAMP_* flavours are timestamps, PARSE_JSON parses.
 */
export const SNOWFLAKE_COMPAT_SQL = `
DO $$ BEGIN
  CREATE DOMAIN variant AS jsonb;
  CREATE DOMAIN timestamp_tz AS timestamptz;
  CREATE DOMAIN timestamp_ltz AS timestamptz;
  CREATE DOMAIN timestamp_ntz AS timestamp;
EXCEPTION WHEN duplicate_object THEN NULL; END $$;
CREATE OR REPLACE FUNCTION parse_json(text) RETURNS jsonb LANGUAGE sql IMMUTABLE STRICT AS 'SELECT $1::jsonb';
CREATE OR REPLACE FUNCTION to_variant(anyelement) RETURNS jsonb LANGUAGE sql IMMUTABLE STRICT AS 'SELECT to_jsonb($1)';
`;

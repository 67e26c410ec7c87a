import { ConnectorError } from '@ferry/core';
import { describe, expect, it } from 'vitest';
import { rowFilter } from './backfill-where.js';

const COLUMNS = new Set(['id', 'region', 'amount', 'note', 'created_at', 'flag', 'Mixed Case']);

async function refusal(where: string): Promise<string> {
  const error = await rowFilter('public.orders', where, COLUMNS).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConnectorError);
  expect((error as ConnectorError).code).toBe('invalid_where');
  expect((error as ConnectorError).retryable).toBe(false);
  return (error as ConnectorError).message;
}

describe('a backfill row filter', () => {
  it('is rendered again by Ferry: columns quoted, every literal a parameter numbered after the key', async () => {
    const filter = await rowFilter('public.orders', `region = 'eu' AND amount > 10 and (note like 'x%' or note is null)`, COLUMNS);
    expect(filter.sql(2)).toBe(`((t."region" = $3) AND (t."amount" > CAST($4 AS integer)) AND ((t."note" LIKE $5) OR (t."note" IS NULL)))`);
    expect(filter.values).toEqual(['eu', '10', 'x%']);
    expect(filter.sql(0)).toContain('$1');
  });

  it('keeps what a literal is: a decimal stays numeric, a string unknown, a boolean and NULL as they are', async () => {
    const filter = await rowFilter('public.orders', `amount >= 1.5 AND flag IS NOT TRUE AND note <> NULL AND id BETWEEN 1 AND 9 AND region NOT IN ('a', 'b') AND flag = false`, COLUMNS);
    expect(filter.sql(0)).toBe(
      `((t."amount" >= CAST($1 AS numeric)) AND (t."flag" IS NOT TRUE) AND (t."note" <> NULL) AND (t."id" BETWEEN CAST($2 AS integer) AND CAST($3 AS integer)) AND (t."region" NOT IN ($4, $5)) AND (t."flag" = FALSE))`,
    );
    expect(filter.values).toEqual(['1.5', '1', '9', 'a', 'b']);
  });

  it('takes casts to common types, a few pure functions and quoted column names', async () => {
    const filter = await rowFilter('public.orders', `lower("Mixed Case") = 'x' and created_at::date >= '2026-01-01' and coalesce(amount, 0) != 3 and date_trunc('day', created_at) < now()::timestamptz`, COLUMNS).catch((e: Error) => e);
    // now() is not pure: refused, naming it.
    expect(filter).toBeInstanceOf(ConnectorError);
    expect((filter as Error).message).toContain('calls now');
    const ok = await rowFilter('public.orders', `lower("Mixed Case") = 'x' and created_at::date >= '2026-01-01' and coalesce(amount, 0) != 3`, COLUMNS);
    expect(ok.sql(0)).toBe(`((lower(t."Mixed Case") = $1) AND (CAST(t."created_at" AS date) >= $2) AND (COALESCE(t."amount", CAST($3 AS integer)) <> CAST($4 AS integer)))`);
  });

  it('never splices what it was given: a quote in a literal is a parameter value', async () => {
    const filter = await rowFilter('public.orders', `note = 'it''s; DROP TABLE orders; --'`, COLUMNS);
    expect(filter.sql(0)).toBe(`(t."note" = $1)`);
    expect(filter.values).toEqual([`it's; DROP TABLE orders; --`]);
  });

  it.each([
    ['id = 1; DROP TABLE orders', 'one boolean expression'],
    ['id = 1 ORDER BY id', 'one boolean expression'],
    ['id = 1 UNION SELECT 1', 'one boolean expression'],
    ['id IN (SELECT id FROM users)', 'subquery'],
    ['EXISTS (SELECT 1)', 'subquery'],
    ['pg_sleep(10) IS NULL', 'calls pg_sleep'],
    ['id = $1', 'parameter'],
    ['password = 1', 'not a column'],
    ['users.id = 1', 'unqualified'],
    ['ctid = 1', 'not a column'],
    ['id ~ \'x\'', 'operator ~'],
    ['id::regclass = 1', 'casts to regclass'],
    ['id = ', 'does not parse'],
    ['(id = 1', 'does not parse'],
    ['count(*) > 1', 'calls count'],
    ['lower(note ORDER BY note) = 1', 'calls lower'],
  ])('refuses %s', async (where, why) => {
    expect(await refusal(where)).toContain(why);
  });

  it('refuses a filter that is too long or nests too deeply', async () => {
    expect(await refusal(`id = ${'1'.repeat(4001)}`)).toContain('longer than');
    // Parentheses alone make no nodes; each NOT is one.
    expect(await refusal(`${'NOT '.repeat(100)}flag`)).toContain('nests too deeply');
    expect((await rowFilter('public.orders', `${'('.repeat(100)}id = 1${')'.repeat(100)}`, COLUMNS)).sql(0)).toBe('(t."id" = CAST($1 AS integer))');
  });
});

import { describe, expect, it } from 'vitest';
import { numberPlaceholders, rewriteFromValues } from './snowflake-sql.js';

describe('numberPlaceholders', () => {
  it('numbers the ? placeholders in order, leaving literals, quoted names and comments alone', () => {
    const sql = `SELECT ?, 'what?', "odd?name", $$body?$$ /* why? */ FROM t WHERE a = ? -- really?\nAND b = ?`;
    expect(numberPlaceholders(sql)).toEqual({
      text: `SELECT $1, 'what?', "odd?name", $$body?$$ /* why? */ FROM t WHERE a = $2 -- really?\nAND b = $3`,
      count: 3,
    });
    expect(numberPlaceholders(`SELECT 'it''s ?' , ?`)).toEqual({ text: `SELECT 'it''s ?' , $1`, count: 1 });
  });
});

describe('rewriteFromValues', () => {
  it("spells Snowflake's FROM VALUES list as Postgres's parenthesised, aliased VALUES", () => {
    expect(rewriteFromValues('SELECT column1 FROM VALUES ($1, $2), ($3, (1 + 2)) WHERE true', false)).toEqual({
      text: 'SELECT column1 FROM (VALUES ($1, $2), ($3, (1 + 2))) AS ferry_values WHERE true',
      rewritten: true,
    });
  });

  it('turns an array-bound row of placeholders into an unnest of the arrays, one row per element', () => {
    expect(rewriteFromValues('INSERT INTO t SELECT column1, column2 FROM VALUES ($1, $2)', true)).toEqual({
      text: 'INSERT INTO t SELECT column1, column2 FROM unnest($1::text[], $2::text[]) AS ferry_values(column1, column2)',
      rewritten: true,
    });
  });

  it('leaves other statements, and a FROM VALUES inside a literal, as they are', () => {
    expect(rewriteFromValues('INSERT INTO t VALUES ($1, $2)', true).rewritten).toBe(false);
    expect(rewriteFromValues("SELECT 'FROM VALUES (1)'", false).rewritten).toBe(false);
    expect(rewriteFromValues('SELECT * FROM VALUES ($1, 2)', true).rewritten).toBe(false);
  });
});

import type { Knex } from 'knex';

/** A knex instance or an open transaction: repositories work on either. */
export type Db = Knex | Knex.Transaction;

/**
 * Rows per multi-row INSERT: knex writes one on SQLite as a compound SELECT, which SQLite caps at
 * 500 terms, and every statement at 32,766 bound values.
 */
export const INSERT_CHUNK = 250;

/** Serializes a JSON column value. */
export function toJson(value: unknown): string {
  return JSON.stringify(value);
}

/** Parses a JSON column value; `null` stays `null`. */
export function fromJson<T>(value: unknown): T {
  return (value === null || value === undefined ? null : JSON.parse(String(value))) as T;
}

/** Normalizes a boolean column (SQLite answers 0/1, Postgres true/false). */
export function toBool(value: unknown): boolean {
  return value === true || value === 1 || value === '1';
}

/** Normalizes a count or integer column (pg answers bigint as string). */
export function toInt(value: unknown): number {
  return typeof value === 'number' ? value : Number(value ?? 0);
}

/** Rows affected by an update or delete, as a number on both dialects. */
export function affected(result: unknown): number {
  return typeof result === 'number' ? result : Array.isArray(result) ? result.length : 0;
}

/** True when the error is a unique-constraint violation, on either dialect. */
export function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: string; message?: string } | null;
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

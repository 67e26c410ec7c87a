import type { Knex } from 'knex';
import type { KeysetResult, SortOrder } from '../common/index.js';

export type { KeysetResult };

/**
 * Runs a keyset-paginated query: rows strictly after `after` in the order of `columns` (all
 * ascending, or with `order: 'desc'` all descending; the last one unique), at most `limit` of
 * them. Both databases read a descending page as a backward scan of the same index.
 *
 * Keyset rather than OFFSET so a page costs the same at any depth and concurrent inserts never
 * shift a page (no gap, no duplicate). The position is compared as a row value,
 * `(a, b) > (?, ?)`, which both SQLite and Postgres answer with one index range scan (the
 * equivalent OR-ed form made both planners scan far more of the index).
 */
export async function keysetPage<TRow>(
  query: Knex.QueryBuilder,
  columns: readonly string[],
  after: readonly (string | number)[] | undefined,
  limit: number,
  order: SortOrder = 'asc',
): Promise<KeysetResult<TRow>> {
  if (after) {
    if (after.length !== columns.length) throw new Error('keyset position does not match the sort columns');
    const list = columns.map(() => '??').join(', ');
    const values = columns.map(() => '?').join(', ');
    query.whereRaw(`(${list}) ${order === 'asc' ? '>' : '<'} (${values})`, [...columns, ...after]);
  }
  for (const column of columns) query.orderBy(column, order);
  const rows = (await query.limit(limit + 1)) as TRow[];
  const hasMore = rows.length > limit;
  return { rows: hasMore ? rows.slice(0, limit) : rows, hasMore };
}

import type { Knex } from 'knex';
import type { Dialect } from './storage-config.js';

/**
 * Every difference between SQLite and Postgres that the storage layer relies on, in one place.
 * A repository asks for a capability (`inProcess`, `lockForClaim`, `rows`) or picks its variant
 * of something written twice (`pick`: SQL text, parameter order); none compares dialect names.
 */
export interface StorageDialect {
  readonly name: Dialect;
  /**
   * The database runs in this process (SQLite, through better-sqlite3): a prepared statement run
   * row by row inside a transaction beats any multi-row statement (measured 1.5-2x), since there
   * is no round trip to save and no SQL to parse again. A server (Postgres) wants one statement
   * per batch. Only an in-process database has the direct, outside-knex read path.
   */
  readonly inProcess: boolean;
  /** The rows of a `knex.raw` result. */
  rows<T>(result: unknown): T[];
  /**
   * Makes a claim's candidate query skip the rows another transaction holds (Postgres:
   * `FOR UPDATE SKIP LOCKED`, so concurrent claimers split the queue). A SQLite claim already
   * runs alone (`BEGIN IMMEDIATE`), and the query is left as it is.
   */
  lockForClaim(query: Knex.QueryBuilder): Knex.QueryBuilder;
  /**
   * Runs the migrations (`run`), serialized across engines starting together where the database
   * needs it: Postgres engines would race to create knex's own bookkeeping tables (its lock table
   * only helps once they exist), so they take a transaction-scoped advisory lock on one
   * connection while the migrations run on others (which needs a pool of two or more).
   */
  migrate(knex: Knex, run: () => Promise<unknown>, poolMax: number): Promise<void>;
  /** This dialect's variant of something written once per dialect. */
  pick<T>(variants: Record<Dialect, T>): T;
}

/** Advisory lock id under which Postgres migrations run (an arbitrary constant: "ferr" in ASCII). */
const MIGRATION_LOCK_KEY = 0x66_65_72_72;

const SQLITE: StorageDialect = {
  name: 'sqlite',
  inProcess: true,
  rows: <T>(result: unknown) => result as T[],
  lockForClaim: (query) => query,
  migrate: async (_knex, run) => {
    await run();
  },
  pick: (variants) => variants.sqlite,
};

const POSTGRES: StorageDialect = {
  name: 'postgres',
  inProcess: false,
  rows: <T>(result: unknown) => (result as { rows: T[] }).rows,
  lockForClaim: (query) => query.forUpdate().skipLocked(),
  migrate: async (knex, run, poolMax) => {
    if (poolMax < 2) {
      await run();
      return;
    }
    await knex.transaction(async (trx) => {
      await trx.raw('SELECT pg_advisory_xact_lock(?)', [MIGRATION_LOCK_KEY]);
      await run();
    });
  },
  pick: (variants) => variants.postgres,
};

/** The dialect of a storage configuration. */
export function storageDialect(name: Dialect): StorageDialect {
  return name === 'postgres' ? POSTGRES : SQLITE;
}

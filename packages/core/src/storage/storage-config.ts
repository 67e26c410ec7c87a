import { createRequire } from 'node:module';
import type { Knex } from 'knex';
import { sqliteStatement } from './sqlite-direct.js';

/** The SQL dialects the engine stores its state in. */
export type Dialect = 'sqlite' | 'postgres';

/**
 * Where an engine keeps its state. Build one with {@link sqlite} or {@link postgres}; both run
 * the same migrations and the same queries through knex.
 */
export interface StorageConfig {
  readonly dialect: Dialect;
  /** The knex configuration; advanced users may adjust the pool. */
  readonly knex: Knex.Config;
  /** Human-readable target for logs, with no credentials in it. */
  readonly description: string;
  /** True when nothing outlives the process (in-memory SQLite). */
  readonly ephemeral: boolean;
}

/** Options of {@link sqlite}. */
export interface SqliteOptions {
  /** Path of the database file, or `:memory:` for a private in-memory database. */
  filename: string;
  /** How long a writer waits for another process's lock before failing, in ms (default 5000). */
  busyTimeoutMs?: number;
}

/** Options of {@link postgres}. */
export interface PostgresOptions {
  /** `postgres://user:password@host:port/database` */
  connectionString: string;
  /** Connection pool bounds (default 0..10). */
  pool?: { min?: number; max?: number };
  /** Schema to create the tables in (default `public`). */
  searchPath?: string;
}

const require = createRequire(import.meta.url);

/** What knex hands its dialect's `_query`. */
interface KnexQueryObject {
  sql: string;
  bindings?: unknown[];
  options?: { safeIntegers?: boolean };
  response?: unknown;
  context?: unknown;
}

/** The part of a better-sqlite3 statement knex's query path uses. */
interface CachedStatement {
  readonly reader: boolean;
  safeIntegers(on: boolean): unknown;
  all(bindings: unknown[]): unknown;
  run(bindings: unknown[]): unknown;
}

/**
 * better-sqlite3 with every transaction opened as `BEGIN IMMEDIATE`.
 *
 * knex opens SQLite transactions with a plain (deferred) `BEGIN`; two processes that both read
 * and then write can then deadlock on the lock upgrade, which `busy_timeout` cannot resolve.
 * Taking the write lock at `BEGIN` makes every transaction a proper compare-and-set section,
 * which the lease and queue claims rely on when several engines share one file. Its queries run
 * on the connection's cached prepared statements ({@link sqliteStatement}).
 */
function immediateSqliteClient(): unknown {
  // knex exposes no option for this, so its own classes are extended (knex has no `exports` map).
  type Ctor = new (...args: unknown[]) => { query(conn: unknown, sql: string): unknown };
  const Client = require('knex/lib/dialects/better-sqlite3/index.js') as Ctor;
  const Transaction = require('knex/lib/dialects/sqlite3/execution/sqlite-transaction.js') as Ctor;
  class ImmediateTransaction extends Transaction {
    begin(conn: unknown) {
      return this.query(conn, 'BEGIN IMMEDIATE;');
    }
  }
  class ImmediateClient extends Client {
    transaction(container: unknown, config: unknown, outerTx: unknown) {
      return new ImmediateTransaction(this, container, config, outerTx);
    }

    // knex prepares every statement anew, which costs more than running it (tens of µs for the
    // small statements of an API write against this schema): the connection's cached ones are used.
    async _query(connection: { prepare(sql: string): CachedStatement }, obj: KnexQueryObject): Promise<KnexQueryObject> {
      if (!obj.sql) throw new Error('The query is empty');
      if (!connection) throw new Error('No connection provided');
      const statement = sqliteStatement(connection, obj.sql);
      // A cached statement keeps the mode a previous query set: always set it.
      statement.safeIntegers(obj.options?.safeIntegers ?? false);
      const bindings = (this as unknown as { _formatBindings(b: unknown): unknown[] })._formatBindings(obj.bindings);
      if (statement.reader) {
        obj.response = statement.all(bindings);
        return obj;
      }
      const response = statement.run(bindings) as { lastInsertRowid: unknown; changes: number };
      obj.response = response;
      obj.context = { lastID: response.lastInsertRowid, changes: response.changes };
      return obj;
    }
  }
  return ImmediateClient;
}

/**
 * SQLite storage through better-sqlite3: the embedded default. One writer at a time (WAL, a
 * single pooled connection per engine), so keep it for one engine process or a few sharing a file.
 *
 * @example
 * ```ts
 * const engine = await createEngine({ storage: sqlite({ filename: 'ferry.db' }), secretKey });
 * ```
 */
export function sqlite(options: SqliteOptions): StorageConfig {
  const busyTimeout = options.busyTimeoutMs ?? 5000;
  const memory = options.filename === ':memory:' || options.filename === '';
  return {
    dialect: 'sqlite',
    ephemeral: memory,
    description: memory ? 'sqlite (in memory)' : `sqlite (${options.filename})`,
    knex: {
      client: immediateSqliteClient() as Knex.Config['client'],
      connection: { filename: memory ? ':memory:' : options.filename },
      useNullAsDefault: true,
      // A failed statement's error names its SQL with `?`, not the values bound (event payloads,
      // response bodies): errors reach logs.
      compileSqlOnError: false,
      // One connection: SQLite has one writer anyway, and an in-memory database lives and dies
      // with its connection, so the pool must never drop it.
      pool: {
        min: 1,
        max: 1,
        idleTimeoutMillis: 2_147_483_647,
        afterCreate(conn: { pragma(sql: string): unknown }, done: (err: Error | null, conn: unknown) => void) {
          try {
            if (!memory) conn.pragma('journal_mode = WAL');
            conn.pragma(`busy_timeout = ${busyTimeout}`);
            conn.pragma('foreign_keys = ON');
            conn.pragma('synchronous = NORMAL');
            done(null, conn);
          } catch (error) {
            done(error as Error, conn);
          }
        },
      },
    },
  };
}

/**
 * Postgres storage through pg: for production, and for several engine instances sharing work
 * (leases and `FOR UPDATE SKIP LOCKED` queues).
 *
 * @example
 * ```ts
 * const engine = await createEngine({ storage: postgres({ connectionString: process.env.DATABASE_URL! }), secretKey });
 * ```
 */
export function postgres(options: PostgresOptions): StorageConfig {
  let description = 'postgres';
  try {
    const url = new URL(options.connectionString);
    description = `postgres (${url.hostname}:${url.port || '5432'}${url.pathname})`;
  } catch {
    // An unparsable string is reported by pg at connect time; never echo it, it may hold a password.
  }
  return {
    dialect: 'postgres',
    ephemeral: false,
    description,
    knex: {
      client: 'pg',
      connection: { connectionString: options.connectionString },
      searchPath: options.searchPath ? [options.searchPath] : undefined,
      pool: { min: options.pool?.min ?? 0, max: options.pool?.max ?? 10 },
      compileSqlOnError: false,
    },
  };
}

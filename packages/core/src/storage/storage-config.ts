import { createRequire } from 'node:module';
import type { Knex } from 'knex';
import type { Clock } from '../common/index.js';
import { sqliteStatement, type DirectTransactions } from './sqlite-direct.js';
import { realTimers, retryWhileBusy, type SqliteLockWait } from './sqlite-lock-wait.js';
import type { SqliteWriterConfig } from './sqlite-writer-thread.js';

/** The SQL dialects the engine stores its state in. */
export type Dialect = 'sqlite' | 'postgres';

/**
 * Where an engine keeps its state. Build one with {@link sqliteStorage} or {@link postgresStorage}; both run
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
  /** SQLite on a file: where the writer thread commits pipeline batches (see {@link SqliteOptions.writerThread}); absent otherwise. */
  readonly sqliteWriter?: SqliteWriterConfig;
}

/** Options of {@link sqliteStorage}. */
export interface SqliteOptions {
  /** Path of the database file, or `:memory:` for a private in-memory database. */
  filename: string;
  /**
   * How long a write waits for the lock another process holds before failing with the
   * storage-unavailable error (HTTP 503 with `Retry-After`), in ms (default 5000). The wait is
   * asynchronous: reads, `/healthz` and other work go on meanwhile (see {@link SqliteLockWait}).
   */
  busyTimeoutMs?: number;
  /** The clock that times those waits; real time by default (tests pass a virtual clock). */
  clock?: Clock;
  /**
   * Commit pipeline batches on a thread of their own (default true for a file; an in-memory
   * database has one connection and cannot). A batch's commit then runs on a second core while
   * the engine prepares the next batch, instead of stopping the event loop for its duration.
   */
  writerThread?: boolean;
}

/** Options of {@link postgresStorage}. */
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

/** The part of a better-sqlite3 connection the write-lock wait uses. */
interface LockingConnection {
  readonly inTransaction: boolean;
  prepare(sql: string): { run(params: readonly unknown[]): unknown };
}

/** The part of knex's client the write-lock wait uses. */
interface PoolingClient {
  readonly transacting?: boolean;
  acquireConnection(): Promise<LockingConnection>;
  releaseConnection(conn: unknown): Promise<unknown>;
}

/** The same text knex's path would send, so both share one cached prepared statement. */
const BEGIN_IMMEDIATE = 'BEGIN IMMEDIATE;';

/** The page size of a new SQLite file, in bytes (see the pool's afterCreate). */
const SQLITE_PAGE_SIZE = 16_384;

/**
 * better-sqlite3 with every transaction opened as `BEGIN IMMEDIATE`, and waits for another
 * process's lock that never block the event loop.
 *
 * knex opens SQLite transactions with a plain (deferred) `BEGIN`; two processes that both read
 * and then write can then deadlock on the lock upgrade, which `busy_timeout` cannot resolve.
 * Taking the write lock at `BEGIN` makes every transaction a proper compare-and-set section,
 * which the lease and queue claims rely on when several engines share one file. Its queries run
 * on the connection's cached prepared statements ({@link sqliteStatement}).
 *
 * The lock is waited for as {@link SqliteLockWait} describes: a transaction takes the pooled
 * connection, tries `BEGIN IMMEDIATE`, and on `SQLITE_BUSY` gives the connection back and tries
 * again later; a statement outside a transaction is run again the same way. Inside a transaction
 * the lock is already held, so nothing there waits.
 */
function immediateSqliteClient(wait: SqliteLockWait): unknown {
  // knex exposes no option for this, so its own classes are extended (knex has no `exports` map).
  type Ctor = new (...args: unknown[]) => { query(conn: unknown, sql: string): unknown };
  const Client = require('knex/lib/dialects/better-sqlite3/index.js') as Ctor;
  const Transaction = require('knex/lib/dialects/sqlite3/execution/sqlite-transaction.js') as new (...args: unknown[]) => {
    client: PoolingClient;
    query(conn: unknown, sql: string): Promise<unknown>;
    acquireConnection(config: { connection?: unknown } | undefined, cb: (conn: unknown) => Promise<unknown>): Promise<unknown>;
  };
  const Runner = require('knex/lib/execution/runner.js') as new (client: unknown, builder: unknown) => { connection: unknown; run(): Promise<unknown> };

  /** Takes the pooled connection with the write lock held on it, waiting as long as `wait` allows. */
  const lockedConnection = (client: PoolingClient) =>
    retryWhileBusy(wait, async () => {
      const conn = await client.acquireConnection();
      try {
        sqliteStatement(conn, BEGIN_IMMEDIATE).run([]);
        return conn;
      } catch (error) {
        await client.releaseConnection(conn);
        throw error;
      }
    });

  class ImmediateTransaction extends Transaction {
    /** True once `BEGIN IMMEDIATE` ran while the connection was taken. */
    private begun = false;

    override async acquireConnection(config: { connection?: unknown } | undefined, cb: (conn: unknown) => Promise<unknown>): Promise<unknown> {
      // A savepoint inside a transaction, or knex's own schema work on a connection it holds:
      // the lock is held already or taken by `begin` on that connection.
      if (config?.connection || this.client.transacting) return super.acquireConnection(config, cb);
      const conn = await lockedConnection(this.client);
      this.begun = true;
      try {
        return await super.acquireConnection({ ...config, connection: conn }, cb);
      } finally {
        delete (conn as { __knexTxId?: unknown }).__knexTxId;
        // Never hand the pool a connection still inside a transaction: it would keep the lock.
        if (conn.inTransaction) {
          try {
            sqliteStatement(conn, 'ROLLBACK;').run([]);
          } catch {
            // The connection is unusable then; the pool's next query reports it.
          }
        }
        await this.client.releaseConnection(conn);
      }
    }

    begin(conn: unknown) {
      if (this.begun) return Promise.resolve();
      return this.query(conn, BEGIN_IMMEDIATE);
    }
  }

  /** A statement outside any transaction, run again while another process holds the lock. */
  class WaitingRunner extends Runner {
    override async run(): Promise<unknown> {
      return retryWhileBusy(wait, () => {
        // A failed attempt's connection went back to the pool; the next one takes it anew.
        this.connection = undefined;
        return super.run();
      });
    }
  }

  class ImmediateClient extends Client implements DirectTransactions {
    /**
     * Runs `work` in a transaction on the pooled connection, without knex's transaction object
     * (see {@link DirectTransactions}): the connection is taken with the write lock held, and
     * committed, or rolled back, and given back when `work` settles.
     */
    async runTransaction<T>(work: (conn: unknown) => Promise<T>): Promise<T> {
      const pooling = this as unknown as PoolingClient;
      const conn = await lockedConnection(pooling);
      try {
        const value = await work(conn);
        sqliteStatement(conn, 'COMMIT;').run([]);
        return value;
      } finally {
        // Still open: `work` failed, or the COMMIT did (the error goes on to the caller).
        if (conn.inTransaction) {
          try {
            sqliteStatement(conn, 'ROLLBACK;').run([]);
          } catch {
            // The connection is unusable then; the pool's next query reports it.
          }
        }
        await pooling.releaseConnection(conn);
      }
    }

    transaction(container: unknown, config: unknown, outerTx: unknown) {
      return new ImmediateTransaction(this, container, config, outerTx);
    }

    runner(builder: { _connection?: unknown; _sequence?: unknown }) {
      // Inside a transaction the lock is held; a schema change runs several statements, and
      // running them again from the start after a failure part-way would not be safe.
      if ((this as unknown as PoolingClient).transacting || builder._connection || builder._sequence) return new Runner(this, builder);
      return new WaitingRunner(this, builder);
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
 * const engine = await createEngine({ storage: sqliteStorage({ filename: 'ferry.db' }), secretKey });
 * ```
 */
export function sqliteStorage(options: SqliteOptions): StorageConfig {
  const wait: SqliteLockWait = { timeoutMs: options.busyTimeoutMs ?? 5000, clock: options.clock ?? realTimers };
  const memory = options.filename === ':memory:' || options.filename === '';
  return {
    dialect: 'sqlite',
    ephemeral: memory,
    description: memory ? 'sqlite (in memory)' : `sqlite (${options.filename})`,
    ...(memory || options.writerThread === false ? {} : { sqliteWriter: { filename: options.filename, wait } }),
    knex: {
      client: immediateSqliteClient(wait) as Knex.Config['client'],
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
            // 16 KiB pages for a new file (an existing one keeps its size): the event log's
            // inserts cost SQLite about a sixth less than with the default 4 KiB. It must come
            // before WAL mode, which fixes the size.
            if (!memory) conn.pragma(`page_size = ${SQLITE_PAGE_SIZE}`);
            if (!memory) conn.pragma('journal_mode = WAL');
            // No synchronous wait for a lock: the client waits asynchronously instead (see SqliteLockWait).
            conn.pragma('busy_timeout = 0');
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
 * const engine = await createEngine({ storage: postgresStorage({ connectionString: process.env.DATABASE_URL! }), secretKey });
 * ```
 */
export function postgresStorage(options: PostgresOptions): StorageConfig {
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

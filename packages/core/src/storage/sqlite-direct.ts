import type { Knex } from 'knex';
import type { Db } from './sql-helpers.js';
import { isSqliteBusy } from './sqlite-lock-wait.js';

/** The part of a better-sqlite3 statement the hot paths use. */
export interface SqliteStatement {
  run(params: Record<string, unknown> | readonly unknown[]): unknown;
}

/** A better-sqlite3 connection, as far as preparing statements goes. */
interface Preparing<S> {
  prepare(sql: string): S;
}

/** Prepared statements kept per connection; the oldest goes first past this many. */
const STATEMENT_CACHE_SIZE = 500;
// Preparing is most of the cost of a small statement (knex prepares every query anew), and the
// same SQL texts recur; `whereIn` lists make texts vary, hence the bound.
const statements = new WeakMap<object, Map<string, unknown>>();

/**
 * A prepared statement on a better-sqlite3 connection, cached for the connection's lifetime:
 * shared by knex's query path, the direct hot paths and the idle reader.
 */
export function sqliteStatement<S = SqliteStatement>(conn: Preparing<S>, sql: string): S {
  let byText = statements.get(conn);
  if (!byText) {
    byText = new Map();
    statements.set(conn, byText);
  }
  let statement = byText.get(sql) as S | undefined;
  if (statement === undefined) {
    statement = conn.prepare(sql);
    if (byText.size >= STATEMENT_CACHE_SIZE) byText.delete(byText.keys().next().value!);
    byText.set(sql, statement);
  }
  return statement;
}

/**
 * Runs synchronous work on the raw better-sqlite3 connection inside a transaction: the caller's
 * if `db` is one (knex hands a transaction's own connection to its client), else a new one.
 * For hot paths only; everything else goes through knex.
 */
export async function inSqliteTransaction(db: Db, work: (conn: Preparing<SqliteStatement>) => void): Promise<void> {
  const run = async (trx: Knex.Transaction) => {
    const client = trx.client as { acquireConnection(): Promise<Preparing<SqliteStatement>>; releaseConnection(conn: unknown): Promise<void> };
    const conn = await client.acquireConnection();
    try {
      work(conn);
    } finally {
      await client.releaseConnection(conn);
    }
  };
  if ((db as Knex.Transaction).isTransaction) await run(db as Knex.Transaction);
  else if (hasDirectTransactions(db.client)) await db.client.runTransaction(async (conn) => work(conn as Preparing<SqliteStatement>));
  else await (db as Knex).transaction(run);
}

/**
 * What the SQLite client offers beyond knex: transactions run on the pooled connection without
 * a knex transaction object.
 *
 * A knex transaction builds a whole knex instance for itself (its client, its runner, every
 * query method defined again): 160 to 410 µs here, against 45 to 117 µs for the same
 * `BEGIN IMMEDIATE` and `COMMIT` on the connection, and most API writes are one short
 * transaction. The connection is the pool's only one, so while a transaction holds it every
 * other query waits for it in the pool, as it does for a knex transaction.
 */
export interface DirectTransactions {
  runTransaction<T>(work: (conn: unknown) => Promise<T>): Promise<T>;
}

/** True when knex's `client` runs transactions directly (the SQLite client of sqliteStorage). */
export function hasDirectTransactions(client: unknown): client is DirectTransactions {
  return typeof (client as Partial<DirectTransactions>).runTransaction === 'function';
}

/**
 * A `Db` whose every query runs on `conn`, a connection a direct transaction holds: what the
 * repositories use inside it. Only what they use of knex is there: the call that starts a query
 * on a table, `raw`, `isTransaction`, and a client handing out `conn` (for the hot paths that
 * run statements on it themselves).
 */
export function connectionDb(knex: Knex, conn: unknown): Db {
  const db = ((table: string) => knex(table).connection(conn)) as unknown as Knex.Transaction & { isTransaction: boolean };
  const raw = (sql: string, bindings?: readonly unknown[]) => {
    const query = bindings === undefined ? knex.raw(sql) : knex.raw(sql, bindings as Knex.RawBinding[]);
    // What QueryBuilder.connection() sets: knex's runner takes this connection instead of the pool's.
    (query as unknown as { _connection: unknown })._connection = conn;
    return query;
  };
  Object.assign(db, {
    raw,
    isTransaction: true,
    client: { acquireConnection: () => Promise.resolve(conn), releaseConnection: () => Promise.resolve() },
  });
  return db;
}

/** The part of a better-sqlite3 connection the idle-read path uses. */
interface ReadableConnection {
  readonly open: boolean;
  readonly inTransaction: boolean;
  prepare(sql: string): { get(...params: unknown[]): unknown; all(...params: unknown[]): unknown[]; run(...params: unknown[]): unknown };
}

/**
 * Reads on SQLite's one pooled connection without going through knex's pool, when that is safe.
 *
 * A knex query costs about 100 µs here, nearly all of it pool and builder overhead around a
 * statement better-sqlite3 runs in a few µs; the API's hottest reads (an API key, a pipeline)
 * pay it on every request. better-sqlite3 runs statements synchronously, so no other query can
 * interleave with one; the only hazard is a transaction left open across awaits by another async
 * flow, whose uncommitted rows a read would see. So a read runs directly only while the
 * connection is outside any transaction; otherwise the caller goes through knex, which waits
 * for the transaction like every other query. Either way it sees committed data only.
 */
export class SqliteIdleReader {
  private conn: ReadableConnection | null = null;

  constructor(private readonly knex: Knex) {}

  /** Takes hold of the pooled connection (call once the database is migrated). */
  async prime(): Promise<void> {
    const client = this.knex.client as { acquireConnection(): Promise<ReadableConnection>; releaseConnection(conn: unknown): Promise<void> };
    const conn = await client.acquireConnection();
    await client.releaseConnection(conn);
    this.conn = conn;
  }

  /** Forgets the connection (storage closing). */
  release(): void {
    this.conn = null;
  }

  private statement(sql: string): ReturnType<ReadableConnection['prepare']> | undefined {
    const conn = this.conn;
    if (!conn || !conn.open || conn.inTransaction) return undefined;
    return sqliteStatement(conn, sql);
  }

  /** One row (`null` when none), or `undefined` when the direct path is not available now. */
  get(sql: string, params: readonly unknown[]): Record<string, unknown> | null | undefined {
    const statement = this.statement(sql);
    if (!statement) return undefined;
    return busyAsUndefined(() => (statement.get(...params) as Record<string, unknown> | undefined) ?? null);
  }

  /**
   * Runs a write that may be skipped (bookkeeping such as a key's last use) once, without waiting
   * for the write lock: true when it ran, false when another process holds the lock, `undefined`
   * when the direct path is not available now (the caller then goes through knex).
   */
  tryWrite(sql: string, params: readonly unknown[]): boolean | undefined {
    const statement = this.statement(sql);
    if (!statement) return undefined;
    return busyAsUndefined(() => (statement.run(...params), true)) ?? false;
  }

  /** Every row, or `undefined` when the direct path is not available now. */
  all(sql: string, params: readonly unknown[]): Record<string, unknown>[] | undefined {
    const statement = this.statement(sql);
    if (!statement) return undefined;
    return busyAsUndefined(() => statement.all(...params) as Record<string, unknown>[]);
  }
}

/**
 * A WAL read needs no lock, except in rare moments (another process recovering the log, or
 * closing the last connection); the connection has no synchronous busy wait, so such a read
 * answers SQLITE_BUSY at once. `undefined` sends it down knex's path, which waits without blocking.
 */
function busyAsUndefined<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch (error) {
    if (isSqliteBusy(error)) return undefined;
    throw error;
  }
}

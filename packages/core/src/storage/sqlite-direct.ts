import type { Knex } from 'knex';
import type { Db } from './sql-helpers.js';

/** The part of a better-sqlite3 statement the hot paths use. */
export interface SqliteStatement {
  run(params: Record<string, unknown>): unknown;
}

/** The part of a better-sqlite3 connection the hot paths use. */
interface SqliteConnection {
  prepare(sql: string): SqliteStatement;
}

// Prepared once per connection and SQL text: preparing is most of the cost of a small statement.
const statements = new WeakMap<object, Map<string, SqliteStatement>>();

/** A prepared statement on a better-sqlite3 connection, cached for the connection's lifetime. */
export function sqliteStatement(conn: SqliteConnection, sql: string): SqliteStatement {
  let byText = statements.get(conn);
  if (!byText) {
    byText = new Map();
    statements.set(conn, byText);
  }
  let statement = byText.get(sql);
  if (!statement) {
    statement = conn.prepare(sql);
    byText.set(sql, statement);
  }
  return statement;
}

/**
 * Runs synchronous work on the raw better-sqlite3 connection inside a transaction: the caller's
 * if `db` is one (knex hands a transaction's own connection to its client), else a new one.
 * For hot paths only; everything else goes through knex.
 */
export async function inSqliteTransaction(db: Db, work: (conn: SqliteConnection) => void): Promise<void> {
  const run = async (trx: Knex.Transaction) => {
    const client = trx.client as { acquireConnection(): Promise<SqliteConnection>; releaseConnection(conn: unknown): Promise<void> };
    const conn = await client.acquireConnection();
    try {
      work(conn);
    } finally {
      await client.releaseConnection(conn);
    }
  };
  if ((db as Knex.Transaction).isTransaction) await run(db as Knex.Transaction);
  else await (db as Knex).transaction(run);
}

/** The part of a better-sqlite3 connection the idle-read path uses. */
interface ReadableConnection {
  readonly open: boolean;
  readonly inTransaction: boolean;
  prepare(sql: string): { get(...params: unknown[]): unknown; all(...params: unknown[]): unknown[] };
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
  private readonly prepared = new Map<string, ReturnType<ReadableConnection['prepare']>>();

  constructor(private readonly knex: Knex) {}

  /** Takes hold of the pooled connection (call once the database is migrated). */
  async prime(): Promise<void> {
    const client = this.knex.client as { acquireConnection(): Promise<ReadableConnection>; releaseConnection(conn: unknown): Promise<void> };
    const conn = await client.acquireConnection();
    await client.releaseConnection(conn);
    if (conn !== this.conn) this.prepared.clear();
    this.conn = conn;
  }

  /** Forgets the connection (storage closing). */
  release(): void {
    this.conn = null;
    this.prepared.clear();
  }

  private statement(sql: string): ReturnType<ReadableConnection['prepare']> | undefined {
    const conn = this.conn;
    if (!conn || !conn.open || conn.inTransaction) return undefined;
    let statement = this.prepared.get(sql);
    if (!statement) {
      statement = conn.prepare(sql);
      this.prepared.set(sql, statement);
    }
    return statement;
  }

  /** One row (`null` when none), or `undefined` when the direct path is not available now. */
  get(sql: string, params: readonly unknown[]): Record<string, unknown> | null | undefined {
    const statement = this.statement(sql);
    if (!statement) return undefined;
    return (statement.get(...params) as Record<string, unknown> | undefined) ?? null;
  }

  /** Every row, or `undefined` when the direct path is not available now. */
  all(sql: string, params: readonly unknown[]): Record<string, unknown>[] | undefined {
    const statement = this.statement(sql);
    if (!statement) return undefined;
    return statement.all(...params) as Record<string, unknown>[];
  }
}

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

import knex from 'knex';
import { describe, expect, it } from 'vitest';
import { postgresStorage, sqliteStorage } from './storage-config.js';

const PASSWORD = 'Pa55-Distinctive_q7z';

describe('sqlite', () => {
  it('is ephemeral in memory', () => {
    const config = sqliteStorage({ filename: ':memory:' });
    expect(config.dialect).toBe('sqlite');
    expect(config.ephemeral).toBe(true);
    expect(config.description).toBe('sqlite (in memory)');
    expect(config.knex.connection).toEqual({ filename: ':memory:' });
  });

  it('treats an empty filename as in memory', () => {
    const config = sqliteStorage({ filename: '' });
    expect(config.ephemeral).toBe(true);
    expect(config.knex.connection).toEqual({ filename: ':memory:' });
  });

  it('is durable with a file and names it in the description', () => {
    const config = sqliteStorage({ filename: '/var/lib/ferry/ferry.db' });
    expect(config.ephemeral).toBe(false);
    expect(config.description).toBe('sqlite (/var/lib/ferry/ferry.db)');
    expect(config.knex.connection).toEqual({ filename: '/var/lib/ferry/ferry.db' });
  });

  it('prepares each SQL text once per connection, and a cached statement keeps no query options', async () => {
    const db = knex(sqliteStorage({ filename: ':memory:' }).knex);
    try {
      const conn = (await db.client.acquireConnection()) as { prepare(sql: string): unknown };
      const prepare = conn.prepare.bind(conn);
      const prepared: string[] = [];
      conn.prepare = (sql: string) => {
        prepared.push(sql);
        return prepare(sql);
      };
      await db.client.releaseConnection(conn);
      await db.schema.createTable('t', (t) => t.bigInteger('n'));
      await db('t').insert({ n: '9007199254740993' });
      const big = await db('t').select('n').options({ safeIntegers: true });
      expect(big).toEqual([{ n: 9007199254740993n }]);
      // The same text again without the option: a plain number, not the BigInt mode left behind.
      const plain = await db('t').select('n');
      expect(typeof plain[0].n).toBe('number');
      await db.transaction(async (trx) => {
        await trx('t').insert({ n: 1 });
      });
      await db.transaction(async (trx) => {
        await trx('t').insert({ n: 2 });
      });
      expect((await db('t').count({ c: '*' }))[0]).toEqual({ c: 3 });
      const counts = new Map<string, number>();
      for (const sql of prepared) counts.set(sql, (counts.get(sql) ?? 0) + 1);
      expect([...counts.values()].every((n) => n === 1)).toBe(true);
      expect(counts.get('BEGIN IMMEDIATE;')).toBe(1);
    } finally {
      await db.destroy();
    }
  });

  it('uses a single pooled connection', () => {
    const pool = sqliteStorage({ filename: ':memory:' }).knex.pool;
    expect(pool).toMatchObject({ min: 1, max: 1 });
  });

  it('sets the pragmas on each new connection, WAL only for files', () => {
    const run = (filename: string, busyTimeoutMs?: number) => {
      const pragmas: string[] = [];
      const options = busyTimeoutMs === undefined ? { filename } : { filename, busyTimeoutMs };
      const pool = sqliteStorage(options).knex.pool as { afterCreate(conn: unknown, done: (err: Error | null, conn: unknown) => void): void };
      let result: [Error | null, unknown] | undefined;
      const conn = { pragma: (sql: string) => pragmas.push(sql) };
      pool.afterCreate(conn, (err, c) => {
        result = [err, c];
      });
      expect(result).toEqual([null, conn]);
      return pragmas;
    };
    // busy_timeout 0 whatever the configured wait: the client waits for a lock asynchronously.
    expect(run('/tmp/x.db', 1234)).toEqual(['page_size = 16384', 'journal_mode = WAL', 'busy_timeout = 0', 'foreign_keys = ON', 'synchronous = NORMAL']);
    expect(run(':memory:')).toEqual(['busy_timeout = 0', 'foreign_keys = ON', 'synchronous = NORMAL']);
  });

  it('reports a pragma failure to the pool', () => {
    const pool = sqliteStorage({ filename: ':memory:' }).knex.pool as { afterCreate(conn: unknown, done: (err: Error | null) => void): void };
    const boom = new Error('pragma failed');
    let reported: Error | null = null;
    pool.afterCreate(
      {
        pragma: () => {
          throw boom;
        },
      },
      (err) => {
        reported = err;
      },
    );
    expect(reported).toBe(boom);
  });
});

describe('postgres', () => {
  it.each([
    [`postgres://ferry:${PASSWORD}@db.example.com:6543/ferry_prod`, 'postgres (db.example.com:6543/ferry_prod)'],
    [`postgresql://ferry:${PASSWORD}@db.example.com/ferry`, 'postgres (db.example.com:5432/ferry)'],
    [`postgres://ferry:${encodeURIComponent(`${PASSWORD}@:/?#`)}@db.example.com/ferry`, 'postgres (db.example.com:5432/ferry)'],
    [`postgres://db.example.com/ferry?password=${PASSWORD}&sslmode=require`, 'postgres (db.example.com:5432/ferry)'],
    [`postgres://:${PASSWORD}@db.example.com/ferry`, 'postgres (db.example.com:5432/ferry)'],
  ])('describes %s without the password', (connectionString, description) => {
    const config = postgresStorage({ connectionString });
    expect(config.description).toBe(description);
    expect(config.description).not.toContain(PASSWORD);
    expect(config.description).not.toContain('ferry:');
    expect(config.dialect).toBe('postgres');
    expect(config.ephemeral).toBe(false);
  });

  it.each([
    `host=db.example.com user=ferry password=${PASSWORD} dbname=ferry`,
    `not a url ${PASSWORD}`,
    PASSWORD,
    `postgres://ferry:${PASSWORD}@[bad/ferry`,
  ])('never echoes an unparsable connection string: %s', (connectionString) => {
    const config = postgresStorage({ connectionString });
    expect(config.description).not.toContain(PASSWORD);
    expect(config.description).toBe('postgres');
  });

  it('hands the connection string to pg and applies pool and schema options', () => {
    const connectionString = `postgres://ferry:${PASSWORD}@db.example.com/ferry`;
    const config = postgresStorage({ connectionString, pool: { max: 3 }, searchPath: 'ferry' });
    expect(config.knex.client).toBe('pg');
    expect(config.knex.connection).toEqual({ connectionString });
    expect(config.knex.pool).toEqual({ min: 0, max: 3 });
    expect(config.knex.searchPath).toEqual(['ferry']);
    expect(postgresStorage({ connectionString }).knex.searchPath).toBeUndefined();
    expect(postgresStorage({ connectionString }).knex.pool).toEqual({ min: 0, max: 10 });
  });
});

describe('errors', () => {
  it('never carry the values a failed statement was bound to (payloads, response bodies)', async () => {
    const db = knex(sqliteStorage({ filename: ':memory:' }).knex);
    try {
      const secretValue = 'payload-value-9f3k';
      const error = await db.raw('SELECT * FROM no_such_table WHERE x = ?', [secretValue]).then(() => null, (e: Error) => e);
      expect(error?.message).toContain('no_such_table');
      expect(error?.message).not.toContain(secretValue);
      expect(postgresStorage({ connectionString: 'postgres://u@h/db' }).knex.compileSqlOnError).toBe(false);
    } finally {
      await db.destroy();
    }
  });
});

import { generateKeyPairSync } from 'node:crypto';
import snowflake from 'snowflake-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSnowflake, type TestSnowflake } from './snowflake-server.js';

let sf: TestSnowflake;
beforeAll(async () => {
  snowflake.configure({ logLevel: 'OFF' });
  sf = await startTestSnowflake({ database: 'testing_snowflake_emulator' });
});
afterAll(async () => {
  await sf?.stop();
});

type Options = Partial<snowflake.ConnectionOptions>;
async function connect(options: Options = {}): Promise<snowflake.Connection> {
  const connection = snowflake.createConnection({ account: sf.account, username: sf.username, password: sf.password, accessUrl: sf.url, sfRetryMaxLoginRetries: 0, ...options } as snowflake.ConnectionOptions);
  await new Promise<void>((resolve, reject) => connection.connect((error) => (error ? reject(error) : resolve())));
  return connection;
}
const run = (connection: snowflake.Connection, sqlText: string, binds?: snowflake.Binds) =>
  new Promise<{ rows: Record<string, unknown>[]; updated: number | undefined }>((resolve, reject) =>
    connection.execute({ sqlText, ...(binds ? { binds } : {}), complete: (error, statement, rows) => (error ? reject(error) : resolve({ rows: (rows ?? []) as Record<string, unknown>[], updated: statement.getNumUpdatedRows() })) }),
  );
const end = (connection: snowflake.Connection) => new Promise<void>((resolve) => connection.destroy(() => resolve()));

describe('the Snowflake emulator', () => {
  it('answers a login with wrong credentials 390100, and counts the sessions a client opens and ends', async () => {
    await expect(connect({ password: 'wrong' })).rejects.toMatchObject({ code: '390100' });
    await expect(connect({ account: 'other' })).rejects.toMatchObject({ code: '390100' });
    const before = sf.sessionCount();
    const connection = await connect();
    expect(sf.sessionCount()).toBe(before + 1);
    await end(connection);
    expect(sf.sessionCount()).toBe(before);
  });

  it('verifies a key-pair login: the registered key logs in, another key is 390144', async () => {
    const pair = () => generateKeyPairSync('rsa', { modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
    const mine = pair();
    sf.setUser('jwt_user', { publicKey: mine.publicKey });
    const connection = await connect({ username: 'jwt_user', password: undefined, authenticator: 'SNOWFLAKE_JWT', privateKey: mine.privateKey });
    expect((await run(connection, 'SELECT 1 AS one')).rows).toEqual([{ ONE: 1 }]);
    await end(connection);
    await expect(connect({ username: 'jwt_user', password: undefined, authenticator: 'SNOWFLAKE_JWT', privateKey: pair().privateKey })).rejects.toMatchObject({ code: '390144' });
  });

  it('returns values as the driver types them: numbers, booleans, variants, dates, timestamps with microseconds, binary', async () => {
    const connection = await connect();
    try {
      const { rows } = await run(
        connection,
        `SELECT 7::int AS i, 2.5::float AS f, 12.30::numeric(10,2) AS d, true AS b, '{"a":[1]}'::variant AS v, DATE '2026-02-03' AS day,
                TIMESTAMPTZ '2026-02-03 04:05:06.123456+00' AS ts, TIMESTAMP '2026-02-03 04:05:06' AS ntz, '\\x0aff'::bytea AS bin, NULL::text AS nothing, 'x' AS "MixedCase"`,
      );
      const row = rows[0]!;
      expect(row).toMatchObject({ I: 7, F: 2.5, D: 12.3, B: true, V: { a: [1] }, NOTHING: null, MixedCase: 'x' });
      expect(Buffer.from(row.BIN as Buffer).equals(Buffer.from([0x0a, 0xff]))).toBe(true);
      expect((row.DAY as Date).toISOString()).toBe('2026-02-03T00:00:00.000Z');
      expect((row.TS as Date).toISOString()).toBe('2026-02-03T04:05:06.123Z');
      expect((row.TS as unknown as { getNanoSeconds(): number }).getNanoSeconds()).toBe(123_456_000);
      expect((row.NTZ as Date).toISOString()).toBe('2026-02-03T04:05:06.000Z');
    } finally {
      await end(connection);
    }
  });

  it('runs an array bind over unnest for FROM VALUES, once per row in one transaction otherwise', async () => {
    const connection = await connect();
    try {
      await run(connection, 'CREATE TABLE arrays (n int NOT NULL, label varchar)');
      const before = sf.statementCount();
      const bulk = await run(connection, 'INSERT INTO arrays SELECT column1::int, column2 FROM VALUES (?, ?)', [[1, 'a'], [2, 'b']]);
      expect(bulk.updated).toBe(2);
      const perRow = await run(connection, 'INSERT INTO arrays (n, label) VALUES (?, ?)', [[3, 'c'], [4, null]]);
      expect(perRow.updated).toBe(2);
      expect(sf.statementCount() - before).toBe(2);
      // A refused row leaves none of its statement's rows behind.
      await expect(run(connection, 'INSERT INTO arrays (n, label) VALUES (?, ?)', [[5, 'e'], [null, 'f']])).rejects.toMatchObject({ code: '100072', sqlState: '22000' });
      expect((await run(connection, 'SELECT n, label FROM arrays ORDER BY n')).rows).toEqual([
        { N: 1, LABEL: 'a' },
        { N: 2, LABEL: 'b' },
        { N: 3, LABEL: 'c' },
        { N: 4, LABEL: null },
      ]);
    } finally {
      await end(connection);
    }
  });

  it('answers errors with the codes and SQLSTATEs Snowflake uses', async () => {
    const connection = await connect();
    try {
      await expect(run(connection, 'SELECT * FROM missing_table')).rejects.toMatchObject({ code: '002003', sqlState: '42S02' });
      await expect(run(connection, 'SELECT no_such_column FROM arrays')).rejects.toMatchObject({ code: '000904', sqlState: '42000' });
      await expect(run(connection, 'SELEC 1')).rejects.toMatchObject({ code: '001003', sqlState: '42000' });
      await expect(run(connection, "SELECT 'nope'::timestamp_tz")).rejects.toMatchObject({ code: '100038', sqlState: '22018' });
      // Fewer binds than placeholders: a compilation error, as Snowflake reports it, not an outage.
      await expect(run(connection, 'SELECT ?, ?', ['a'])).rejects.toMatchObject({ code: '002049', sqlState: '42601' });
    } finally {
      await end(connection);
    }
  });

  it('cancels a running statement when the driver aborts it', async () => {
    const connection = await connect();
    try {
      const outcome = new Promise<unknown>((resolve) => {
        const statement = connection.execute({ sqlText: 'SELECT pg_sleep(60)', complete: (error) => resolve(error) });
        // Cancel once Postgres runs it: each look is a query, no sleep.
        void (async () => {
          while (!(await sf.runningStatements()).some((sql) => sql.includes('pg_sleep(60)')));
          statement.cancel(() => undefined);
        })();
      });
      expect(await outcome).toMatchObject({ code: '000604' });
      expect((await run(connection, 'SELECT 2 AS two')).rows).toEqual([{ TWO: 2 }]);
    } finally {
      await end(connection);
    }
  });

  it('refuses the statements of a session it ended: the driver sees its connection terminated', async () => {
    const connection = await connect();
    await run(connection, 'SELECT 1');
    await sf.expireSessions();
    await expect(run(connection, 'SELECT 1')).rejects.toMatchObject({ code: 407002 });
    expect(sf.sessionCount()).toBe(0);
  });
});

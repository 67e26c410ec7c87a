import { generateKeyPairSync } from 'node:crypto';
import { ConnectorError, type DestinationEvent, type JsonObject, type PullSource } from '@ferry/core';
import { connectorContext, type ConnectorContextOptions } from '@ferry/testing';
import { startTestSnowflake, type TestSnowflake } from '@ferry/test-servers';
import { Value } from '@sinclair/typebox/value';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_PAYLOAD_BYTES, MAX_STATEMENT_BYTES, snowflake, snowflakeConfigSchema, type SnowflakeConfig } from './index.js';

/** The test servers listen on loopback: an engine reaching them allows 127.0.0.1. */
const loopbackContext = <T,>(config: T, options: ConnectorContextOptions = {}) => connectorContext(config, { outboundAllow: ['127.0.0.1'], ...options });

let sf: TestSnowflake;
let tables = 0;
beforeAll(async () => {
  sf = await startTestSnowflake({ database: 'plugin_snowflake_unit' });
});
afterAll(async () => {
  await sf?.stop();
});

const plugin = snowflake({ loginTimeoutMs: 3000, loginRetries: 0 });
const withDefaults = (config: JsonObject) => Value.Default(snowflakeConfigSchema, structuredClone(config)) as SnowflakeConfig;
const login = (): JsonObject => ({ account: sf.account, username: sf.username, password: sf.password, access_url: sf.url, warehouse: 'WH', database: 'FERRY', schema: 'PUBLIC' });
const event = (i: number, payload: JsonObject = { n: i }): DestinationEvent => ({
  id: `evt_${String(i).padStart(4, '0')}`,
  type: 'order.created',
  occurredAt: new Date(Date.UTC(2026, 0, 2, 3, 4, i)).toISOString(),
  payload,
});
const freshTable = () => `unit_${tables++}`;
const createDestination = async (table: string) =>
  sf.query(`CREATE TABLE ${table} (id varchar NOT NULL, type varchar NOT NULL, occurred_at timestamp_tz NOT NULL, payload variant)`);

async function write(config: JsonObject, events: DestinationEvent[], signal = new AbortController().signal) {
  const writer = await plugin.destination!(loopbackContext(withDefaults(config)));
  try {
    return await writer.write(events, signal);
  } finally {
    await writer.close?.();
  }
}

async function read(config: JsonObject, checkpoint: string | null = null, max = 100) {
  const source = (await plugin.source!(loopbackContext(withDefaults(config), { direction: 'source' }))) as PullSource;
  try {
    return await source.read(checkpoint, max, new AbortController().signal);
  } finally {
    await source.close?.();
  }
}

const check = (config: JsonObject, direction: 'source' | 'destination' = 'destination') => plugin.check!(loopbackContext(withDefaults(config), { direction }));

/** A fresh RSA key pair, the private key encrypted with `passphrase` as `openssl pkcs8 -v2 aes256` writes it. */
function keyPair(passphrase: string) {
  return generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase },
  });
}

describe('snowflake destination', () => {
  it('merges a batch on ID: the rows land typed, and the batch delivered again adds nothing', async () => {
    const table = freshTable();
    await createDestination(table);
    const events = [event(1, { n: 1, nested: { tags: ['a', 'b'] } }), event(2, { n: 2, note: "it's \"quoted\" ? --" })];
    expect(await write({ ...login(), table }, events)).toEqual([{ ok: true }, { ok: true }]);
    expect(await write({ ...login(), table }, [...events, event(3)])).toEqual([{ ok: true }, { ok: true }, { ok: true }]);
    const rows = await sf.query<{ id: string; type: string; at: string; payload: JsonObject }>(
      `SELECT id, type, to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') AS at, payload FROM ${table} ORDER BY id`,
    );
    expect(rows).toEqual([
      { id: 'evt_0001', type: 'order.created', at: '2026-01-02T03:04:01', payload: { n: 1, nested: { tags: ['a', 'b'] } } },
      { id: 'evt_0002', type: 'order.created', at: '2026-01-02T03:04:02', payload: { n: 2, note: "it's \"quoted\" ? --" } },
      { id: 'evt_0003', type: 'order.created', at: '2026-01-02T03:04:03', payload: { n: 3 } },
    ]);
  });

  it('merges a batch larger than one statement holds', async () => {
    const table = freshTable();
    await createDestination(table);
    const events = Array.from({ length: 1234 }, (_, i) => event(i));
    const results = await write({ ...login(), table }, events);
    expect(results.every((r) => r.ok)).toBe(true);
    expect(await sf.query(`SELECT count(DISTINCT id)::int AS n, count(*)::int AS total FROM ${table}`)).toEqual([{ n: 1234, total: 1234 }]);
  });

  it('insert mode loads with one array-bound INSERT a chunk, and keeps a re-sent copy (it does not dedupe)', async () => {
    const table = freshTable();
    await createDestination(table);
    const before = sf.statementCount();
    const events = Array.from({ length: 1500 }, (_, i) => event(i));
    expect((await write({ ...login(), table, mode: 'insert' }, events)).every((r) => r.ok)).toBe(true);
    // Two chunks of at most 1,000 rows, each one statement.
    expect(sf.statementCount() - before).toBe(2);
    await write({ ...login(), table, mode: 'insert' }, [event(0)]);
    expect(await sf.query(`SELECT count(*)::int AS n FROM ${table} WHERE id = 'evt_0000'`)).toEqual([{ n: 2 }]);
  });

  it('creates the table on the first write with create_table, and checks healthy before it exists', async () => {
    const table = freshTable();
    expect((await check({ ...login(), table, create_table: true })).health).toBe('healthy');
    const missing = await check({ ...login(), table });
    expect(missing).toMatchObject({ health: 'down', error: { code: 'table_not_found' } });
    expect(await write({ ...login(), table, create_table: true }, [event(1)])).toEqual([{ ok: true }]);
    expect(await sf.query(`SELECT id FROM ${table}`)).toEqual([{ id: 'evt_0001' }]);
    expect((await check({ ...login(), table })).health).toBe('healthy');
  });

  it('says which columns a table lacks', async () => {
    const table = freshTable();
    await sf.query(`CREATE TABLE ${table} (id varchar, payload variant)`);
    expect(await check({ ...login(), table })).toMatchObject({ health: 'down', error: { code: 'configuration_invalid' } });
  });

  it(`rejects a payload over ${MAX_PAYLOAD_BYTES} bytes before it is sent, and the rest land`, async () => {
    const table = freshTable();
    await createDestination(table);
    const results = await write({ ...login(), table }, [event(1), event(2, { blob: 'x'.repeat(MAX_PAYLOAD_BYTES) }), event(3)]);
    expect(results[0]).toEqual({ ok: true });
    expect(results[1]).toMatchObject({ ok: false, error: { code: 'record_too_large', retryable: false } });
    expect(results[2]).toEqual({ ok: true });
    expect(await sf.query(`SELECT id FROM ${table} ORDER BY id`)).toEqual([{ id: 'evt_0001' }, { id: 'evt_0003' }]);
  });

  it('rejects only the row the table refuses (an occurred_at it cannot parse stands in for any data error)', async () => {
    const table = freshTable();
    await createDestination(table);
    const results = await write({ ...login(), table }, [event(1), { ...event(2), occurredAt: 'not a time' }, event(3)]);
    expect(results[1]).toMatchObject({ ok: false, error: { code: 'record_rejected', retryable: false } });
    expect(results.filter((r) => r.ok)).toHaveLength(2);
  });

  it('sends one copy of an id a batch holds twice; both copies take its result', async () => {
    const table = freshTable();
    await createDestination(table);
    expect(await write({ ...login(), table }, [event(1), event(2), event(1)])).toEqual([{ ok: true }, { ok: true }, { ok: true }]);
    expect(await sf.query(`SELECT id FROM ${table} ORDER BY id`)).toEqual([{ id: 'evt_0001' }, { id: 'evt_0002' }]);
  });

  it(`ends a statement early when its payloads pass ${MAX_STATEMENT_BYTES} bytes`, async () => {
    const table = freshTable();
    await createDestination(table);
    const blob = 'y'.repeat(5 * 1024 * 1024);
    const before = sf.statementCount();
    const results = await write({ ...login(), table }, [event(1, { blob }), event(2, { blob }), event(3), event(4)]);
    expect(results.every((r) => r.ok)).toBe(true);
    // 5 MiB + 5 MiB is over the budget: the first row goes alone, the second with the small ones.
    expect(sf.statementCount() - before).toBe(2);
    expect(await sf.query(`SELECT count(*)::int AS n FROM ${table}`)).toEqual([{ n: 4 }]);
  });

  it('logs in again after the server ended its session: one retryable failure, then the next write lands', async () => {
    const table = freshTable();
    await createDestination(table);
    const writer = await plugin.destination!(loopbackContext(withDefaults({ ...login(), table })));
    const signal = new AbortController().signal;
    try {
      await writer.write([event(1)], signal);
      await sf.expireSessions();
      const failure = await writer.write([event(2)], signal).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(ConnectorError);
      expect(failure).toMatchObject({ code: 'session_expired', retryable: true });
      expect(await writer.write([event(2)], signal)).toEqual([{ ok: true }]);
    } finally {
      await writer.close?.();
    }
    expect(await sf.query(`SELECT id FROM ${table} ORDER BY id`)).toEqual([{ id: 'evt_0001' }, { id: 'evt_0002' }]);
  });

  it('ends its session on close, and a cancelled write fails retryable without a statement', async () => {
    const table = freshTable();
    await createDestination(table);
    const open = sf.sessionCount();
    const writer = await plugin.destination!(loopbackContext(withDefaults({ ...login(), table })));
    await writer.write([event(1)], new AbortController().signal);
    expect(sf.sessionCount()).toBe(open + 1);
    const aborted = new AbortController();
    aborted.abort();
    await expect(writer.write([event(2)], aborted.signal)).rejects.toMatchObject({ code: 'aborted', retryable: true });
    await writer.close?.();
    await writer.close?.();
    expect(sf.sessionCount()).toBe(open);
  });
});

describe('snowflake source', () => {
  it('reads in cursor order from a checkpoint, with types from a column, occurred_at, and exact values', async () => {
    const table = freshTable();
    await sf.query(`CREATE TABLE ${table} (seq bigint PRIMARY KEY, kind varchar, happened timestamp_tz, big numeric(38,0), price float, ok boolean, day date, doc variant, raw bytea)`);
    await sf.query(
      `INSERT INTO ${table} VALUES
        (1, 'order.created', '2026-03-04T05:06:07.123456Z', 9007199254740993, 1.5, true, '2026-03-04', '{"a":[1,2]}', '\\x0102'),
        (2, NULL, NULL, 42, NULL, false, NULL, NULL, NULL),
        (3, 'order.paid', '2026-03-05T00:00:00Z', 7, 2.25, NULL, NULL, '"text"', NULL)`,
    );
    const config = { ...login(), table, cursor_column: 'seq', type_column: 'kind', type: 'row.fallback', occurred_at_column: 'happened' };
    const first = await read(config, null, 2);
    expect(first.checkpoint).toBe('2');
    expect(first.records.map((r) => [r.position, r.type])).toEqual([['1', 'order.created'], ['2', 'row.fallback']]);
    expect(first.records[0]!.payload).toEqual({ SEQ: 1, KIND: 'order.created', HAPPENED: '2026-03-04T05:06:07.123Z', BIG: '9007199254740993', PRICE: 1.5, OK: true, DAY: '2026-03-04T00:00:00.000Z', DOC: { a: [1, 2] }, RAW: 'AQI=' });
    expect(new Date(first.records[0]!.occurredAt!).toISOString()).toBe('2026-03-04T05:06:07.123Z');
    expect(first.records[1]!.occurredAt).toBeUndefined();
    // Nulls of every type are JSON nulls (the driver spells a NUMBER's null "NULL" as text).
    expect(first.records[1]!.payload).toMatchObject({ KIND: null, HAPPENED: null, BIG: 42, PRICE: null, OK: false, DAY: null, DOC: null, RAW: null });
    const rest = await read(config, first.checkpoint as string);
    expect(rest.records.map((r) => r.position)).toEqual(['3']);
    expect(rest.records[0]!.payload.DOC).toBe('text');
    const none = await read(config, '3');
    expect(none).toEqual({ records: [], checkpoint: '3' });
  });

  it('reads a query as a subquery, and refuses a row whose cursor is null', async () => {
    const table = freshTable();
    await sf.query(`CREATE TABLE ${table} (seq int, n int)`);
    await sf.query(`INSERT INTO ${table} VALUES (1, 10), (2, 20), (NULL, 30)`);
    const batch = await read({ ...login(), query: `SELECT seq, n * 2 AS doubled FROM ${table} WHERE n < 25;  `, cursor_column: 'seq', type: 'q.row' });
    expect(batch.records.map((r) => r.payload)).toEqual([{ SEQ: 1, DOUBLED: 20 }, { SEQ: 2, DOUBLED: 40 }]);
    await expect(read({ ...login(), query: `SELECT seq FROM ${table} WHERE seq IS NULL`, cursor_column: 'seq', type: 'q.row' })).rejects.toMatchObject({ code: 'invalid_record', retryable: false });
  });

  it('resumes a timestamp cursor to the microsecond: rows within one millisecond are neither merged nor repeated', async () => {
    const table = freshTable();
    await sf.query(`CREATE TABLE ${table} (at timestamp_tz NOT NULL, n int)`);
    await sf.query(`INSERT INTO ${table} VALUES ('2026-03-04T05:06:07.123001Z', 1), ('2026-03-04T05:06:07.123002Z', 2), ('2026-03-04T05:06:07.124Z', 3)`);
    const config = { ...login(), table, cursor_column: 'at', type: 't', batch_size: 1 };
    const seen: string[] = [];
    let checkpoint: string | null = null;
    for (let i = 0; i < 4; i++) {
      const batch = await read(config, checkpoint, 1);
      seen.push(...batch.records.map((r) => r.position));
      checkpoint = batch.checkpoint as string;
    }
    expect(seen).toEqual(['2026-03-04T05:06:07.123001000Z', '2026-03-04T05:06:07.123002000Z', '2026-03-04T05:06:07.124000000Z']);
  });

  it('refuses a FLOAT cursor at check and at read', async () => {
    const table = freshTable();
    await sf.query(`CREATE TABLE ${table} (score float, n int)`);
    await sf.query(`INSERT INTO ${table} VALUES (0.5, 1)`);
    const config = { ...login(), table, cursor_column: 'score', type: 't' };
    expect(await check(config, 'source')).toMatchObject({ health: 'down', error: { code: 'configuration_invalid' } });
    await expect(read(config)).rejects.toMatchObject({ code: 'configuration_invalid', retryable: false });
  });

  it('cancels a running read when its signal aborts, and one past statementTimeoutMs, both retryable', async () => {
    const slow = { ...login(), query: 'SELECT 1 AS seq FROM (SELECT pg_sleep(60)) AS s', cursor_column: 'seq', type: 't' };
    const open = sf.sessionCount();
    const source = (await plugin.source!(loopbackContext(withDefaults(slow), { direction: 'source' }))) as PullSource;
    const controller = new AbortController();
    const reading = source.read(null, 10, controller.signal);
    // Abort once Postgres runs it: each look is a query, no sleep.
    while (!(await sf.runningStatements()).some((sql) => sql.includes('pg_sleep(60)')));
    controller.abort();
    await expect(reading).rejects.toMatchObject({ code: 'aborted', retryable: true });
    await source.close?.();

    const bounded = snowflake({ loginTimeoutMs: 3000, loginRetries: 0, statementTimeoutMs: 200 });
    const timed = (await bounded.source!(loopbackContext(withDefaults(slow), { direction: 'source' }))) as PullSource;
    await expect(timed.read(null, 10, new AbortController().signal)).rejects.toMatchObject({ code: 'timeout', retryable: true });
    await timed.close?.();
    // Both sessions were given up and logged out; the server cancelled their statements.
    await sf.sessionsAtMost(open);
  });

  it('checks the columns it reads, and names a table that is not there', async () => {
    const table = freshTable();
    await sf.query(`CREATE TABLE ${table} (seq int, kind varchar)`);
    expect((await check({ ...login(), table, cursor_column: 'seq', type_column: 'kind' }, 'source')).health).toBe('healthy');
    expect(await check({ ...login(), table, cursor_column: 'seq', type_column: 'nope' }, 'source')).toMatchObject({ health: 'down', error: { code: 'configuration_invalid' } });
    expect(await check({ ...login(), table: 'no_such_table', cursor_column: 'seq', type: 't' }, 'source')).toMatchObject({ health: 'down', error: { code: 'table_not_found' } });
    expect(await check({ ...login(), table, cursor_column: 'nope', type: 't' }, 'source')).toMatchObject({ health: 'down', error: { code: 'column_not_found' } });
  });
});

describe('snowflake login', () => {
  it('a wrong password is a non-retryable auth_failed whose message holds no secret', async () => {
    const table = freshTable();
    await createDestination(table);
    const result = await check({ ...login(), table, password: 'wrong-secret-value' });
    expect(result).toMatchObject({ health: 'down', error: { code: 'auth_failed' } });
    expect(JSON.stringify(result)).not.toContain('wrong-secret-value');
    await expect(write({ ...login(), table, password: 'wrong-secret-value' }, [event(1)])).rejects.toMatchObject({ code: 'auth_failed', retryable: false });
  });

  it('logs in by key pair with an encrypted private key; a wrong passphrase or an unregistered key is auth_failed', async () => {
    const table = freshTable();
    await createDestination(table);
    const { publicKey, privateKey } = keyPair('unlock-me');
    sf.setUser('key_user', { publicKey });
    const { password: _password, ...withoutPassword } = login();
    const byKey: JsonObject = { ...withoutPassword, username: 'key_user', private_key: privateKey, private_key_passphrase: 'unlock-me', table };
    expect((await check(byKey)).health).toBe('healthy');
    expect(await write(byKey, [event(1)])).toEqual([{ ok: true }]);

    const wrongPassphrase = await check({ ...byKey, private_key_passphrase: 'not-the-passphrase' });
    expect(wrongPassphrase).toMatchObject({ health: 'down', error: { code: 'auth_failed' } });
    expect(JSON.stringify(wrongPassphrase)).not.toContain('not-the-passphrase');
    const other = keyPair('other');
    expect(await check({ ...byKey, private_key: other.privateKey, private_key_passphrase: 'other' })).toMatchObject({ health: 'down', error: { code: 'auth_failed' } });
  });

  it('rotates a key pair to a newly registered key, and refuses to switch login methods', async () => {
    const table = freshTable();
    await createDestination(table);
    const before = keyPair('one');
    sf.setUser('rotating_key', { publicKey: before.publicKey });
    const config = withDefaults({ account: sf.account, username: 'rotating_key', access_url: sf.url, private_key: before.privateKey, private_key_passphrase: 'one', table });
    const after = keyPair('two');
    // Snowflake's second key slot (RSA_PUBLIC_KEY_2) holds the new key while the old one works.
    sf.setUser('rotating_key', { publicKey: after.publicKey });
    const ctx = loopbackContext(config);
    const fields = await plugin.rotate!(ctx, { config: { private_key: after.privateKey, private_key_passphrase: 'two' } });
    expect(fields).toEqual({ private_key: after.privateKey, private_key_passphrase: 'two' });
    await expect(plugin.rotate!(ctx, { config: { password: 'x' } })).rejects.toMatchObject({ code: 'configuration_invalid' });
    await expect(plugin.rotate!(ctx, {})).rejects.toMatchObject({ code: 'credentials_required' });
    await expect(plugin.rotate!(ctx, { config: { private_key: before.privateKey, private_key_passphrase: 'one' } })).rejects.toMatchObject({ code: 'auth_failed', retryable: false });
  });
});

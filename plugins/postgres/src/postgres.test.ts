import { ConnectorError, type ConnectorDirection, type Destination, type DestinationEvent, type PullSource } from '@ferry/core';
import { closedPort, connectorContext } from '@ferry/testing';
import { getSharedTestPostgres } from '@ferry/test-servers';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acceptsInput } from './destination.js';
import { postgres, type PostgresConfig } from './index.js';

const plugin = postgres({ connectTimeoutMs: 3000 });
const never = new AbortController().signal;

const ctx = (config: PostgresConfig, direction: ConnectorDirection = 'destination') => connectorContext(config, { direction, connectorId: 'con_pg', outboundAllow: ['127.0.0.1'] });
/** A table every role may write: checks of a destination need one. */
const CHECKED = 'check_target';

let url: string;
let admin: pg.Pool;
const opened: { close?(): Promise<void> }[] = [];

beforeAll(async () => {
  url = await (await getSharedTestPostgres()).createDatabase('plugin_postgres');
  admin = new pg.Pool({ connectionString: url, max: 2 });
  await admin.query(`CREATE TABLE ${CHECKED} (id text PRIMARY KEY, type text, occurred_at timestamptz, payload jsonb)`);
  await admin.query(`GRANT ALL ON ${CHECKED} TO PUBLIC`);
});
afterAll(async () => {
  for (const o of opened) await o.close?.();
  await opened[0]?.close?.(); // the engine may close twice (pause, then stop): harmless
  await admin.end();
});

async function openSource(config: PostgresConfig): Promise<PullSource> {
  const source = (await plugin.source!(ctx(config, 'source'))) as PullSource;
  opened.push(source);
  return source;
}
async function openDestination(config: PostgresConfig): Promise<Destination> {
  const destination = await plugin.destination!(ctx(config));
  opened.push(destination);
  return destination;
}
const event = (n: number, payload: Record<string, unknown> = { n }): DestinationEvent => ({
  id: `evt_${n}`,
  type: 'thing.happened',
  occurredAt: '2026-01-02T03:04:05.678Z',
  payload: payload as DestinationEvent['payload'],
});

/** A port on 127.0.0.1 nothing listens on. */
describe('postgres source', () => {
  it('reads from a checkpoint in batches and resumes without loss or duplicate', async () => {
    await admin.query(`CREATE TABLE src_orders (seq bigserial PRIMARY KEY, kind text, at timestamptz, amount numeric, day date, raw bytea, tags text[])`);
    await admin.query(
      `INSERT INTO src_orders (kind, at, amount, day, raw, tags)
       SELECT CASE WHEN g % 2 = 0 THEN 'order.paid' ELSE NULL END, '2026-01-01T00:00:00.123456Z'::timestamptz + g * interval '1 second', g * 1.5, '2026-03-04', '\\x0102', ARRAY['a','b'] FROM generate_series(1, 25) g`,
    );
    const config: PostgresConfig = { connection_string: url, table: 'public.src_orders', cursor_column: 'seq', type_column: 'kind', type: 'order.created', occurred_at_column: 'at', batch_size: 10 };
    const source = await openSource(config);
    const first = await source.read(null, 100, never);
    expect(first.records).toHaveLength(10); // batch_size caps max
    expect(first.records[0]).toMatchObject({ position: '1', type: 'order.created', payload: { seq: '1', amount: '1.5', day: '2026-03-04', raw: 'AQI=', tags: ['a', 'b'] } });
    expect(first.records[1]!.type).toBe('order.paid');
    // Timestamps keep their microseconds, in the payload and as the record's time.
    expect(first.records[0]!.occurredAt).toBe('2026-01-01T00:00:01.123456Z');
    expect(first.records[0]!.payload.at).toBe('2026-01-01T00:00:01.123456Z');
    expect(first.records[0]!.payload).not.toHaveProperty('__ferry_cursor');

    // A restart: a new source, resuming from the committed checkpoint (as JSON, as stored).
    const restarted = await openSource(config);
    const seen = first.records.map((r) => r.position);
    let checkpoint = JSON.parse(JSON.stringify(first.checkpoint));
    await admin.query(`INSERT INTO src_orders (kind) VALUES ('late')`);
    for (;;) {
      const batch = await restarted.read(checkpoint, 7, never);
      if (batch.records.length === 0) {
        expect(batch.checkpoint).toEqual(checkpoint);
        break;
      }
      seen.push(...batch.records.map((r) => r.position));
      checkpoint = batch.checkpoint;
    }
    expect(seen).toEqual(Array.from({ length: 26 }, (_, i) => String(i + 1)));
  });

  it('reads a query and a timestamptz cursor without losing microseconds', async () => {
    await admin.query(`CREATE TABLE src_ts (at timestamptz PRIMARY KEY, v int)`);
    await admin.query(`INSERT INTO src_ts VALUES ('2026-01-01T00:00:00.000001Z', 1), ('2026-01-01T00:00:00.000002Z', 2), ('2026-01-01T00:00:00.000003Z', 3)`);
    const source = await openSource({ connection_string: url, query: 'SELECT at, v FROM src_ts WHERE v > 0 -- trailing comment', cursor_column: 'at', type: 't' });
    const a = await source.read(null, 2, never);
    const b = await source.read(a.checkpoint, 2, never);
    expect([...a.records, ...b.records].map((r) => r.payload.v)).toEqual([1, 2, 3]);
  });
});

describe('postgres destination', () => {
  it('creates its table, writes a batch, and ignores a re-delivery of the same ids', async () => {
    const destination = await openDestination({ connection_string: url, table: 'dst_events', create_table: true });
    const batch = Array.from({ length: 1500 }, (_, i) => event(i, { n: i, text: 'x' }));
    expect((await destination.write(batch, never)).every((r) => r.ok)).toBe(true);
    expect((await destination.write(batch.slice(0, 10), never)).every((r) => r.ok)).toBe(true);
    const { rows } = await admin.query(`SELECT count(*)::int AS n, min(occurred_at) AS at FROM dst_events`);
    expect(rows[0].n).toBe(1500);
    expect((rows[0].at as Date).toISOString()).toBe('2026-01-02T03:04:05.678Z');
    const one = await admin.query(`SELECT type, payload FROM dst_events WHERE id = 'evt_7'`);
    expect(one.rows[0]).toEqual({ type: 'thing.happened', payload: { n: 7, text: 'x' } });
  });

  it('writes a bytea read by a source back as the same bytes, on COPY and on the INSERT path', async () => {
    await admin.query(`CREATE TABLE bin_src (seq bigserial PRIMARY KEY, raw bytea, big numeric, doc jsonb, at timestamptz)`);
    const bytes = Buffer.from([0, 1, 2, 92, 9, 10, 255, 0x5c, 0x78]);
    await admin.query(`INSERT INTO bin_src (raw, big, doc, at) VALUES ($1, '12345678901234567890.123456789', '{"n": 12345678901234567890}', '2026-01-01 00:00:00.123456+00')`, [bytes]);
    const source = await openSource({ connection_string: url, table: 'bin_src', cursor_column: 'seq', type: 'bin' });
    const [record] = (await source.read(null, 10, never)).records;
    expect(record!.payload).toMatchObject({ raw: bytes.toString('base64'), big: '12345678901234567890.123456789', doc: { n: '12345678901234567890' }, at: '2026-01-01T00:00:00.123456Z' });
    await admin.query(`CREATE TABLE bin_dst (id text PRIMARY KEY, type text, occurred_at timestamptz, raw bytea, big numeric, doc jsonb, at timestamptz)`);
    const destination = await openDestination({ connection_string: url, table: 'bin_dst', columns: { raw: 'raw', big: 'big', doc: 'doc', at: 'at' } });
    const written = { id: 'evt_bin', type: 'bin', occurredAt: '2026-01-01T00:00:00.123Z', payload: record!.payload };
    expect((await destination.write([written], never)).every((r) => r.ok)).toBe(true);
    // Again, through the INSERT path (the id is there already, so COPY refuses the batch).
    expect((await destination.write([written, { ...written, id: 'evt_bin2' }], never)).every((r) => r.ok)).toBe(true);
    const { rows } = await admin.query(`SELECT id, raw, big::text AS big, doc::text AS doc, (at = '2026-01-01 00:00:00.123456+00') AS same_at FROM bin_dst ORDER BY id`);
    for (const row of rows) {
      expect(Buffer.compare(row.raw as Buffer, bytes)).toBe(0);
      expect(row).toMatchObject({ big: '12345678901234567890.123456789', doc: '{"n": "12345678901234567890"}', same_at: true });
    }
    expect(rows).toHaveLength(2);
  });

  it('maps payload paths to columns, as JSON into jsonb and as text into text', async () => {
    await admin.query(`CREATE TABLE dst_mapped (id text PRIMARY KEY, type text, occurred_at timestamptz, customer text, total numeric, meta jsonb)`);
    const destination = await openDestination({ connection_string: url, table: 'dst_mapped', columns: { customer: 'customer.name', total: 'total', meta: 'meta' } });
    const results = await destination.write([event(1, { customer: { name: 'Ada' }, total: 12.5, meta: 'plain' }), event(2, { total: 3 })], never);
    expect(results).toEqual([{ ok: true }, { ok: true }]);
    const { rows } = await admin.query(`SELECT id, customer, total::text AS total, meta FROM dst_mapped ORDER BY id`);
    expect(rows).toEqual([
      { id: 'evt_1', customer: 'Ada', total: '12.5', meta: 'plain' },
      { id: 'evt_2', customer: null, total: '3', meta: null },
    ]);
  });

  it("casts each value to its column's own type: typmods, domains, an enum outside the search path", async () => {
    await admin.query(`CREATE SCHEMA IF NOT EXISTS other`);
    await admin.query(`CREATE TYPE other.mood AS ENUM ('calm', 'busy')`);
    await admin.query(`CREATE DOMAIN doc AS jsonb CHECK (VALUE IS NOT NULL)`);
    await admin.query(
      `CREATE TABLE dst_typed (id text PRIMARY KEY, type text, occurred_at timestamptz, code varchar(3), mood other.mood, doc doc, meta jsonb, at timestamp(0))`,
    );
    const destination = await openDestination({
      connection_string: url,
      table: 'dst_typed',
      columns: { code: 'code', mood: 'mood', doc: 'doc', meta: 'meta', at: 'at' },
    });
    const results = await destination.write(
      [
        event(1, { code: 'abc', mood: 'calm', doc: { a: [1, 'two'] }, meta: null, at: '2026-01-02 03:04:05.6' }),
        event(2, { code: 'abcd', mood: 'calm', doc: {} }),
        event(3, { code: 'x', mood: 'angry', doc: {} }),
        event(4, { code: 'nul\u0000', mood: 'busy', doc: {} }),
        event(5, { code: 'y', mood: 'busy', doc: 'text' }),
      ],
      never,
    );
    expect(results.map((r) => r.ok)).toEqual([true, false, false, false, true]);
    expect(results.filter((r) => !r.ok).map((r) => (r as { error: ConnectorError }).error.code)).toEqual(['record_rejected', 'record_rejected', 'record_rejected']);
    const { rows } = await admin.query(`SELECT id, code, mood::text, doc, meta, meta IS NULL AS sql_null, at::text FROM dst_typed ORDER BY id`);
    expect(rows).toEqual([
      // A JSON null in the payload is the jsonb value null, not SQL NULL (a missing path is SQL NULL).
      { id: 'evt_1', code: 'abc', mood: 'calm', doc: { a: [1, 'two'] }, meta: null, sql_null: false, at: '2026-01-02 03:04:06' },
      { id: 'evt_5', code: 'y', mood: 'busy', doc: 'text', meta: null, sql_null: true, at: null },
    ]);
  });

  it('copies tabs, newlines, backslashes and \\N spelled out exactly; a view is written with INSERTs', async () => {
    const tricky = { s: 'a\tb\nc\r\\d \\N é 🚢', t: '\\', u: 'ends with a backslash\\' };
    const destination = await openDestination({ connection_string: url, table: 'dst_tricky', create_table: true });
    expect((await destination.write([event(1, tricky)], never)).every((r) => r.ok)).toBe(true);
    expect((await admin.query(`SELECT payload FROM dst_tricky`)).rows[0].payload).toEqual(tricky);
    await admin.query(`CREATE TABLE dst_behind (id text PRIMARY KEY, type text, occurred_at timestamptz, payload jsonb)`);
    await admin.query(`CREATE VIEW dst_view AS SELECT * FROM dst_behind`);
    const view = await openDestination({ connection_string: url, table: 'dst_view' });
    expect((await view.write([event(1, tricky), event(2)], never)).every((r) => r.ok)).toBe(true);
    expect((await view.write([event(2), event(3)], never)).every((r) => r.ok)).toBe(true);
    expect((await admin.query(`SELECT id FROM dst_behind ORDER BY id`)).rows.map((r) => r.id)).toEqual(['evt_1', 'evt_2', 'evt_3']);
  });

  it('writes what prepare made ahead, the same rows as without; a prepare before the first write makes nothing', async () => {
    const tricky = { s: 'a\tb\nc\\d', n: 1.5, nested: { ok: true } };
    const destination = await openDestination({ connection_string: url, table: 'dst_prepared', create_table: true });
    const first = [event(1, tricky)];
    destination.prepare!(first); // the table is not known before a write: nothing is made
    expect((await destination.write(first, never)).every((r) => r.ok)).toBe(true);
    const batch = [event(2, tricky), event(3, { other: 'x' }), event(4)];
    destination.prepare!(batch);
    expect((await destination.write(batch, never)).every((r) => r.ok)).toBe(true);
    // Another array of the same events is written from its own text: a prepared array is found by identity.
    destination.prepare!([event(5)]);
    expect((await destination.write([event(5)], never)).every((r) => r.ok)).toBe(true);
    const { rows } = await admin.query(`SELECT id, type, payload FROM dst_prepared ORDER BY id`);
    expect(rows).toEqual([1, 2, 3, 4, 5].map((n) => ({ id: `evt_${n}`, type: event(n).type, payload: [1, 2].includes(n) ? tricky : n === 3 ? { other: 'x' } : event(n).payload })));
  });

  it('rejects only the bad row, non-retryably, and lands the rest', async () => {
    await admin.query(`CREATE TABLE dst_checked (id text PRIMARY KEY, type text, occurred_at timestamptz, amount int NOT NULL CHECK (amount >= 0))`);
    const destination = await openDestination({ connection_string: url, table: 'dst_checked', columns: { amount: 'amount' } });
    const results = await destination.write([event(1, { amount: 1 }), event(2, { amount: -5 }), event(3, {}), event(4, { amount: 4 })], never);
    expect(results.map((r) => r.ok)).toEqual([true, false, false, true]);
    const bad = results[1] as { ok: false; error: ConnectorError };
    expect(bad.error).toBeInstanceOf(ConnectorError);
    expect(bad.error).toMatchObject({ code: 'record_rejected', retryable: false });
    expect(bad.error.message).toContain('23514');
    const { rows } = await admin.query(`SELECT id FROM dst_checked ORDER BY id`);
    expect(rows.map((r) => r.id)).toEqual(['evt_1', 'evt_4']);
  });

  it('in insert mode, writes without a conflict clause: a re-delivered id is a rejected row', async () => {
    const destination = await openDestination({ connection_string: url, table: 'dst_insert', create_table: true, mode: 'insert' });
    expect((await destination.write([event(1), event(2)], never)).every((r) => r.ok)).toBe(true);
    const again = await destination.write([event(2), event(3)], never);
    expect(again.map((r) => r.ok)).toEqual([false, true]);
    expect((again[0] as { ok: false; error: ConnectorError }).error.message).toContain('23505');
  });

  it('fails non-retryably when the table is missing', async () => {
    const destination = await openDestination({ connection_string: url, table: 'nowhere' });
    await expect(destination.write([event(1)], never)).rejects.toMatchObject({ code: 'table_not_found', retryable: false });
  });
});

describe('postgres check and errors', () => {
  it('is healthy with a latency', async () => {
    const result = await plugin.check!(ctx({ connection_string: url, table: CHECKED }));
    expect(result.health).toBe('healthy');
    expect(result.latencyMs).toBeGreaterThanOrEqual(0);
  });

  it("proves what its side needs: the source's read, the destination's table, columns and privilege", async () => {
    await admin.query(`CREATE TABLE check_src (seq bigint PRIMARY KEY, kind text, at timestamptz)`);
    await admin.query(`CREATE ROLE check_reader LOGIN PASSWORD 'pw'`);
    const down = async (config: PostgresConfig, direction: ConnectorDirection) => {
      const result = await plugin.check!(ctx(config, direction));
      expect(result.health).toBe('down');
      return result.error!.code;
    };
    const source: PostgresConfig = { connection_string: url, table: 'check_src', cursor_column: 'seq', type_column: 'kind', occurred_at_column: 'at' };
    expect((await plugin.check!(ctx(source, 'source'))).health).toBe('healthy');
    expect((await plugin.check!(ctx({ ...source, table: undefined, query: 'SELECT seq, kind, at FROM check_src WHERE kind IS NOT NULL' }, 'source'))).health).toBe('healthy');
    expect(await down({ ...source, table: 'no_such_table' }, 'source')).toBe('table_not_found');
    expect(await down({ ...source, cursor_column: 'no_such_column' }, 'source')).toBe('column_not_found');
    expect(await down({ ...source, occurred_at_column: 'when' }, 'source')).toBe('configuration_invalid');
    const reader = new URL(url);
    reader.username = 'check_reader';
    reader.password = 'pw';
    expect(await down({ ...source, connection_string: reader.toString() }, 'source')).toBe('permission_denied');

    expect(await down({ connection_string: url, table: 'no_such_table' }, 'destination')).toBe('table_not_found');
    expect((await plugin.check!(ctx({ connection_string: url, table: 'not_yet', create_table: true }))).health).toBe('healthy');
    expect(await down({ connection_string: url, table: 'check_src', create_table: true }, 'destination')).toBe('configuration_invalid');
    expect(await down({ connection_string: url, table: 'check_src', columns: { kind: 'kind', missing: 'x' } }, 'destination')).toBe('configuration_invalid');
    await admin.query(`GRANT SELECT ON check_src TO check_reader`);
    expect((await plugin.check!(ctx({ ...source, connection_string: reader.toString() }, 'source'))).health).toBe('healthy');
    await admin.query(`CREATE TABLE check_dst (id text PRIMARY KEY, type text, occurred_at timestamptz, payload jsonb)`);
    expect(await down({ connection_string: reader.toString(), table: 'check_dst' }, 'destination')).toBe('permission_denied');
  });

  it('reports an unreachable server as down and its writes as retryable, without secrets', async () => {
    const config: PostgresConfig = { host: '127.0.0.1', port: await closedPort(), database: 'x', user: 'u', password: 'sup3r-secret', table: CHECKED };
    const result = await plugin.check!(ctx(config));
    expect(result).toMatchObject({ health: 'down', error: { code: 'connection_refused' } });
    expect(JSON.stringify(result)).not.toContain('sup3r-secret');
    const destination = await openDestination(config);
    const failure = await destination.write([event(1)], never).catch((e: unknown) => e);
    expect(failure).toMatchObject({ code: 'connection_refused', retryable: true });
    expect((failure as Error).message).not.toContain('sup3r-secret');
  });

  it('asked for TLS by a server without it, fails as tls_failed, not retryable', async () => {
    // The embedded server has no TLS: the one case of the ssl options a real server here can show.
    const result = await plugin.check!(ctx({ connection_string: url, table: CHECKED, ssl: true }));
    expect(result).toMatchObject({ health: 'down', error: { code: 'tls_failed' } });
    const destination = await openDestination({ connection_string: url, table: CHECKED, ssl: { reject_unauthorized: false } });
    await expect(destination.write([event(1)], never)).rejects.toMatchObject({ code: 'tls_failed', retryable: false });
  });

  it('reports a wrong password as auth_failed, not retryable', async () => {
    const wrong = new URL(url);
    wrong.password = 'not-the-password';
    const result = await plugin.check!(ctx({ connection_string: wrong.toString(), table: CHECKED }));
    expect(result).toMatchObject({ health: 'down', error: { code: 'auth_failed' } });
    expect(result.error!.message).not.toContain('not-the-password');
    const source = await openSource({ connection_string: wrong.toString(), table: 't', cursor_column: 'id', type: 'x' });
    await expect(source.read(null, 10, never)).rejects.toMatchObject({ code: 'auth_failed', retryable: false });
  });
});

describe("postgres check: the destination table takes Ferry's rows", () => {
  /** Creates `name` as `columns` and checks a destination writing it; the check's health and error. */
  const checkTable = async (name: string, columns: string, config: Partial<PostgresConfig> = {}) => {
    await admin.query(`CREATE TABLE ${name} (${columns})`);
    const result = await plugin.check!(ctx({ connection_string: url, table: name, ...config }));
    return { health: result.health, code: result.error?.code, message: result.error?.message ?? '' };
  };
  const LAYOUT = 'type text, occurred_at timestamptz, payload jsonb';

  it('is down, naming the column, when a type refuses every id, time, type or payload', async () => {
    const cases: [string, string, string][] = [
      ['acc_id_bigint', `id bigint PRIMARY KEY, ${LAYOUT}`, '"id" is bigint'],
      ['acc_id_uuid', `id uuid PRIMARY KEY, ${LAYOUT}`, '"id" is uuid'],
      ['acc_id_short', `id varchar(10) PRIMARY KEY, ${LAYOUT}`, '"id" is character varying(10)'],
      ['acc_at_bigint', 'id text PRIMARY KEY, type text, occurred_at bigint, payload jsonb', '"occurred_at" is bigint'],
      ['acc_at_short', 'id text PRIMARY KEY, type text, occurred_at varchar(10), payload jsonb', '"occurred_at" is character varying(10)'],
      ['acc_type_int', 'id text PRIMARY KEY, type int, occurred_at timestamptz, payload jsonb', '"type" is integer'],
      ['acc_payload_array', 'id text PRIMARY KEY, type text, occurred_at timestamptz, payload int[]', '"payload" is integer[]'],
    ];
    for (const [name, columns, named] of cases) {
      const result = await checkTable(name, columns);
      expect({ name, ...result }).toMatchObject({ name, health: 'down', code: 'configuration_invalid' });
      expect(result.message).toContain(named);
    }
  });

  it('is down for a NOT NULL column nothing writes, a written generated or identity column, and upsert without a unique id', async () => {
    const tenant = await checkTable('acc_tenant', `id text PRIMARY KEY, ${LAYOUT}, tenant text NOT NULL`);
    expect(tenant).toMatchObject({ health: 'down', code: 'configuration_invalid' });
    expect(tenant.message).toContain('"tenant" is NOT NULL without a default');
    await admin.query(`CREATE DOMAIN required_text AS text NOT NULL`);
    const domain = await checkTable('acc_domain_nn', `id text PRIMARY KEY, ${LAYOUT}, region required_text`);
    expect(domain).toMatchObject({ health: 'down', code: 'configuration_invalid' });
    expect(domain.message).toContain('"region"');
    const generated = await checkTable('acc_generated', 'id text PRIMARY KEY, type text, occurred_at timestamptz, total int GENERATED ALWAYS AS (1) STORED', { columns: { total: 'total' } });
    expect(generated).toMatchObject({ health: 'down', code: 'configuration_invalid' });
    expect(generated.message).toContain('"total" is generated');
    const identity = await checkTable('acc_identity', `id text, seq bigint GENERATED ALWAYS AS IDENTITY, ${LAYOUT}`, { mode: 'insert', columns: { seq: 'seq' } });
    expect(identity.message).toContain('"seq" is GENERATED ALWAYS AS IDENTITY');
    const noKey = await checkTable('acc_no_key', `id text, ${LAYOUT}`);
    expect(noKey).toMatchObject({ health: 'down', code: 'configuration_invalid' });
    expect(noKey.message).toContain('unique index on "id"');
    // The same table in insert mode needs no key: duplicates are the user's choice there.
    expect((await plugin.check!(ctx({ connection_string: url, table: 'acc_no_key', mode: 'insert' }))).health).toBe('healthy');
  });

  it('is healthy for every table that takes the rows, however it differs from the default layout', async () => {
    await admin.query(`CREATE TYPE acc_kind AS ENUM ('order.paid')`);
    await admin.query(`CREATE DOMAIN event_id AS text CHECK (VALUE LIKE 'evt\\_%')`);
    const healthy: [string, string, Partial<PostgresConfig>?][] = [
      ['acc_wide', 'id varchar(64) PRIMARY KEY, type varchar(20), occurred_at timestamp(0), payload json'],
      ['acc_text', 'id event_id PRIMARY KEY, type acc_kind, occurred_at text, payload text'],
      ['acc_extras', `id text PRIMARY KEY, ${LAYOUT}, seq bigserial, n bigint GENERATED ALWAYS AS IDENTITY, d int GENERATED BY DEFAULT AS IDENTITY, at timestamptz NOT NULL DEFAULT now(), g int GENERATED ALWAYS AS (1) STORED, note text`],
      ['acc_unique', 'id text NOT NULL, type text, occurred_at timestamptz, payload jsonb, UNIQUE (id)'],
      ['acc_mapped', 'id text PRIMARY KEY, type text, occurred_at timestamptz, amount numeric NOT NULL, who text', { columns: { amount: 'amount', who: 'customer.name' } }],
    ];
    for (const [name, columns, config] of healthy) {
      expect({ name, ...(await checkTable(name, columns, config)) }).toMatchObject({ name, health: 'healthy' });
    }
  });

  it('with create_table and no table, proves the schema exists and the role may create in it', async () => {
    await admin.query(`CREATE ROLE acc_writer LOGIN PASSWORD 'pw'`);
    const writer = new URL(url);
    writer.username = 'acc_writer';
    writer.password = 'pw';
    // Since Postgres 15 a role may not create tables in public unless granted.
    const denied = await plugin.check!(ctx({ connection_string: writer.toString(), table: 'acc_later', create_table: true }));
    expect(denied).toMatchObject({ health: 'down', error: { code: 'permission_denied' } });
    expect(denied.error!.message).toContain('schema public');
    const missing = await plugin.check!(ctx({ connection_string: url, table: 'no_schema.acc_later', create_table: true }));
    expect(missing).toMatchObject({ health: 'down', error: { code: 'configuration_invalid' } });
    expect(missing.error!.message).toContain('no_schema');
    await admin.query(`GRANT CREATE ON SCHEMA public TO acc_writer`);
    expect((await plugin.check!(ctx({ connection_string: writer.toString(), table: 'acc_later', create_table: true }))).health).toBe('healthy');
  });

  it('fails a write to such a table as a whole, not retryably, instead of refusing each row', async () => {
    await admin.query(`CREATE TABLE acc_write_bigint (id bigint PRIMARY KEY, ${LAYOUT})`);
    const destination = await openDestination({ connection_string: url, table: 'acc_write_bigint' });
    const failure = await destination.write([event(1), event(2)], never).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ConnectorError);
    expect(failure).toMatchObject({ code: 'configuration_invalid', retryable: false });
    expect((failure as Error).message).toContain('"id" is bigint');
    // Fixed: the next write prepares the table again and lands.
    await admin.query(`ALTER TABLE acc_write_bigint ALTER COLUMN id TYPE text`);
    expect(await destination.write([event(1), event(2)], never)).toEqual([{ ok: true }, { ok: true }]);
  });

  it('before Postgres 16, tries a cast to the type without its modifier', async () => {
    const old = 150000;
    expect(await acceptsInput(admin, 'evt_01', { full: 'bigint', plain: 'bigint' }, old)).toBe(false);
    expect(await acceptsInput(admin, 'evt_01', { full: 'character varying(3)', plain: 'character varying' }, old)).toBe(true);
    expect(await acceptsInput(admin, '2026-01-02T03:04:05.678Z', { full: 'timestamp(0) with time zone', plain: 'timestamp with time zone' }, old)).toBe(true);
    expect(await acceptsInput(admin, 'x', { full: 'event_id', plain: 'event_id' }, old)).toBe(false);
  });
});

describe('postgres rotate', () => {
  const roleUrl = (role: string, password: string) => {
    const u = new URL(url);
    u.username = role;
    u.password = password;
    return u.toString();
  };

  it('sets a new password with ALTER ROLE through admin_connection_string', async () => {
    await admin.query(`CREATE ROLE "ferry rotor" LOGIN PASSWORD 'old-password'`);
    const config: PostgresConfig = { connection_string: roleUrl('ferry rotor', 'old-password'), admin_connection_string: url, table: CHECKED };
    const fields = await plugin.rotate!(ctx(config), {});
    expect(Object.keys(fields)).toEqual(['connection_string']);
    expect(fields.connection_string).not.toContain('old-password');
    expect((await plugin.check!(ctx({ connection_string: fields.connection_string!, table: CHECKED }))).health).toBe('healthy');
    expect((await plugin.check!(ctx(config))).error?.code).toBe('auth_failed');

    // Host-based config: the new password comes back as `password`.
    const u = new URL(url);
    const discrete: PostgresConfig = { host: u.hostname, port: Number(u.port), database: u.pathname.slice(1), user: 'ferry rotor', password: 'x', admin_connection_string: url, table: CHECKED };
    const next = await plugin.rotate!(ctx(discrete), {});
    expect(next.password).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect((await plugin.check!(ctx({ ...discrete, password: next.password! }))).health).toBe('healthy');
  });

  it('validates supplied credentials by connecting with them', async () => {
    await admin.query(`CREATE ROLE supplied_role LOGIN PASSWORD 'first'`);
    await admin.query(`ALTER ROLE supplied_role PASSWORD 'second'`);
    const config: PostgresConfig = { connection_string: roleUrl('supplied_role', 'first') };
    const fields = await plugin.rotate!(ctx(config), { config: { password: 'second' } });
    expect(fields).toEqual({ connection_string: roleUrl('supplied_role', 'second') });
    await expect(plugin.rotate!(ctx(config), { config: { password: 'third' } })).rejects.toMatchObject({ code: 'auth_failed', retryable: false });
  });

  it('needs supplied credentials without admin_connection_string', async () => {
    await expect(plugin.rotate!(ctx({ connection_string: url }), {})).rejects.toMatchObject({ code: 'credentials_required', retryable: false });
  });
});

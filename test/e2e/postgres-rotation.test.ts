/**
 * Credential rotation under load (docs/api.md, Connector rotation): a streaming pipeline moves 100,000 rows
 * from one Postgres table to another as a login role whose password is changed mid-stream by a
 * real `ALTER ROLE` (the connector's admin connection). Every row arrives exactly once, the
 * pipeline that was active is active again, one a user paused stays paused, and only the new
 * password opens a connection.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterEach, expect, it } from 'vitest';
import { createEngine, generateSecretKey, postgresStorage, type Engine } from '@ferry/core';
import { engineContext, openConnector } from '@ferry/core/internal';
import { postgres } from '@ferry/postgres';
import { eventually, VirtualClock } from '@ferry/testing';
import { getSharedTestPostgres } from '@ferry/test-servers';

const ROWS = 100_000;
const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.stop()));
});

/** Pipelines here poll on their flush interval: looks 1 s of virtual time apart by default. */
const until = (clock: VirtualClock, check: () => boolean | Promise<boolean>, stepMs = 1000, maxSteps = 3000) => eventually(clock, check, stepMs, maxSteps, 5);

const withCredentials = (url: string, user: string, password: string) => {
  const u = new URL(url);
  u.username = user;
  u.password = password;
  return u.toString();
};

it('rotates a connector with ALTER ROLE while a pipeline streams 100,000 rows: each arrives once', async () => {
  const shared = await getSharedTestPostgres();
  const dataUrl = await shared.createDatabase('rotation_data');
  const admin = new pg.Pool({ connectionString: dataUrl, max: 2 });
  const role = `ferry_app_${randomBytes(4).toString('hex')}`;
  try {
    const oldPassword = randomBytes(18).toString('base64url');
    await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD '${oldPassword}'`);
    await admin.query('CREATE TABLE source_rows (id bigint PRIMARY KEY, note text NOT NULL)');
    await admin.query(`INSERT INTO source_rows SELECT g, 'row ' || g FROM generate_series(1, ${ROWS}) AS g`);
    await admin.query('CREATE TABLE landed (id text PRIMARY KEY, type text, occurred_at timestamptz, payload jsonb)');
    await admin.query(`GRANT SELECT ON source_rows TO ${role}; GRANT SELECT ON landed TO ${role}`);
    const appUrl = withCredentials(dataUrl, role, oldPassword);

    const clock = new VirtualClock(undefined, { settleRealMs: 1 });
    const engine = await createEngine({
      storage: postgresStorage({ connectionString: await shared.createDatabase('rotation_engine') }),
      secretKey: generateSecretKey(),
      clock,
      plugins: [postgres()],
      // The test Postgres listens on loopback, which the outbound policy refuses unless allowed.
      outboundAllow: ['127.0.0.1'],
      runtime: { pollIntervalMs: 60_000, leaseTtlMs: 1_800_000 },
      webhookDelivery: false,
    });
    await engine.start();
    engines.push(engine);
    const ws = 'default';
    const source = await engine.connectors.create(ws, {
      type: 'postgres',
      direction: 'source',
      config: { connection_string: appUrl, admin_connection_string: dataUrl, table: 'source_rows', cursor_column: 'id', type: 'row.copied', batch_size: 1000 },
    });
    // The destination logs in as another role: the rotation under test is the source's.
    const destination = await engine.connectors.create(ws, { type: 'postgres', direction: 'destination', config: { connection_string: dataUrl, table: 'landed' } });
    const streaming = await engine.pipelines.create(ws, { name: 'copy', source_connector_id: source.id, destination_connector_id: destination.id, batch_size: 1000, flush_interval_ms: 1000, activate: true });
    const userPaused = await engine.pipelines.create(ws, { name: 'paused-by-user', source_connector_id: source.id, destination_connector_id: destination.id, activate: true });
    await engine.pipelines.pause(ws, userPaused.id);

    const landed = async () => Number((await admin.query('SELECT count(*) AS n FROM landed')).rows[0].n);
    // Mid-stream: some rows moved, most not yet.
    await until(clock, async () => (await landed()) >= 10_000, 100);
    const before = await landed();
    expect(before).toBeLessThan(ROWS);

    const rotation = await engine.connectors.rotate(ws, source.id);
    expect(rotation.rotation.status).toBe('completed');
    expect(rotation.rotation.paused_pipeline_ids).toEqual([streaming.id]);
    expect((await engine.pipelines.get(ws, streaming.id)).state).toBe('active');
    expect((await engine.pipelines.get(ws, userPaused.id)).state).toBe('paused');

    await until(clock, async () => (await landed()) === ROWS, 100);
    const counts = (await admin.query('SELECT count(*) AS n, count(DISTINCT id) AS d, min((payload->>\'id\')::bigint) AS lo, max((payload->>\'id\')::bigint) AS hi FROM landed')).rows[0];
    expect({ n: Number(counts.n), d: Number(counts.d), lo: Number(counts.lo), hi: Number(counts.hi) }).toEqual({ n: ROWS, d: ROWS, lo: 1, hi: ROWS });

    // Only the new password opens a connection now.
    const attempt = async (password: string) => {
      const client = new pg.Client({ connectionString: withCredentials(dataUrl, role, password) });
      try {
        await client.connect();
        return 'ok';
      } catch (error) {
        return (error as { code?: string }).code ?? 'error';
      } finally {
        await client.end().catch(() => undefined);
      }
    };
    expect(await attempt(oldPassword)).toBe('28P01');
    const opened = await openConnector(engineContext(engine), ws, source.id);
    const newPassword = decodeURIComponent(new URL(String(opened.config.connection_string)).password);
    expect(newPassword).not.toBe(oldPassword);
    expect(await attempt(newPassword)).toBe('ok');
  } finally {
    await Promise.all(engines.splice(0).map((e) => e.stop()));
    await admin.query(`DROP OWNED BY ${role}`).catch(() => undefined);
    await admin.end();
  }
}, 300_000);

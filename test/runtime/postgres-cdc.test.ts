import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { createEngine, generateSecretKey, sqliteStorage, type Engine, type JsonObject, type PlatformEvent } from '@ferry/core';
import { postgres } from '@ferry/postgres';
import { MemoryHub, memoryConnector, eventually, VirtualClock } from '@ferry/testing';
import { getSharedTestPostgres } from '@ferry/test-servers';
import pg from 'pg';

// Change capture through the engine: the snapshot's hand-over to the stream, pause and activate
// resuming at the confirmed position, and a deleted pipeline dropping its slot and publication.
const WS = 'default';
let url: string;
let admin: pg.Pool;
const engines: Engine[] = [];

beforeAll(async () => {
  url = await (await getSharedTestPostgres()).createDatabase('runtime_pg_cdc');
  admin = new pg.Pool({ connectionString: url, max: 2 });
});
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.stop()));
});
afterAll(async () => {
  await admin.end();
});

/** Looks 1 s of virtual time apart; real waits only let the I/O of each step finish. */
const until = (clock: VirtualClock, check: () => boolean | Promise<boolean>) => eventually(clock, check, 1000, 1000, 3);

async function setup() {
  const clock = new VirtualClock(undefined, { settleRealMs: 1 });
  const hub = new MemoryHub({ clock });
  const engine = await createEngine({
    storage: sqliteStorage({ filename: join(mkdtempSync(join(tmpdir(), 'ferry-cdc-')), 'ferry.db') }),
    clock,
    secretKey: generateSecretKey(),
    plugins: [postgres(), memoryConnector(hub)],
    outboundAllow: ['127.0.0.1'],
    runtime: { pollIntervalMs: 60_000, leaseTtlMs: 30 * 60_000 },
    webhookDelivery: false,
  });
  await engine.start();
  engines.push(engine);
  return { clock, hub, engine };
}

const slotOf = async (name: string) => (await admin.query<{ active: boolean }>('SELECT active FROM pg_replication_slots WHERE slot_name = $1', [name])).rows[0];
const publicationOf = async (name: string) => (await admin.query('SELECT 1 FROM pg_publication WHERE pubname = $1', [name])).rows.length > 0;
const ids = (hub: MemoryHub) => [...hub.sink('out').events.values()].map((e) => ((e.payload as JsonObject).record as JsonObject).id);

it('snapshot, then the stream; pause and activate resume at the confirmed position; delete drops the slot', async () => {
  await admin.query('CREATE TABLE items (id int PRIMARY KEY, label text)');
  await admin.query(`INSERT INTO items SELECT g, 'item ' || g FROM generate_series(1, 30) g`);
  const { clock, hub, engine } = await setup();
  // The exported snapshot, which meets the stream exactly: each row once, then its changes. (A
  // backfill, snapshot "incremental", may read a row inserted meanwhile as well as stream it.)
  const source = await engine.connectors.create(WS, { type: 'postgres', direction: 'source', config: { connection_string: url, capture: 'changes', tables: ['items'], batch_size: 10, snapshot: 'initial' } });
  const sink = await engine.connectors.create(WS, { type: 'memory', direction: 'destination', config: { name: 'out' } });
  const pipeline = await engine.pipelines.create(WS, { name: 'items', source_connector_id: source.id, destination_connector_id: sink.id, activate: true, batch_size: 10, flush_interval_ms: 1000 });
  const slot = `ferry_${pipeline.id.toLowerCase()}`;

  await until(clock, () => hub.sink('out').events.size === 30);
  expect(new Set([...hub.sink('out').events.values()].map((e) => e.type))).toEqual(new Set(['items.read']));
  await admin.query(`INSERT INTO items VALUES (31, 'new'), (32, 'newer')`);
  await admin.query(`UPDATE items SET label = 'changed' WHERE id = 1`);
  await until(clock, () => hub.sink('out').events.size === 33);
  // The slot's lag, as the source last reported it: what /metrics shows as ferry_source_lag_bytes.
  await until(clock, () => engine.sourceLag().has(pipeline.id));
  expect(engine.sourceLag().get(pipeline.id)).toBeGreaterThanOrEqual(0);

  await engine.pipelines.pause(WS, pipeline.id);
  await until(clock, async () => (await slotOf(slot))?.active === false);
  expect(engine.sourceLag().has(pipeline.id)).toBe(false);
  // Kept while paused; what is written meanwhile waits in the slot.
  await admin.query(`INSERT INTO items VALUES (33, 'while paused')`);
  await admin.query(`DELETE FROM items WHERE id = 2`);
  await engine.pipelines.activate(WS, pipeline.id);
  await until(clock, () => hub.sink('out').events.size === 35);
  expect(ids(hub).slice(30)).toEqual([31, 32, 1, 33, 2]);
  expect([...hub.sink('out').events.values()].slice(30).map((e) => e.type)).toEqual(['items.insert', 'items.insert', 'items.update', 'items.insert', 'items.delete']);
  expect(hub.sink('out').duplicates).toBe(0);
  // The event log lists them too, each once, once the last batch has committed (the destination
  // takes a batch before its commit).
  await until(clock, async () => (await engine.events.list(WS, pipeline.id, { limit: 100 })).data.length >= 35);
  const listed = await engine.events.list(WS, pipeline.id, { limit: 100 });
  expect(listed.data).toHaveLength(35);
  expect(new Set(listed.data.map((e) => e.id)).size).toBe(35);

  await engine.pipelines.pause(WS, pipeline.id);
  await until(clock, async () => (await slotOf(slot))?.active === false);
  const deleted = await engine.pipelines.delete(WS, pipeline.id);
  expect(deleted.status).toBe('deleted');
  expect(await slotOf(slot)).toBeUndefined();
  expect(await publicationOf(slot)).toBe(false);
});

it('a table added to the source by PATCH is published and backfilled while the stream goes on', async () => {
  await admin.query('CREATE TABLE orders_a (id int PRIMARY KEY, label text)');
  await admin.query('CREATE TABLE orders_b (id int PRIMARY KEY, label text)');
  await admin.query(`INSERT INTO orders_a SELECT g, 'a ' || g FROM generate_series(1, 12) g`);
  await admin.query(`INSERT INTO orders_b SELECT g, 'b ' || g FROM generate_series(1, 25) g`);
  const { clock, hub, engine } = await setup();
  const config = { connection_string: url, capture: 'changes', tables: ['orders_a'], batch_size: 10 };
  const source = await engine.connectors.create(WS, { type: 'postgres', direction: 'source', config });
  const sink = await engine.connectors.create(WS, { type: 'memory', direction: 'destination', config: { name: 'out' } });
  const pipeline = await engine.pipelines.create(WS, { name: 'orders', source_connector_id: source.id, destination_connector_id: sink.id, activate: true, batch_size: 10, flush_interval_ms: 1000 });
  const typed = (type: string) => [...hub.sink('out').events.values()].filter((e) => e.type === type);
  await until(clock, () => typed('orders_a.read').length === 12);

  await engine.connectors.update(WS, source.id, { config: { ...config, tables: ['orders_a', 'orders_b'] } });
  await until(clock, () => typed('orders_b.read').length === 25);
  const publication = `ferry_${pipeline.id.toLowerCase()}`;
  const published = await admin.query<{ tablename: string }>('SELECT tablename FROM pg_publication_tables WHERE pubname = $1 ORDER BY tablename', [publication]);
  expect(published.rows.map((r) => r.tablename)).toEqual(['orders_a', 'orders_b']);
  await admin.query(`UPDATE orders_b SET label = 'changed' WHERE id = 3`);
  await until(clock, () => typed('orders_b.update').length === 1);
  // orders_a was not read again, and every read of orders_b names its backfill.
  expect(typed('orders_a.read')).toHaveLength(12);
  expect(new Set(typed('orders_b.read').map((e) => ((e.payload as JsonObject).metadata as JsonObject).backfill_id)).size).toBe(1);
});

it('deleting a pipeline while it streams: deleting at once, then gone with its slot and publication', async () => {
  await admin.query('CREATE TABLE live_items (id int PRIMARY KEY)');
  const { clock, hub, engine } = await setup();
  const source = await engine.connectors.create(WS, { type: 'postgres', direction: 'source', config: { connection_string: url, capture: 'changes', tables: ['live_items'] } });
  const sink = await engine.connectors.create(WS, { type: 'memory', direction: 'destination', config: { name: 'out' } });
  const pipeline = await engine.pipelines.create(WS, { name: 'live', source_connector_id: source.id, destination_connector_id: sink.id, activate: true, flush_interval_ms: 1000 });
  const slot = `ferry_${pipeline.id.toLowerCase()}`;
  await until(clock, async () => (await slotOf(slot))?.active === true);
  await admin.query('INSERT INTO live_items VALUES (1)');
  // Its insert, and its read as well when the backfill of the rows present (snapshot
  // "incremental") selected the table after the insert committed.
  await until(clock, () => hub.sink('out').events.size >= 1);

  const deleted = await engine.pipelines.delete(WS, pipeline.id);
  expect(deleted.status).toBe('deleting');
  await until(clock, async () => (await engine.pipelines.list(WS)).data.every((p) => p.id !== pipeline.id));
  expect(await slotOf(slot)).toBeUndefined();
  expect(await publicationOf(slot)).toBe(false);
});

it('a backfill asked for re-reads the rows its filter selects in chunks while the stream goes on: progress, end and events recorded', async () => {
  await admin.query('CREATE TABLE bf_items (id int PRIMARY KEY, region text NOT NULL, n int NOT NULL)');
  await admin.query(`INSERT INTO bf_items SELECT g, CASE WHEN g % 2 = 0 THEN 'eu' ELSE 'us' END, g FROM generate_series(1, 60) g`);
  await admin.query('CREATE TABLE bf_nokey (a int, b text)');
  await admin.query('CREATE TABLE bf_more (id int PRIMARY KEY)');
  await admin.query('ALTER TABLE bf_nokey REPLICA IDENTITY FULL');
  await admin.query('ANALYZE bf_items');
  const { clock, hub, engine } = await setup();
  const events: PlatformEvent[] = [];
  engine.on('*', (event) => void events.push(event));
  // No first snapshot: only the backfill asked for reads rows.
  const config = { connection_string: url, capture: 'changes', tables: ['bf_items', 'bf_nokey', 'bf_more'], batch_size: 10, snapshot: 'never' };
  const source = await engine.connectors.create(WS, { type: 'postgres', direction: 'source', config });
  const sink = await engine.connectors.create(WS, { type: 'memory', direction: 'destination', config: { name: 'out' } });
  const pipeline = await engine.pipelines.create(WS, { name: 'bf', source_connector_id: source.id, destination_connector_id: sink.id, activate: true, batch_size: 10, flush_interval_ms: 1000 });
  const typed = (type: string) => [...hub.sink('out').events.values()].filter((e) => e.type === type);
  await until(clock, async () => (await slotOf(`ferry_${pipeline.id.toLowerCase()}`))?.active === true);

  // What the source refuses, before anything is recorded.
  await expect(engine.backfills.create(WS, pipeline.id, { tables: ['bf_nokey'] })).rejects.toMatchObject({ code: 'backfill_needs_key', message: expect.stringContaining('public.bf_nokey') });
  await expect(engine.backfills.create(WS, pipeline.id, { tables: ['bf_other'] })).rejects.toMatchObject({ code: 'validation_failed', errors: [{ pointer: '/tables', code: 'unknown_table' }] });
  await expect(engine.backfills.create(WS, pipeline.id, { tables: ['bf_items'], where: { bf_items: 'id IN (SELECT 1)' } })).rejects.toMatchObject({ code: 'invalid_where' });
  await expect(engine.backfills.create(WS, pipeline.id, { tables: ['bf_items'], where: { bf_items: 'nope > 1' } })).rejects.toMatchObject({ code: 'invalid_where', message: expect.stringContaining('"nope"') });
  expect((await engine.backfills.list(WS, pipeline.id)).data).toEqual([]);

  const asked = await engine.backfills.create(WS, pipeline.id, { tables: ['bf_items'], where: { bf_items: "region = 'eu' AND n > 0" }, chunk_size: 7 });
  expect(asked).toMatchObject({ state: 'queued', tables: [{ table: 'public.bf_items', rows_read: 0, rows_estimated: 60, state: 'pending' }], where: { 'public.bf_items': "region = 'eu' AND n > 0" }, chunk_size: 7 });
  await until(clock, async () => (await engine.backfills.get(WS, asked.id)).state === 'succeeded');
  const done = await engine.backfills.get(WS, asked.id);
  expect(done).toMatchObject({ rows_read: 30, tables: [{ table: 'public.bf_items', rows_read: 30, rows_estimated: 60, state: 'done' }], error: null });
  expect(done.started_at).not.toBeNull();
  expect(done.finished_at).not.toBeNull();
  // The rows the filter selects, each once, naming the backfill.
  const reads = typed('bf_items.read');
  expect(reads.map((e) => ((e.payload as JsonObject).record as JsonObject).id).sort((a, b) => Number(a) - Number(b))).toEqual(Array.from({ length: 30 }, (_, k) => 2 * (k + 1)));
  expect(reads.every((e) => ((e.payload as JsonObject).metadata as JsonObject).backfill_id === asked.id)).toBe(true);
  expect(events.filter((e) => e.type.startsWith('backfill.')).map((e) => [e.type, e.data])).toEqual([
    ['backfill.started', { pipeline_id: pipeline.id, backfill_id: asked.id, rows_read: expect.any(Number) }],
    ['backfill.completed', { pipeline_id: pipeline.id, backfill_id: asked.id, rows_read: 30 }],
  ]);
  // The stream went on, and goes on.
  await admin.query(`INSERT INTO bf_items VALUES (61, 'eu', 61)`);
  await until(clock, () => typed('bf_items.insert').length === 1);

  // One asked for while the pipeline is paused waits; cancelled, it never runs.
  await engine.pipelines.pause(WS, pipeline.id);
  const waiting = await engine.backfills.create(WS, pipeline.id, { tables: ['bf_items'] });
  const cancelled = await engine.backfills.cancel(WS, waiting.id);
  expect(cancelled).toMatchObject({ state: 'cancelled', started_at: null });
  await expect(engine.backfills.cancel(WS, waiting.id)).rejects.toMatchObject({ code: 'invalid_state_transition', currentStatus: 'cancelled' });
  // One whose table lost its key before it ran fails, naming it; the one after it runs, and the stream goes on.
  const doomed = await engine.backfills.create(WS, pipeline.id, { tables: ['bf_more'] });
  const again = await engine.backfills.create(WS, pipeline.id, { tables: ['bf_items'], chunk_size: 25 });
  await admin.query('ALTER TABLE bf_more REPLICA IDENTITY FULL');
  await admin.query('ALTER TABLE bf_more DROP CONSTRAINT bf_more_pkey');
  await engine.pipelines.activate(WS, pipeline.id);
  await until(clock, async () => (await engine.backfills.get(WS, again.id)).state === 'succeeded');
  expect(await engine.backfills.get(WS, doomed.id)).toMatchObject({ state: 'failed', error: { code: 'backfill_needs_key', message: expect.stringContaining('public.bf_more') } });
  expect((await engine.backfills.get(WS, again.id)).rows_read).toBe(61);
  expect(typed('bf_items.read').filter((e) => ((e.payload as JsonObject).metadata as JsonObject).backfill_id === again.id)).toHaveLength(61);
  expect(typed('bf_items.read').filter((e) => ((e.payload as JsonObject).metadata as JsonObject).backfill_id === waiting.id)).toEqual([]);
  expect(events.filter((e) => e.type === 'backfill.failed').map((e) => e.data)).toEqual([{ pipeline_id: pipeline.id, backfill_id: doomed.id, rows_read: 0, error: { code: 'backfill_needs_key', message: expect.stringContaining('public.bf_more') } }]);
  await admin.query(`UPDATE bf_items SET n = -1 WHERE id = 1`);
  await until(clock, () => typed('bf_items.update').length === 1);
});

import { createHmac } from 'node:crypto';
import { appendFile, mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { createEngine, sqliteStorage, type Engine } from '@ferry/core';
import { MemoryHub, memoryConnector, eventually, VirtualClock } from '@ferry/testing';
import { jsonlFile } from './index.js';

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.stop()));
});

/** Pipelines here poll on their flush interval: looks 1 s of virtual time apart by default. */
const until = (clock: VirtualClock, check: () => boolean | Promise<boolean>, stepMs = 1000, maxSteps = 300) => eventually(clock, check, stepMs, maxSteps, 2);

async function start(clock: VirtualClock, hub: MemoryHub): Promise<Engine> {
  const engine = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }), clock, plugins: [jsonlFile(), memoryConnector(hub)], runtime: { pollIntervalMs: 60_000, leaseTtlMs: 1_800_000 }, webhookDelivery: false });
  await engine.start();
  engines.push(engine);
  return engine;
}

const order = (n: number) => `${JSON.stringify({ type: 'order.created', payload: { n } })}\n`;

it('streams a JSON Lines file into a memory sink: lines appended while it runs arrive, once', async () => {
  const clock = new VirtualClock(undefined, { settleRealMs: 1 });
  const hub = new MemoryHub({ clock });
  const engine = await start(clock, hub);
  const path = join(await mkdtemp(join(tmpdir(), 'ferry-jsonl-e2e-')), 'orders.jsonl');
  await appendFile(path, Array.from({ length: 12 }, (_, n) => order(n)).join(''));

  const source = await engine.connectors.create('default', { type: 'jsonl_file', direction: 'source', config: { path } });
  expect((await engine.connectors.check('default', source.id)).health).toBe('healthy');
  const sink = await engine.connectors.create('default', { type: 'memory', direction: 'destination', config: { name: 'orders' } });
  await engine.pipelines.create('default', { name: 'orders', source_connector_id: source.id, destination_connector_id: sink.id, activate: true, batch_size: 5, flush_interval_ms: 1000 });
  await until(clock, () => hub.sink('orders').events.size === 12);

  await appendFile(path, Array.from({ length: 3 }, (_, n) => order(12 + n)).join(''));
  await until(clock, () => hub.sink('orders').events.size === 15);
  const events = [...hub.sink('orders').events.values()];
  expect(events.map((e) => (e.payload as { n: number }).n)).toEqual([...Array(15).keys()]);
  expect(events.every((e) => e.type === 'order.created')).toBe(true);
  expect(hub.sink('orders').duplicates).toBe(0);
});

it('delivers a memory stream into a JSON Lines file, signed with a secret the API never shows', async () => {
  const clock = new VirtualClock(undefined, { settleRealMs: 1 });
  const hub = new MemoryHub({ clock });
  const engine = await start(clock, hub);
  const path = join(await mkdtemp(join(tmpdir(), 'ferry-jsonl-e2e-')), 'out.jsonl');
  hub.stream('in').generate(8, (n) => ({ type: 'order.paid', payload: { n } }));

  const source = await engine.connectors.create('default', { type: 'memory', direction: 'source', config: { name: 'in' } });
  const file = await engine.connectors.create('default', { type: 'jsonl_file', direction: 'destination', config: { path, signing_key: 's'.repeat(40) } });
  expect(file.config.signing_key).toBe('********');
  await engine.pipelines.create('default', { name: 'to-file', source_connector_id: source.id, destination_connector_id: file.id, activate: true, batch_size: 3, flush_interval_ms: 1000 });
  const lines = async () => (await readFile(path, 'utf8').catch(() => '')).split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { id: string; type: string; payload: { n: number }; sig: string });
  await until(clock, async () => (await lines()).length === 8);

  const written = await lines();
  expect(written.map((l) => l.payload.n)).toEqual([...Array(8).keys()]);
  expect(new Set(written.map((l) => l.id)).size).toBe(8);
  expect(written.every((l) => l.type === 'order.paid' && /^[0-9a-f]{64}$/.test(l.sig))).toBe(true);

  // A rotation through the engine: the plugin generates the key, the check passes, the pipeline resumes.
  const rotated = await engine.connectors.rotate('default', file.id);
  expect(rotated.rotation.status).toBe('completed');
  hub.stream('in').push({ type: 'order.paid', payload: { n: 8 } });
  await until(clock, async () => (await lines()).length === 9);
  // The `sig` of a line is the HMAC of the line without it: the old key signed the first eight only.
  const signedWith = (key: string, line: { sig: string }) => {
    const { sig, ...body } = line;
    return createHmac('sha256', key).update(JSON.stringify(body)).digest('hex') === sig;
  };
  const after = await lines();
  expect(after.slice(0, 8).every((l) => signedWith('s'.repeat(40), l))).toBe(true);
  expect(signedWith('s'.repeat(40), after[8]!)).toBe(false);
});

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { createEngine, generateSecretKey, sqliteStorage, webhookHeaders, type Engine } from '@ferry/core';
import { MemoryHub, memoryConnector, eventually, VirtualClock } from '@ferry/testing';
import { webhook } from '@ferry/webhook';

const SECRET = `whsec_${Buffer.alloc(32, 5).toString('base64')}`;
const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.stop()));
});

/** Pipelines here poll on their flush interval: looks 1 s of virtual time apart by default. */
const until = (clock: VirtualClock, check: () => boolean | Promise<boolean>, stepMs = 1000, maxSteps = 300) => eventually(clock, check, stepMs, maxSteps, 2);

it('a webhook source streams what the ingest endpoint stored, in arrival order, once across a restart', async () => {
  const filename = join(mkdtempSync(join(tmpdir(), 'ferry-webhook-source-')), 'ferry.db');
  const clock = new VirtualClock(undefined, { settleRealMs: 1 });
  const hub = new MemoryHub({ clock });
  const secretKey = generateSecretKey();
  const start = async () => {
    const engine = await createEngine({ storage: sqliteStorage({ filename }), clock, secretKey, plugins: [webhook(), memoryConnector(hub)], runtime: { pollIntervalMs: 60_000, leaseTtlMs: 1_800_000 }, webhookDelivery: false });
    await engine.start();
    engines.push(engine);
    return engine;
  };
  let engine = await start();
  const source = await engine.connectors.create('default', { type: 'webhook', direction: 'source', config: { signing_secret: SECRET } });
  const sink = await engine.connectors.create('default', { type: 'memory', direction: 'destination', config: { name: 'out' } });
  await engine.pipelines.create('default', { name: 'ingest', source_connector_id: source.id, destination_connector_id: sink.id, activate: true, batch_size: 10, flush_interval_ms: 1000 });
  let message = 0;
  const send = async (e: Engine, events: object[]) => {
    const body = JSON.stringify({ events });
    const headers = webhookHeaders({ id: `msg_${message++}`, timestamp: Math.floor(clock.now() / 1000), body }, [SECRET]);
    return e.ingest.receive(source.id, body, headers);
  };
  await send(engine, Array.from({ length: 15 }, (_, n) => ({ type: 'order.created', payload: { n } })));
  await until(clock, () => hub.sink('out').events.size === 15);
  await engine.stop();
  engines.splice(engines.indexOf(engine), 1);
  engine = await start();
  await send(engine, Array.from({ length: 5 }, (_, n) => ({ type: 'order.paid', payload: { n: 15 + n } })));
  await until(clock, () => hub.sink('out').events.size === 20);
  const payloads = [...hub.sink('out').events.values()].map((e) => (e.payload as { n: number }).n);
  expect(payloads).toEqual([...Array(20).keys()]);
  expect(hub.sink('out').duplicates).toBe(0);
});

/**
 * The repair a user makes while a batch is held reaches that batch, with the real webhook
 * plugin and a real HTTP receiver on loopback, on both storages: a webhook destination whose
 * `url` points where the receiver answers 503 holds its batch; the user PATCHes the `url`; the
 * next attempt, woken by the change, sends the held events to the new path, and nothing goes to
 * the old one after the PATCH. (The retries used to keep the connection opened before they
 * began: the held batch went to the old path until a pause and an activate.)
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, generateSecretKey, postgresStorage, sqliteStorage, webhookHeaders, type Engine, type StorageConfig } from '@ferry/core';
import { eventually, startWebhookReceiver, VirtualClock, type WebhookReceiver } from '@ferry/testing';
import { getSharedTestPostgres } from '@ferry/test-servers';
import { webhook } from '@ferry/webhook';

const SECRET = `whsec_${Buffer.alloc(32, 3).toString('base64')}`;
const WS = 'default';
const engines: Engine[] = [];
const receivers: WebhookReceiver[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.stop()));
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});

const storages: Array<[string, () => Promise<StorageConfig>]> = [
  ['sqlite', async () => sqliteStorage({ filename: join(mkdtempSync(join(tmpdir(), 'ferry-held-fix-')), 'ferry.db') })],
  ['postgres', async () => postgresStorage({ connectionString: await (await getSharedTestPostgres()).createDatabase('held_fix') })],
];

describe.each(storages)('a fix reaches the held batch (%s)', (_name, storage) => {
  it('a PATCH of the destination url sends the held events to the new path, none to the old one after it', async () => {
    const clock = new VirtualClock(undefined, { settleRealMs: 1 });
    const receiver = await startWebhookReceiver({ clock });
    receivers.push(receiver);
    receiver.reply((r) => (r.path === '/orders' ? { status: 503 } : { status: 204 }));
    const engine = await createEngine({ storage: await storage(), clock, secretKey: generateSecretKey(), plugins: [webhook()], outboundAllow: ['127.0.0.1'], runtime: { pollIntervalMs: 60_000, leaseTtlMs: 1_800_000 }, webhookDelivery: false });
    await engine.start();
    engines.push(engine);
    const origin = new URL(receiver.url).origin;
    const source = await engine.connectors.create(WS, { type: 'webhook', direction: 'source', config: { signing_secret: SECRET } });
    const destination = await engine.connectors.create(WS, { type: 'webhook', direction: 'destination', config: { url: `${origin}/orders`, batch_size: 1 } });
    await engine.pipelines.create(WS, { name: 'orders', source_connector_id: source.id, destination_connector_id: destination.id, activate: true, flush_interval_ms: 1000 });
    const body = JSON.stringify({ events: [{ type: 'order.created', payload: { n: 1 } }, { type: 'order.created', payload: { n: 2 } }] });
    await engine.ingest.receive(source.id, body, webhookHeaders({ id: 'msg_1', timestamp: Math.floor(clock.now() / 1000), body }, [SECRET]));
    // Held: the old path is tried, and tried again.
    await eventually(clock, () => receiver.received.filter((r) => r.path === '/orders').length >= 2, 1000);
    await engine.connectors.update(WS, destination.id, { config: { url: `${origin}/orders-v2` } });
    const atPatch = receiver.received.length;
    await eventually(clock, () => receiver.received.filter((r) => r.path === '/orders-v2' && r.status === 204).length === 2, 1000, 60);
    expect(receiver.received.slice(atPatch).map((r) => r.path)).toEqual(['/orders-v2', '/orders-v2']);
    expect(receiver.received.slice(atPatch).map((r) => (JSON.parse(r.body) as { payload: { n: number } }).payload.n)).toEqual([1, 2]);
  });
});

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, generateSecretKey, postgresStorage, sqliteStorage, type Engine, type StorageConfig } from '@ferry/core';
import { engineContext } from '@ferry/core/internal';
import { MemoryHub, memoryConnector, startWebhookReceiver, type WebhookReceiver } from '@ferry/testing';
import { getSharedTestPostgres } from '@ferry/test-servers';
import { startChildEngine, untilReal } from '../support/child-engine.js';

const child = join(import.meta.dirname, 'fixtures', 'delivery-engine.ts');
const WS = 'default';

/** Each database as the child is told it, and as the test opens it. */
const databases: Record<string, () => Promise<{ arg: string; config: StorageConfig }>> = {
  sqlite: async () => {
    const filename = join(mkdtempSync(join(tmpdir(), 'ferry-crash-')), 'ferry.db');
    return { arg: `sqlite:${filename}`, config: sqliteStorage({ filename }) };
  },
  postgres: async () => {
    const connectionString = await (await getSharedTestPostgres()).createDatabase('webhook_crash');
    return { arg: connectionString, config: postgresStorage({ connectionString }) };
  },
};

describe.each(Object.keys(databases))('webhook delivery survives SIGKILL (%s)', (name) => {
  const cleanup: Array<() => unknown> = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0)) await fn();
  });

  it('loses no delivery that was pending or in flight when the engine was killed', async () => {
    const { arg, config: storage } = await databases[name]!();
    const secretKey = generateSecretKey();
    const receiver: WebhookReceiver = await startWebhookReceiver();
    cleanup.push(() => receiver.close());
    // Slow answers keep deliveries in flight; every fourth first attempt fails so some are retrying.
    receiver.reply((r) => (receiver.of(r.id).length === 1 && r.id.charCodeAt(r.id.length - 1) % 4 === 0 ? { status: 500 } : { status: 204, delayMs: 15 }));
    // The API side: an engine that sends nothing records the subscription and the events.
    const api: Engine = await createEngine({ storage, secretKey, runtime: false, webhookDelivery: false, outboundAllow: ['127.0.0.1'], plugins: [memoryConnector(new MemoryHub())] });
    await api.start();
    cleanup.push(() => api.stop());
    const sub = await api.webhooks.create(WS, { url: receiver.url, events: ['pipeline.created', 'pipeline.activated'] });
    const source = await api.connectors.create(WS, { type: 'memory', direction: 'source', config: { name: 'in' } });
    const destination = await api.connectors.create(WS, { type: 'memory', direction: 'destination', config: { name: 'out' } });
    const emit = async (n: number) => {
      for (let i = 0; i < n; i++) await api.pipelines.create(WS, { name: `p${i}-${Math.random()}`, source_connector_id: source.id, destination_connector_id: destination.id });
    };
    await emit(150);

    const first = await startChildEngine(child, [arg, secretKey]);
    cleanup.push(() => first.kill('SIGKILL'));
    await untilReal(() => receiver.acknowledged.size >= 40, 'the first deliveries');
    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));
    const acknowledgedAtKill = receiver.acknowledged.size;
    const receivedAtKill = receiver.received.length;
    // Events recorded while no engine runs stay in the outbox.
    await emit(50);

    const second = await startChildEngine(child, [arg, secretKey]);
    cleanup.push(() => second.kill('SIGKILL'));
    const all = async () => (await engineContext(api).storage.repos.outbox.listForWorkspace(WS)).filter((e) => e.type === 'pipeline.created').map((e) => e.id);
    const expected = await all();
    expect(expected).toHaveLength(200);
    await untilReal(() => expected.every((id) => receiver.acknowledged.has(id)), 'every delivery to arrive');
    await untilReal(async () => Number((await engineContext(api).storage.knex('deliveries').whereNot({ status: 'delivered' }).count({ n: '*' }))[0]!.n) === 0, 'every outcome to be recorded');
    expect(Number((await engineContext(api).storage.knex('deliveries').count({ n: '*' }))[0]!.n)).toBe(200);
    const duplicates = expected.reduce((n, id) => n + Math.max(0, receiver.of(id).filter((r) => r.status === 204).length - 1), 0);
    // The figures the issue asks for: every delivery arrived at least once; duplicates counted.
    console.log(JSON.stringify({ dialect: name, events: 200, acknowledged_before_kill: acknowledgedAtKill, received_before_kill: receivedAtKill, requests: receiver.received.length, duplicates_after_kill: duplicates }));
    expect(receiver.acknowledged.size).toBe(200);
    // Each request, from either engine, verifies with an independent implementation.
    for (const request of receiver.received) new Webhook(sub.secret).verify(request.body, request.headers as Record<string, string>);
    // Only what the killed engine had in hand may arrive twice: sent, or answered but not yet recorded (maxInFlight 16).
    expect(duplicates).toBeLessThanOrEqual(16);
    expect(sub.id).toMatch(/^whk_/);
  }, 120_000);
});

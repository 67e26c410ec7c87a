import { createHmac } from 'node:crypto';
import { createEngine, generateWebhookSecret, sqliteStorage, type Engine } from '@ferry/core';
import { connectorContext, engineContext, openConnector, REDACTED } from '@ferry/core/internal';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhook } from './index.js';
import { startReceiver, type TestReceiver } from './test-receiver.js';

let receiver: TestReceiver;
let engine: Engine;
beforeAll(async () => {
  receiver = await startReceiver();
  // The engine's allow list is the plugin's: no list of its own.
  engine = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }), plugins: [webhook()], outboundAllow: ['127.0.0.1'] });
  await engine.start();
});
afterAll(async () => {
  await engine.stop();
  await receiver.close();
});

describe('webhook registered in an engine', () => {
  it('is accepted by the core, with `headers` sealed and redacted as one secret object', async () => {
    const secret = generateWebhookSecret();
    const created = await engine.connectors.create('default', {
      type: 'webhook',
      direction: 'destination',
      config: { url: receiver.url, signing_secret: secret, headers: { Authorization: 'Bearer s3cret-token' } },
    });
    expect(created.config).toMatchObject({ url: receiver.url, signing_secret: REDACTED, headers: REDACTED });
    expect(JSON.stringify(await engine.connectors.get('default', created.id))).not.toContain('s3cret-token');

    // A config read back and sent again keeps the stored secrets.
    await engine.connectors.update('default', created.id, { config: { headers: REDACTED, batch_size: 1 } });
    receiver.reply(() => ({ status: 200 }));
    const before = receiver.requests.length;
    expect((await engine.connectors.check('default', created.id)).health).toBe('healthy');
    expect(receiver.requests[before]!.method).toBe('HEAD');

    // The runtime's path: open with secrets in clear, build the destination in the engine's context.
    const ctx = engineContext(engine);
    const opened = await openConnector(ctx, 'default', created.id);
    expect(opened.config).toMatchObject({ signing_secret: secret, headers: { Authorization: 'Bearer s3cret-token' }, batch_size: 1, concurrency: 4, timeout_ms: 15_000 });
    const context = { ...connectorContext(ctx, opened, new AbortController().signal), pipelineId: 'pip_1', inbox: { read: async () => ({ records: [], checkpoint: null }) } };
    const destination = await opened.plugin.definition.destination!(context);
    const event = { id: 'evt_1', type: 'order.created', occurredAt: '2025-01-01T00:00:00.000Z', payload: { total: 3 } };
    expect(await destination.write([event], new AbortController().signal)).toEqual([{ ok: true }]);
    const post = receiver.requests.at(-1)!;
    expect([post.method, post.headers.authorization, post.headers['webhook-id']]).toEqual(['POST', 'Bearer s3cret-token', 'evt_1']);
    const mac = createHmac('sha256', Buffer.from(secret.slice(6), 'base64')).update(`evt_1.${post.headers['webhook-timestamp']}.${post.body}`).digest('base64');
    expect(post.headers['webhook-signature']).toBe(`v1,${mac}`);
  });

  it('reports config problems with /config pointers', async () => {
    const error = await engine.connectors.create('default', { type: 'webhook', direction: 'destination', config: { batch_size: 5 } }).then(() => null, (e: unknown) => e);
    expect((error as { errors?: { pointer: string; code: string }[] }).errors?.map((e) => [e.pointer, e.code])).toEqual([['/config/url', 'required']]);
  });

  it('refuses a url the outbound policy refuses with 422 url_not_allowed, on create and PATCH', async () => {
    const strict = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }), plugins: [webhook()] });
    await strict.start();
    try {
      const refused = (promise: Promise<unknown>) => promise.then(() => null, (e: unknown) => e as { code?: string; status?: number; errors?: { pointer: string; code: string }[] });
      const created = await refused(strict.connectors.create('default', { type: 'webhook', direction: 'destination', config: { url: receiver.url } }));
      expect([created?.code, created?.status, created?.errors?.map((e) => [e.pointer, e.code])]).toEqual(['url_not_allowed', 422, [['/config/url', 'url_not_allowed']]]);
      const ok = await strict.connectors.create('default', { type: 'webhook', direction: 'destination', config: { url: 'https://hooks.example.com/in' } });
      const patched = await refused(strict.connectors.update('default', ok.id, { config: { url: 'https://0x7f.1/in' } }));
      expect([patched?.code, patched?.status, patched?.errors?.[0]?.pointer]).toEqual(['url_not_allowed', 422, '/config/url']);
    } finally {
      await strict.stop();
    }
  });

  it('allows bidirectional', async () => {
    const created = await engine.connectors.create('default', { type: 'webhook', direction: 'bidirectional', config: { url: receiver.url, signing_secret: generateWebhookSecret() } });
    expect(created.direction).toBe('bidirectional');
  });
});

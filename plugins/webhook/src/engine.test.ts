import { createHmac } from 'node:crypto';
import { createEngine, generateWebhookSecret, REDACTED, sqlite, type Engine } from '@ferry/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhook } from './index.js';
import { startReceiver, type TestReceiver } from './test-receiver.js';

let receiver: TestReceiver;
let engine: Engine;
beforeAll(async () => {
  receiver = await startReceiver();
  engine = await createEngine({ storage: sqlite({ filename: ':memory:' }), plugins: [webhook({ allowHttp: ['127.0.0.1'] })] });
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
    const opened = await engine.connectors.open('default', created.id);
    expect(opened.config).toMatchObject({ signing_secret: secret, headers: { Authorization: 'Bearer s3cret-token' }, batch_size: 1, timeout_ms: 15_000 });
    const context = { ...engine.connectors.pluginContext(opened, new AbortController().signal), pipelineId: 'pip_1', inbox: { read: async () => ({ records: [], checkpoint: null }) } };
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

  it('allows bidirectional', async () => {
    const created = await engine.connectors.create('default', { type: 'webhook', direction: 'bidirectional', config: { url: receiver.url, signing_secret: generateWebhookSecret() } });
    expect(created.direction).toBe('bidirectional');
  });
});

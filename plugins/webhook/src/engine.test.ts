import { createHmac } from 'node:crypto';
import { createEngine, generateSecretKey, generateWebhookSecret, silentLogger, sqliteStorage, webhookHeaders, type Engine, type Logger } from '@ferry/core';
import { connectorContext, engineContext, openConnector, REDACTED } from '@ferry/core/internal';
import { eventually, VirtualClock } from '@ferry/testing';
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
    expect(opened.config).toMatchObject({ signing_secret: secret, headers: { Authorization: 'Bearer s3cret-token' }, batch_size: 1, concurrency: 4, timeout_ms: 15_000, retries: 3 });
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

describe('webhook destination in a pipeline', () => {
  /**
   * Runs a pipeline from a webhook source to a webhook destination whose receiver answers 500 to
   * the first request of the second event only. Returns what the receiver answered, in order,
   * and the holds the engine logged. On a virtual clock: nothing waits in real time.
   */
  async function oneBadAnswer(retries: number): Promise<{ answers: string[]; holds: string[] }> {
    const clock = new VirtualClock(undefined, { settleRealMs: 1 });
    const holds: string[] = [];
    const logger: Logger = {
      ...silentLogger,
      warn: (obj: object | string, msg?: string) => {
        if (typeof obj === 'object' && String(msg).startsWith('pipeline flow held')) holds.push((obj as { code: string }).code);
      },
      child: () => logger,
    };
    const flaky = await startReceiver();
    const answers: string[] = [];
    flaky.reply((r) => {
      const n = (JSON.parse(r.body) as { payload: { n: number } }).payload.n;
      const status = n === 2 && !answers.includes('2:500') ? 500 : 204;
      answers.push(`${n}:${status}`);
      return { status };
    });
    const signing = generateWebhookSecret();
    const local = await createEngine({
      storage: sqliteStorage({ filename: ':memory:' }),
      clock,
      logger,
      secretKey: generateSecretKey(),
      plugins: [webhook()],
      outboundAllow: ['127.0.0.1'],
      runtime: { pollIntervalMs: 60_000, leaseTtlMs: 1_800_000 },
      webhookDelivery: false,
    });
    await local.start();
    try {
      const source = await local.connectors.create('default', { type: 'webhook', direction: 'source', config: { signing_secret: signing } });
      const destination = await local.connectors.create('default', { type: 'webhook', direction: 'destination', config: { url: flaky.url, batch_size: 1, retries } });
      await local.pipelines.create('default', { name: 'flaky', source_connector_id: source.id, destination_connector_id: destination.id, activate: true, flush_interval_ms: 1000 });
      const ingest = async (n: number) => {
        const body = JSON.stringify({ type: 'order.created', payload: { n } });
        await local.ingest.receive(source.id, body, webhookHeaders({ id: `msg_${n}`, timestamp: Math.floor(clock.now() / 1000), body }, [signing]));
      };
      // The receiver accepts a first event, so the destination knows it works; then the second
      // event's first request gets a 500.
      await ingest(1);
      await eventually(clock, () => answers.includes('1:204'), 100);
      await ingest(2);
      await eventually(clock, () => answers.includes('2:204'), 100);
      return { answers, holds };
    } finally {
      await local.stop();
      await flaky.close();
    }
  }

  it('delivers through a transient 500 without holding the flow', async () => {
    expect(await oneBadAnswer(3)).toEqual({ answers: ['1:204', '2:500', '2:204'], holds: [] });
  });

  it('holds the flow for it with retries 0, as before retries existed', async () => {
    expect(await oneBadAnswer(0)).toEqual({ answers: ['1:204', '2:500', '2:204'], holds: ['receiver_failed'] });
  });
});

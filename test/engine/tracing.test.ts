/**
 * OpenTelemetry spans, read back through the SDK's in-memory exporter the way a host that
 * registers an SDK would see them: a pipeline batch (read, transform, write, commit), an API
 * request (named by its route, continuing the caller's trace) and a webhook delivery attempt.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createEngine, generateSecretKey, sqliteStorage, type Engine } from '@ferry/core';
import { createHttpApi } from '@ferry/http';
import { MemoryHub, memoryConnector, startWebhookReceiver, VirtualClock, type WebhookReceiver } from '@ferry/testing';

const WS = 'default';
const exporter = new InMemorySpanExporter();
const contextManager = new AsyncLocalStorageContextManager();

beforeAll(() => {
  contextManager.enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
});

afterAll(() => {
  trace.disable();
  context.disable();
  propagation.disable();
});

/** Moves `step` until `check` holds, at most 300 times: a span never made fails the case, not the run. */
async function until(check: () => boolean, step: () => Promise<unknown>): Promise<void> {
  for (let i = 0; i < 300 && !check(); i++) await step();
  expect(check()).toBe(true);
}

const realPause = () => new Promise((resolve) => setTimeout(resolve, 5)); // HTTP runs in real time
const spans = (name: string): ReadableSpan[] => exporter.getFinishedSpans().filter((s) => s.name === name);
const parentOf = (span: ReadableSpan): string | undefined => span.parentSpanContext?.spanId;

describe('tracing', () => {
  let engine: Engine;
  let clock: VirtualClock;
  let hub: MemoryHub;

  beforeEach(async () => {
    exporter.reset();
    clock = new VirtualClock(undefined, { settleRealMs: 1 });
    hub = new MemoryHub({ clock });
    engine = await createEngine({
      storage: sqliteStorage({ filename: join(mkdtempSync(join(tmpdir(), 'ferry-tracing-')), 'ferry.db') }),
      clock,
      secretKey: generateSecretKey(),
      plugins: [memoryConnector(hub)],
      outboundAllow: ['127.0.0.1'],
    });
    await engine.start();
  });

  afterEach(async () => {
    await engine.stop();
  });

  async function pipeline(destinationToken?: string) {
    const source = await engine.connectors.create(WS, { type: 'memory', direction: 'source', config: { name: 'in' } });
    const destination = await engine.connectors.create(WS, { type: 'memory', direction: 'destination', config: { name: 'out', ...(destinationToken ? { token: destinationToken } : {}) } });
    return engine.pipelines.create(WS, {
      name: 'traced',
      source_connector_id: source.id,
      destination_connector_id: destination.id,
      transforms: [{ type: 'filter', path: 'keep', op: 'eq', value: true }],
      batch_size: 100,
      flush_interval_ms: 10,
      activate: true,
    });
  }

  it('traces a batch: read, transform, write and commit under one span, with what became of its events', async () => {
    hub.stream('in').push({ type: 'a', payload: { keep: true } }, { type: 'a', payload: { keep: false } }, { type: 'a', payload: { keep: true } });
    const created = await pipeline();
    await until(() => spans('ferry.pipeline.batch').length > 0, () => clock.advance(10));

    const [batch] = spans('ferry.pipeline.batch');
    expect(batch!.attributes).toMatchObject({
      'ferry.workspace.id': WS,
      'ferry.pipeline.id': created.id,
      'ferry.batch.records': 3,
      'ferry.batch.delivered': 2,
      'ferry.batch.filtered': 1,
      'ferry.batch.dead_lettered': 0,
    });
    expect(batch!.status.code).toBe(SpanStatusCode.UNSET);
    for (const name of ['ferry.pipeline.read', 'ferry.pipeline.transform', 'ferry.pipeline.write', 'ferry.pipeline.commit']) {
      const [child] = spans(name).filter((s) => s.spanContext().traceId === batch!.spanContext().traceId);
      expect({ name, parent: child && parentOf(child) }).toEqual({ name, parent: batch!.spanContext().spanId });
    }
    expect(spans('ferry.pipeline.transform')[0]!.attributes).toMatchObject({ 'ferry.batch.records': 3, 'ferry.transform.steps': 1 });
    expect(spans('ferry.pipeline.write')[0]!.attributes).toMatchObject({ 'ferry.batch.records': 2, 'ferry.write.round': 1 });
    // An idle pipeline polling its empty source leaves no spans.
    const before = exporter.getFinishedSpans().length;
    await clock.advance(1_000);
    expect(exporter.getFinishedSpans().length).toBe(before);
  });

  it('marks a write the destination failed with its code, and no secret of the connector', async () => {
    const token = 'tok-s3cret-value';
    hub.sink('out').down(60_000);
    hub.stream('in').push({ type: 'a', payload: { keep: true } });
    await pipeline(token);
    await until(() => spans('ferry.pipeline.write').some((s) => s.status.code === SpanStatusCode.ERROR), () => clock.advance(100));

    const failed = spans('ferry.pipeline.write').find((s) => s.status.code === SpanStatusCode.ERROR)!;
    expect(failed.attributes['error.type']).toBe('connection_refused');
    hub.sink('out').up();
    await until(() => spans('ferry.pipeline.batch').some((s) => s.attributes['ferry.batch.delivered'] === 1), () => clock.advance(1_000));
    expect(JSON.stringify(exporter.getFinishedSpans().map((s) => [s.attributes, s.status, s.events]))).not.toContain(token);
  });

  it('traces an API request by its route, continuing the caller\u2019s trace', async () => {
    const api = createHttpApi(engine);
    const { key } = await engine.apiKeys.create({ workspace: WS, scopes: ['read'] });
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const response = await api.dispatch({
      method: 'GET',
      url: '/v2/pipelines/pip_01M83ZNW1GTB62QTQDSPZ8DQRK',
      headers: { authorization: `Bearer ${key}`, traceparent: `00-${traceId}-b7ad6b7169203331-01` },
      remoteAddress: '127.0.0.1',
      body: undefined,
    });
    expect(response.status).toBe(404);
    await api.dispatch({ method: 'GET', url: '/v2/no-such-route', headers: {}, remoteAddress: '127.0.0.1', body: undefined });

    const [found, unknown] = exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.SERVER);
    expect(found!.name).toBe('GET /v2/pipelines/{id}');
    expect(found!.spanContext().traceId).toBe(traceId);
    expect(parentOf(found!)).toBe('b7ad6b7169203331');
    expect(found!.attributes).toMatchObject({ 'http.request.method': 'GET', 'http.route': '/v2/pipelines/{id}', 'http.response.status_code': 404, 'ferry.workspace.id': WS });
    // A 4xx is the client's: the span is not an error.
    expect(found!.status.code).toBe(SpanStatusCode.UNSET);
    expect(unknown!.name).toBe('GET');
    expect(unknown!.attributes['http.route']).toBeUndefined();
  });

  describe('webhook deliveries', () => {
    let receiver: WebhookReceiver;
    beforeEach(async () => {
      receiver = await startWebhookReceiver({ clock });
    });
    afterEach(async () => {
      await receiver.close();
    });

    it('traces each attempt as a client span: a 503 as an error, then the delivery', async () => {
      const hook = await engine.webhooks.create(WS, { url: `${receiver.url}?token=receiver-secret`, events: ['pipeline.created'] });
      receiver.reply((request) => (receiver.of(request.id).length === 1 ? { status: 503 } : { status: 204 }));
      await pipeline();
      await until(() => receiver.acknowledged.size > 0, async () => {
        await clock.advance(1_000);
        await realPause();
      });
      await until(() => spans('ferry.webhook.delivery').length >= 2, realPause);

      const [first, second] = spans('ferry.webhook.delivery');
      expect(first!.kind).toBe(SpanKind.CLIENT);
      expect(first!.attributes).toMatchObject({
        'ferry.webhook.subscription.id': hook.id,
        'ferry.webhook.attempt': 1,
        'ferry.event.type': 'pipeline.created',
        'http.request.method': 'POST',
        'server.address': '127.0.0.1',
        'http.response.status_code': 503,
        'ferry.webhook.outcome': 'retrying',
        'error.type': '503',
      });
      expect(first!.status.code).toBe(SpanStatusCode.ERROR);
      expect(second!.attributes).toMatchObject({ 'ferry.webhook.attempt': 2, 'http.response.status_code': 204, 'ferry.webhook.outcome': 'delivered' });
      expect(second!.status.code).toBe(SpanStatusCode.UNSET);
      expect(JSON.stringify(exporter.getFinishedSpans().map((s) => s.attributes))).not.toContain('receiver-secret');
    });
  });
});

/**
 * The webhook source endpoint (docs/api.md, Ingest: webhook sources): `POST /v2/ingest/{connector_id}`,
 * authenticated by the connector's signing secret (Standard Webhooks headers) instead of an API
 * key; 202 once the events are stored.
 */
import { expect, it } from 'vitest';
import { describeMatrix, signedHeaders } from './harness.js';
import { createConnector, expectFieldError, expectProblem, ghostId } from './fixtures.js';
import { engineContext } from '@ferry/core/internal';

const SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
const OTHER_SECRET = `whsec_${Buffer.alloc(32, 8).toString('base64')}`;

describeMatrix('ingest', (ctx) => {
  const now = () => Math.floor(ctx.clock.now() / 1000);

  async function source(direction = 'source') {
    return createConnector(ctx.api, { type: 'webhook', direction, config: { signing_secret: SECRET } });
  }

  async function send(connectorId: string, body: unknown, opts: { secret?: string; timestamp?: number; id?: string; headers?: Record<string, string>; raw?: string } = {}) {
    const raw = opts.raw ?? JSON.stringify(body);
    return ctx.api.request('POST', `/v2/ingest/${connectorId}`, {
      key: null,
      raw,
      headers: { 'content-type': 'application/json', ...signedHeaders(opts.secret ?? SECRET, raw, opts.timestamp ?? now(), opts.id), ...opts.headers },
    });
  }

  it('a signed event is 202 and stored durably, without an API key', async () => {
    const c = await source();
    const res = await send(c.id, { type: 'order.created', occurred_at: '2026-11-22T09:00:00.000Z', payload: { id: 1 } });
    expect(res.status, res.text).toBe(202);
    expect(res.body).toMatchObject({ count: 1 });
    const stored = await engineContext(ctx.api.engine).storage.repos.inbox.readAfter(c.id, 0, 10);
    expect(stored.map((e) => ({ type: e.type, payload: e.payload }))).toEqual([{ type: 'order.created', payload: { id: 1 } }]);
  });

  it('a batch { events: [...] } is 202 with its count; a bidirectional connector receives too', async () => {
    const c = await source('bidirectional');
    const res = await send(c.id, { events: [{ type: 'a.b', payload: {} }, { type: 'a.c', payload: { x: 1 } }] });
    expect(res.status, res.text).toBe(202);
    expect(res.body).toMatchObject({ count: 2 });
  });

  it('a retried message (same webhook-id) is stored once', async () => {
    const c = await source();
    const body = { type: 'order.created', payload: { id: 7 } };
    const first = await send(c.id, body, { id: 'msg_retry_1' });
    const second = await send(c.id, body, { id: 'msg_retry_1' });
    expect(second.status).toBe(202);
    expect(second.body.ids ?? null).toEqual(first.body.ids ?? null);
    expect(await engineContext(ctx.api.engine).storage.repos.inbox.readAfter(c.id, 0, 10)).toHaveLength(1);
  });

  it('a batch is stored in request order, with the ids the answer gives', async () => {
    const c = await source();
    const events = Array.from({ length: 300 }, (_, i) => ({ type: `t.${i % 7}`, payload: { i, note: i % 2 === 0 ? 'é "quoted"' : null } }));
    const res = await send(c.id, { events });
    expect(res.status, res.text).toBe(202);
    const stored = await engineContext(ctx.api.engine).storage.repos.inbox.readAfter(c.id, 0, 1000);
    expect(stored.map((e) => e.id)).toEqual(res.body.ids);
    expect(stored.map((e) => ({ type: e.type, payload: e.payload }))).toEqual(events);
  });

  it('a retried batch that grew keeps the ids of what arrived first and stores only the rest', async () => {
    const c = await source();
    const first = await send(c.id, { events: [{ type: 'a', payload: {} }, { type: 'b', payload: {} }] }, { id: 'msg_grown' });
    const second = await send(c.id, { events: [{ type: 'a', payload: {} }, { type: 'b', payload: {} }, { type: 'c', payload: {} }] }, { id: 'msg_grown' });
    expect(second.status, second.text).toBe(202);
    expect(second.body.ids.slice(0, 2)).toEqual(first.body.ids);
    const stored = await engineContext(ctx.api.engine).storage.repos.inbox.readAfter(c.id, 0, 10);
    expect(stored.map((e) => [e.id, e.type])).toEqual([...first.body.ids.map((id: string, i: number) => [id, 'ab'[i]]), [second.body.ids[2], 'c']]);
  });

  it('unsigned, mis-signed, tampered or stale requests are 401 problem+json, and nothing is stored', async () => {
    const c = await source();
    const body = JSON.stringify({ type: 'x.y', payload: {} });
    const unsigned = await ctx.api.request('POST', `/v2/ingest/${c.id}`, { key: null, raw: body, headers: { 'content-type': 'application/json' } });
    expectProblem(unsigned, 401, 'unauthenticated');
    expectProblem(await send(c.id, null, { raw: body, secret: OTHER_SECRET }), 401, 'unauthenticated');
    const headers = signedHeaders(SECRET, body, now());
    const tampered = await ctx.api.request('POST', `/v2/ingest/${c.id}`, { key: null, raw: body.replace('x.y', 'x.z'), headers: { 'content-type': 'application/json', ...headers } });
    expectProblem(tampered, 401, 'unauthenticated');
    expectProblem(await send(c.id, null, { raw: body, timestamp: now() - 600 }), 401, 'unauthenticated');
    expectProblem(await send(c.id, null, { raw: body, timestamp: now() + 600 }), 401, 'unauthenticated');
    // An API key is no substitute for the signature.
    const keyed = await ctx.api.request('POST', `/v2/ingest/${c.id}`, { raw: body, headers: { 'content-type': 'application/json' } });
    expectProblem(keyed, 401, 'unauthenticated');
    expect(await engineContext(ctx.api.engine).storage.repos.inbox.readAfter(c.id, 0, 10)).toHaveLength(0);
  });

  it('an unknown connector, a destination-only one or another type is 404', async () => {
    expectProblem(await send(ghostId('con'), { type: 'x.y', payload: {} }), 404, 'not_found');
    const dest = await createConnector(ctx.api, { type: 'webhook', direction: 'destination', config: { signing_secret: SECRET, url: 'https://x.example.com' } });
    expectProblem(await send(dest.id, { type: 'x.y', payload: {} }), 404, 'not_found');
    const pg = await createConnector(ctx.api);
    expectProblem(await send(pg.id, { type: 'x.y', payload: {} }), 404, 'not_found');
  });

  it('signed but malformed or invalid bodies are 400; wrong content type 415', async () => {
    const c = await source();
    expectProblem(await send(c.id, null, { raw: '{"type":' }), 400, 'malformed_json');
    const invalid = await send(c.id, { payload: {}, extra: 1 });
    expectProblem(invalid, 400, 'validation_failed');
    expectFieldError(invalid, '/type', 'required');
    const tooMany = await send(c.id, { events: Array.from({ length: 1001 }, () => ({ type: 'a.b', payload: {} })) });
    expectProblem(tooMany, 400, 'validation_failed');
    expectProblem(await send(c.id, { events: [] }), 400, 'validation_failed');
    const wrongType = await send(c.id, { type: 'x.y', payload: {} }, { headers: { 'content-type': 'text/plain' } });
    expectProblem(wrongType, 415, 'unsupported_media_type');
  });
});

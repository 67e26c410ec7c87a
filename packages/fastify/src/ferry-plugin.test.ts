import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, sqliteStorage, type Engine } from '@ferry/core';
import { ferryPlugin } from './ferry-plugin.js';

let engine: Engine;
let key: string;

beforeAll(async () => {
  engine = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }) });
  await engine.start();
  key = (await engine.apiKeys.create({ scopes: ['write'] })).key;
});
afterAll(() => engine.stop());

async function call(url: string, options: { method?: string; body?: string | Buffer; headers?: Record<string, string>; auth?: boolean } = {}) {
  const headers: Record<string, string> = { ...(options.auth === false ? {} : { authorization: `Bearer ${key}` }), ...options.headers };
  const res = await request(url, { method: (options.method ?? 'GET') as 'GET', headers, ...(options.body !== undefined ? { body: options.body } : {}) });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers as Record<string, string | undefined>, text };
}

describe.each([
  ['at the root', ''],
  ['under /api', '/api'],
])('ferryPlugin registered %s', (_name, prefix) => {
  let app: FastifyInstance;
  let origin: string;
  let base: string;
  beforeAll(async () => {
    app = Fastify({ logger: false });
    app.get('/hello', async () => ({ hello: 'world' }));
    app.post('/echo', async (req) => ({ got: req.body }));
    await app.register(ferryPlugin, { engine, ...(prefix ? { prefix } : {}) });
    await app.listen({ port: 0, host: '127.0.0.1' });
    origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    base = origin + prefix;
  });
  afterAll(() => app.close());

  it('answers 401 problem+json with WWW-Authenticate without a key', async () => {
    const res = await call(`${base}/v2/pipelines`, { auth: false });
    expect(res.status).toBe(401);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="ferry"/);
    expect(JSON.parse(res.text)).toMatchObject({ status: 401, code: 'unauthenticated' });
  });

  it('serves the OpenAPI document and lists pipelines', async () => {
    const doc = await call(`${base}/v2/openapi.json`, { auth: false });
    expect(doc.status).toBe(200);
    expect(JSON.parse(doc.text)).toMatchObject({ openapi: expect.stringMatching(/^3\.1/) as unknown });
    const list = await call(`${base}/v2/pipelines?limit=5`);
    expect(list.status).toBe(200);
    // Written as dispatch wrote it: no charset appended by Fastify.
    expect(list.headers['content-type']).toBe('application/json');
    expect(JSON.parse(list.text)).toMatchObject({ data: [] });
  });

  it('creates a webhook: 201 with Location', async () => {
    const res = await call(`${base}/v2/webhooks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body: JSON.stringify({ url: 'https://example.com/h', events: ['pipeline.failed'] }),
    });
    expect(res.status).toBe(201);
    const created = JSON.parse(res.text) as { id: string };
    expect(res.headers.location).toContain(created.id);
  });

  it('answers malformed JSON with 400', async () => {
    const res = await call(`${base}/v2/webhooks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"url":' });
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toBe('application/problem+json');
  });

  it('lets the API answer every media type: text/plain, none, and one Fastify cannot parse', async () => {
    for (const headers of [{ 'content-type': 'text/plain' }, {}, { 'content-type': 'nonsense' }] as Array<Record<string, string>>) {
      const res = await call(`${base}/v2/webhooks`, { method: 'POST', headers, body: 'hello' });
      expect(res.status).toBe(415);
      expect(JSON.parse(res.text)).toMatchObject({ code: 'unsupported_media_type' });
    }
  });

  it('lets the API answer an empty POST, HEAD and OPTIONS', async () => {
    const empty = await call(`${base}/v2/webhooks`, { method: 'POST' });
    expect(empty.status).toBe(400);
    expect(JSON.parse(empty.text)).toMatchObject({ code: 'validation_failed' });
    for (const method of ['HEAD', 'OPTIONS']) {
      const res = await call(`${base}/v2/pipelines`, { method });
      expect(res.headers['x-request-id']).toBeDefined();
    }
  });

  it('answers a 2 MiB body with 413 (or closes the connection)', async () => {
    const body = JSON.stringify({ url: 'https://example.com/h', events: ['pipeline.failed'], pad: 'x'.repeat(2 * 1024 * 1024) });
    try {
      const res = await call(`${base}/v2/webhooks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      expect(res.status).toBe(413);
      expect(res.headers['content-type']).toBe('application/problem+json');
    } catch (error) {
      expect(String((error as Error & { code?: string }).code)).toMatch(/ECONNRESET|EPIPE|UND_ERR_SOCKET/);
    }
  });

  it('leaves the host routes and their JSON parsing alone', async () => {
    const hello = await call(`${origin}/hello`, { auth: false });
    expect(JSON.parse(hello.text)).toEqual({ hello: 'world' });
    const echo = await call(`${origin}/echo`, { method: 'POST', auth: false, headers: { 'content-type': 'application/json' }, body: '{"a":1}' });
    expect(JSON.parse(echo.text)).toEqual({ got: { a: 1 } });
  });
});

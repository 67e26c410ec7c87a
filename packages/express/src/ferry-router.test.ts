import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, sqliteStorage, type Engine } from '@ferry/core';
import { ferryRouter } from './ferry-router.js';

let engine: Engine;
let key: string;

beforeAll(async () => {
  engine = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }) });
  await engine.start();
  key = (await engine.apiKeys.create({ scopes: ['write'] })).key;
});
afterAll(() => engine.stop());

async function listen(app: express.Express): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(0, '127.0.0.1', (error?: Error) => (error ? reject(error) : resolve(s)));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function call(url: string, options: { method?: string; body?: string | Buffer; headers?: Record<string, string>; auth?: boolean } = {}) {
  const headers: Record<string, string> = { ...(options.auth === false ? {} : { authorization: `Bearer ${key}` }), ...options.headers };
  const res = await request(url, { method: (options.method ?? 'GET') as 'GET', headers, ...(options.body !== undefined ? { body: options.body } : {}) });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers as Record<string, string | undefined>, text };
}

const hosts: Array<[string, string, (app: express.Express) => void]> = [
  ['at the root', '', (app) => app.use(ferryRouter(engine))],
  ['under /api', '/api', (app) => app.use('/api', ferryRouter(engine))],
  ['after a host express.json()', '/api', (app) => app.use(express.json(), express.Router().use('/api', ferryRouter(engine)))],
];

describe.each(hosts)('ferryRouter mounted %s', (name, prefix, mount) => {
  let base: string;
  let close: () => Promise<void>;
  beforeAll(async () => {
    const app = express();
    app.get('/hello', (_req, res) => void res.json({ hello: 'world' }));
    mount(app);
    app.post('/echo', express.json(), (req, res) => void res.json({ got: req.body as unknown }));
    ({ url: base, close } = await listen(app));
    base += prefix;
  });
  afterAll(() => close());

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
    expect(list.headers['content-type']).toBe('application/json');
    expect(list.headers.etag).toBeUndefined();
    expect(JSON.parse(list.text)).toMatchObject({ data: [] });
  });

  it('creates a webhook: 201 with Location', async () => {
    const res = await call(`${base}/v2/webhooks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'https://example.com/h', events: ['pipeline.failed'] }),
    });
    expect(res.status).toBe(201);
    const created = JSON.parse(res.text) as { id: string };
    expect(res.headers.location).toContain(created.id);
  });

  it('answers malformed JSON with 400', async () => {
    const res = await call(`${base}/v2/webhooks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"url":' });
    expect(res.status).toBe(400);
    // After a host express.json(), the host's parser refuses the bytes before the API sees them.
    if (!name.includes('express.json')) expect(res.headers['content-type']).toBe('application/problem+json');
  });

  it('answers text/plain with 415', async () => {
    const res = await call(`${base}/v2/webhooks`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hello' });
    expect(res.status).toBe(415);
    expect(JSON.parse(res.text)).toMatchObject({ code: 'unsupported_media_type' });
  });

  it('answers a 2 MiB body with 413 (or closes the connection)', async () => {
    const body = JSON.stringify({ url: 'https://example.com/h', events: ['pipeline.failed'], pad: 'x'.repeat(2 * 1024 * 1024) });
    try {
      const res = await call(`${base}/v2/webhooks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      expect(res.status).toBe(413);
    } catch (error) {
      expect(String((error as Error & { code?: string }).code)).toMatch(/ECONNRESET|EPIPE|UND_ERR_SOCKET/);
    }
  });

  it('leaves the host routes alone', async () => {
    const origin = base.slice(0, base.length - prefix.length);
    const hello = await call(`${origin}/hello`, { auth: false });
    expect(JSON.parse(hello.text)).toEqual({ hello: 'world' });
    const echo = await call(`${origin}/echo`, { method: 'POST', auth: false, headers: { 'content-type': 'application/json' }, body: '{"a":1}' });
    expect(JSON.parse(echo.text)).toEqual({ got: { a: 1 } });
  });
});

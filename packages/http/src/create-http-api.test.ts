import { createEngine, sqliteStorage, type Engine } from '@ferry/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpApi } from './create-http-api.js';
import type { HttpApi, HttpRequest } from './types.js';

let engine: Engine;
let api: HttpApi;
let key: string;

beforeAll(async () => {
  engine = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }) });
  await engine.start();
  api = createHttpApi(engine);
  key = (await engine.apiKeys.create({ scopes: ['write'] })).key;
});
afterAll(() => engine.stop());

const call = async (method: string, url: string, init: Partial<HttpRequest> & { json?: unknown } = {}) => {
  const headers = { authorization: `Bearer ${key}`, ...(init.json !== undefined ? { 'content-type': 'application/json' } : {}), ...init.headers };
  const res = await api.dispatch({ method, url, headers, ...(init.json !== undefined ? { body: JSON.stringify(init.json) } : init.body !== undefined ? { body: init.body } : {}) });
  return { ...res, json: res.body ? JSON.parse(res.body) : undefined };
};

describe('dispatch', () => {
  it('answers an unknown route 404 and a wrong method 405 with Allow', async () => {
    const missing = await call('GET', '/v2/nothing');
    expect(missing.status).toBe(404);
    expect(missing.headers['content-type']).toBe('application/problem+json');
    const wrong = await call('PUT', '/v2/pipelines');
    expect(wrong.status).toBe(405);
    expect(wrong.headers.allow).toBe('POST, GET');
  });

  it('requires a key, with WWW-Authenticate', async () => {
    const res = await call('GET', '/v2/pipelines', { headers: { authorization: '' } });
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
    expect(res.json).toMatchObject({ type: '/problems/unauthenticated', code: 'unauthenticated', status: 401 });
  });

  it('lists with the envelope and rate-limit headers', async () => {
    const res = await call('GET', '/v2/pipelines?limit=500', { headers: { 'x-request-id': 'abc-1' } });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ data: [], next_cursor: null, has_more: false });
    expect(res.headers['x-request-id']).toBe('abc-1');
    expect(res.headers['ratelimit-policy']).toBe('"default";q=600;w=60');
    expect(res.headers.ratelimit).toMatch(/^"default";r=\d+;t=\d+$/);
  });

  it('reports malformed JSON, content type, body size, unknown query parameters', async () => {
    expect((await call('POST', '/v2/webhooks', { body: '{"url":', headers: { 'content-type': 'application/json' } })).json.code).toBe('malformed_json');
    expect((await call('POST', '/v2/webhooks', { body: '{}', headers: { 'content-type': 'text/plain' } })).status).toBe(415);
    expect((await call('POST', '/v2/webhooks', { body: 'x'.repeat(1024 * 1024 + 1), headers: { 'content-type': 'application/json' } })).status).toBe(413);
    const bad = await call('GET', '/v2/pipelines?limit=0&foo=1');
    expect(bad.status).toBe(400);
    expect(bad.json.errors.map((e: { pointer: string }) => e.pointer).sort()).toEqual(['/foo', '/limit']);
  });

  it('replays an idempotent POST and refuses the key with another body', async () => {
    const body = { url: 'https://example.com/hook', events: ['pipeline.failed'] };
    const first = await call('POST', '/v2/webhooks', { json: body, headers: { 'idempotency-key': 'k1' } });
    expect(first.status).toBe(201);
    const again = await call('POST', '/v2/webhooks', { json: body, headers: { 'idempotency-key': 'k1' } });
    expect(again.status).toBe(201);
    expect(again.body).toBe(first.body);
    expect(again.headers['idempotent-replayed']).toBe('true');
    const other = await call('POST', '/v2/webhooks', { json: { ...body, url: 'https://example.com/other' }, headers: { 'idempotency-key': 'k1' } });
    expect(other.status).toBe(422);
    expect(other.json.code).toBe('idempotency_key_reused');
  });

  it('serves its OpenAPI document without a key', async () => {
    const res = await call('GET', '/v2/openapi.json', { headers: { authorization: '' } });
    expect(res.status).toBe(200);
    expect(res.json.openapi).toBe('3.1.0');
    expect(Object.keys(res.json.paths)).toContain('/v2/pipelines/{id}');
  });
});

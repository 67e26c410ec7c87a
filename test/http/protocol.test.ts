/**
 * Protocol rules that hold on every route (docs/api.md, The HTTP protocol, Errors and Lists): content type (415), body
 * limit (413), malformed JSON (400), request ids, unknown routes (404), wrong methods (405 with
 * Allow), query parameters and the `limit` rules.
 */
import { expect, it } from 'vitest';
import { describeMatrix } from './harness.js';
import { createConnector, expectFieldError, expectPage, expectProblem } from './fixtures.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const connectorBody = { type: 'postgres', direction: 'source', config: { host: 'h', password: 'pw-protocol-1' } };

describeMatrix('protocol', (ctx) => {
  it('malformed JSON is 400 malformed_json, never a 500', async () => {
    for (const raw of ['{"type":', '{type: postgres}', 'nul', '{"a":1}}', '\u0000']) {
      const res = await ctx.api.request('POST', '/v2/connectors', { raw, headers: { 'content-type': 'application/json' } });
      expectProblem(res, 400, 'malformed_json');
    }
  });

  it('a body that is JSON but not an object is 400 validation_failed', async () => {
    for (const raw of ['[]', '"text"', '42', 'null']) {
      const res = await ctx.api.request('POST', '/v2/connectors', { raw, headers: { 'content-type': 'application/json' } });
      expectProblem(res, 400, 'validation_failed');
    }
  });

  it('a body with another content type, or none, is 415 unsupported_media_type', async () => {
    const raw = JSON.stringify(connectorBody);
    const variants: Array<Record<string, string>> = [{ 'content-type': 'text/plain' }, { 'content-type': 'application/x-www-form-urlencoded' }, {}];
    for (const headers of variants) {
      const res = await ctx.api.request('POST', '/v2/connectors', { raw, headers });
      expectProblem(res, 415, 'unsupported_media_type');
    }
    const patch = await ctx.api.request('PATCH', `/v2/connectors/${(await createConnector(ctx.api)).id}`, { raw: '{"name":"x"}', headers: { 'content-type': 'text/plain' } });
    expectProblem(patch, 415, 'unsupported_media_type');
  });

  it('application/json with a charset parameter is accepted', async () => {
    const res = await ctx.api.request('POST', '/v2/connectors', { raw: JSON.stringify(connectorBody), headers: { 'content-type': 'application/json; charset=utf-8' } });
    expect(res.status, res.text).toBe(201);
  });

  it('a body over 1 MiB is 413 payload_too_large; one just under is read', async () => {
    const big = JSON.stringify({ ...connectorBody, name: 'x'.repeat(1024 * 1024) });
    expectProblem(await ctx.api.request('POST', '/v2/connectors', { raw: big, headers: { 'content-type': 'application/json' } }), 413, 'payload_too_large');
    // Just under the limit the body is parsed and validated (the name is too long: a 400, not a 413).
    const under = JSON.stringify({ ...connectorBody, name: 'x'.repeat(1024 * 1024 - 200) });
    const res = await ctx.api.request('POST', '/v2/connectors', { raw: under, headers: { 'content-type': 'application/json' } });
    expect(res.status, res.text.slice(0, 300)).not.toBe(413);
    expect(res.status).toBeLessThan(500);
  });

  it('echoes X-Request-Id, on success and on error, and in the problem body', async () => {
    const ok = await ctx.api.request('GET', '/v2/connectors', { headers: { 'x-request-id': 'req-abc-123' } });
    expect(ok.status).toBe(200);
    expect(ok.headers['x-request-id']).toBe('req-abc-123');
    const bad = await ctx.api.request('GET', '/v2/connectors/con_nope', { headers: { 'x-request-id': 'req-def-456' } });
    expect(expectProblem(bad, 404, 'not_found').request_id).toBe('req-def-456');
    const unauth = await ctx.api.request('GET', '/v2/connectors', { key: null, headers: { 'x-request-id': 'req-ghi-789' } });
    expect(expectProblem(unauth, 401, 'unauthenticated').request_id).toBe('req-ghi-789');
  });

  it('generates a fresh X-Request-Id when none is sent', async () => {
    const a = await ctx.api.request('GET', '/v2/connectors');
    const b = await ctx.api.request('GET', '/v2/connectors');
    expect(a.headers['x-request-id']).toMatch(UUID);
    expect(b.headers['x-request-id']).toMatch(UUID);
    expect(a.headers['x-request-id']).not.toBe(b.headers['x-request-id']);
    const err = await ctx.api.request('POST', '/v2/connectors', { raw: '{', headers: { 'content-type': 'application/json' } });
    expect(expectProblem(err, 400, 'malformed_json').request_id).toMatch(UUID);
  });

  it('an unknown route is 404 not_found problem+json, with or without a key', async () => {
    for (const path of ['/v2/nope', '/v2/connectors/con_x/nope', '/v2', '/v2/']) {
      expectProblem(await ctx.api.request('GET', path), 404, 'not_found');
    }
    expectProblem(await ctx.api.request('GET', '/v2/nope', { key: null }), 404, 'not_found');
  });

  it('U+0000 is refused in any body string and in a path (400 invalid_character)', async () => {
    const res = await ctx.api.request('POST', '/v2/connectors', { body: { type: 'webhook', direction: 'source', name: 'a\u0000b', config: { headers: { 'x-a': 'b\u0000' } } } });
    expectProblem(res, 400, 'invalid_character');
    expectFieldError(res, '/name', 'invalid_character');
    expectFieldError(res, '/config/headers/x-a', 'invalid_character');
    const mixed = await ctx.api.request('POST', '/v2/connectors', { body: { type: 'webhook', direction: 'sideways', name: 'a\u0000b', config: {} } });
    expectProblem(mixed, 400, 'validation_failed');
    expectFieldError(mixed, '/name', 'invalid_character');
    expectProblem(await ctx.api.request('GET', '/v2/pipelines/pip_%00'), 400, 'invalid_character');
    expectProblem(await ctx.api.request('DELETE', '/v2/connectors/%00'), 400, 'invalid_character');
  });

  it('a known path with another method is 405 method_not_allowed with Allow', async () => {
    const collection = await ctx.api.request('DELETE', '/v2/connectors');
    expectProblem(collection, 405, 'method_not_allowed');
    expect(collection.headers.allow?.split(/,\s*/).sort()).toEqual(['GET', 'POST']);
    const item = await ctx.api.request('PUT', '/v2/pipelines/pip_01JZZZZZZZZZZZZZZZZZZZZZZZ', { body: {} });
    expectProblem(item, 405, 'method_not_allowed');
    expect(item.headers.allow?.split(/,\s*/).sort()).toEqual(['DELETE', 'GET', 'PATCH']);
    const action = await ctx.api.request('GET', '/v2/pipelines/pip_01JZZZZZZZZZZZZZZZZZZZZZZZ/activate');
    expectProblem(action, 405, 'method_not_allowed');
    expect(action.headers.allow).toBe('POST');
  });

  it('answers records as application/json and lists in the { data, next_cursor, has_more } envelope', async () => {
    const c = await createConnector(ctx.api);
    const one = await ctx.api.request('GET', `/v2/connectors/${c.id}`);
    expect(one.headers['content-type']).toBe('application/json');
    for (const path of ['/v2/connectors', '/v2/pipelines', '/v2/webhooks']) expectPage(await ctx.api.request('GET', path));
  });

  it.each(['0', '-1', '1.5', 'abc', '', '1e2', ' 5'])('limit=%j is 400 validation_failed with /limit invalid_limit', async (limit) => {
    for (const path of ['/v2/connectors', '/v2/pipelines', '/v2/webhooks']) {
      const res = await ctx.api.request('GET', `${path}?limit=${encodeURIComponent(limit)}`);
      expectProblem(res, 400, 'validation_failed');
      expectFieldError(res, '/limit', 'invalid_limit');
    }
  });

  it('limit above 100 is lowered to 100', async () => {
    const workspace = `lim${ctx.adapter}${ctx.storage}`;
    const key = await ctx.api.key(['write'], workspace, { requests: 10_000, per_seconds: 60 });
    for (let i = 0; i < 101; i++) {
      await ctx.api.engine.connectors.create(workspace, { type: 'postgres', direction: 'source', config: { host: `h${i}`, password: 'pw-limit-1' } });
    }
    const page = expectPage(await ctx.api.request('GET', '/v2/connectors?limit=500', { key }));
    expect(page.data).toHaveLength(100);
    expect(page.has_more).toBe(true);
    const rest = expectPage(await ctx.api.request('GET', `/v2/connectors?limit=500&cursor=${encodeURIComponent(page.next_cursor!)}`, { key }));
    expect(rest.data).toHaveLength(1);
    expect(rest.has_more).toBe(false);
    expect(rest.next_cursor).toBeNull();
    const dflt = expectPage(await ctx.api.request('GET', '/v2/connectors', { key }));
    expect(dflt.data).toHaveLength(50);
  });

  it('an unknown or repeated query parameter is 400 validation_failed', async () => {
    const unknown = await ctx.api.request('GET', '/v2/connectors?bogus=1');
    expectProblem(unknown, 400, 'validation_failed');
    expectFieldError(unknown, '/bogus', 'unknown_field');
    const repeated = await ctx.api.request('GET', '/v2/connectors?limit=1&limit=2');
    expectProblem(repeated, 400, 'validation_failed');
  });

  it('a garbled cursor is 400 invalid_cursor', async () => {
    for (const cursor of ['abc', 'x'.repeat(300), '%00', 'eyJ0ZXN0IjoxfQ']) {
      const res = await ctx.api.request('GET', `/v2/connectors?cursor=${encodeURIComponent(cursor)}`);
      expectProblem(res, 400, 'invalid_cursor');
    }
  });
});

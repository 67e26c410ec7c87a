/**
 * Authentication, scopes and workspace isolation (docs/api.md, The HTTP protocol, API keys and Workspaces): every kind of bad
 * key is one 401 with `WWW-Authenticate: Bearer`; a key without the scope is 403; another
 * workspace's ids are 404 on every `{id}` route, never 403.
 */
import { beforeAll, expect, it } from 'vitest';
import { apiKeyChecksum, generateApiKey } from '@ferry/core/internal';
import { describeMatrix } from './harness.js';
import { createConnector, createPipeline, createWebhook, expectPage, expectProblem, insertDelivery, insertEvents } from './fixtures.js';

function expectUnauthenticated(res: Parameters<typeof expectProblem>[0]): void {
  expectProblem(res, 401, 'unauthenticated');
  expect(res.headers['www-authenticate']).toMatch(/^Bearer\b/);
}

describeMatrix('authentication and scopes', (ctx) => {
  it('no Authorization header is 401 with WWW-Authenticate: Bearer', async () => {
    expectUnauthenticated(await ctx.api.request('GET', '/v2/connectors', { key: null }));
    expectUnauthenticated(await ctx.api.request('POST', '/v2/pipelines', { key: null, body: {} }));
  });

  it('a garbled key or another scheme is 401', async () => {
    const valid = ctx.api.defaultKey;
    for (const authorization of ['Bearer', 'Bearer ', 'Bearer nonsense', `Basic ${Buffer.from('a:b').toString('base64')}`, `Token ${valid}`, 'Bearer fry_short_x', `Bearer ${valid}x`, `Bearer ${valid.slice(0, -1)}`]) {
      expectUnauthenticated(await ctx.api.request('GET', '/v2/connectors', { key: null, headers: { authorization } }));
    }
  });

  it('the Bearer scheme is case-insensitive', async () => {
    const res = await ctx.api.request('GET', '/v2/connectors', { key: null, headers: { authorization: `bearer ${ctx.api.defaultKey}` } });
    expect(res.status, res.text).toBe(200);
  });

  it('a key with a bad checksum is 401', async () => {
    const valid = ctx.api.defaultKey;
    const last = valid.at(-1) === '0' ? '1' : '0';
    expectUnauthenticated(await ctx.api.request('GET', '/v2/connectors', { key: `${valid.slice(0, -1)}${last}` }));
  });

  it('an unknown key, or a known key id with a wrong secret (checksum correct), is 401', async () => {
    expectUnauthenticated(await ctx.api.request('GET', '/v2/connectors', { key: generateApiKey().token }));
    const valid = ctx.api.defaultKey;
    const body = valid.slice(0, -6);
    const flipped = `${body.slice(0, -1)}${body.at(-1) === 'a' ? 'b' : 'a'}`;
    expectUnauthenticated(await ctx.api.request('GET', '/v2/connectors', { key: flipped + apiKeyChecksum(flipped) }));
  });

  it('a revoked key is 401 at once', async () => {
    const created = await ctx.api.engine.apiKeys.create({ scopes: ['write'] });
    expect((await ctx.api.request('GET', '/v2/connectors', { key: created.key })).status).toBe(200);
    await ctx.api.engine.apiKeys.revoke('default', created.id);
    expectUnauthenticated(await ctx.api.request('GET', '/v2/connectors', { key: created.key }));
  });

  it('a read key may GET but not POST, PATCH or DELETE (403 forbidden)', async () => {
    const read = await ctx.api.key(['read']);
    const c = await createConnector(ctx.api);
    expect((await ctx.api.request('GET', '/v2/connectors', { key: read })).status).toBe(200);
    expect((await ctx.api.request('GET', `/v2/connectors/${c.id}`, { key: read })).status).toBe(200);
    expectProblem(await ctx.api.request('POST', '/v2/connectors', { key: read, body: { type: 'postgres', direction: 'source', config: { host: 'h', password: 'p' } } }), 403, 'forbidden');
    expectProblem(await ctx.api.request('PATCH', `/v2/connectors/${c.id}`, { key: read, body: { name: 'n' } }), 403, 'forbidden');
    expectProblem(await ctx.api.request('DELETE', `/v2/connectors/${c.id}`, { key: read }), 403, 'forbidden');
    expectProblem(await ctx.api.request('POST', '/v2/webhooks', { key: read, body: { url: 'https://x.example.com', events: ['pipeline.failed'] } }), 403, 'forbidden');
    // The resource is untouched.
    expect((await ctx.api.request('GET', `/v2/connectors/${c.id}`)).body.name).toBe(c.name);
  });

  it('a resource scope covers only its resource: connectors:read cannot list pipelines', async () => {
    const key = await ctx.api.key(['connectors:read']);
    expect((await ctx.api.request('GET', '/v2/connectors', { key })).status).toBe(200);
    expectProblem(await ctx.api.request('GET', '/v2/pipelines', { key }), 403, 'forbidden');
    expectProblem(await ctx.api.request('GET', '/v2/webhooks', { key }), 403, 'forbidden');
    const p = await createPipeline(ctx.api);
    expectProblem(await ctx.api.request('GET', `/v2/pipelines/${p.id}`, { key }), 403, 'forbidden');
    expectProblem(await ctx.api.request('GET', `/v2/pipelines/${p.id}/events`, { key }), 403, 'forbidden');
  });

  it('rotate needs connectors:rotate and replay needs events:replay', async () => {
    const c = await createConnector(ctx.api, { type: 'webhook', direction: 'source', config: {} });
    const reader = await ctx.api.key(['connectors:read', 'events:read']);
    expectProblem(await ctx.api.request('POST', `/v2/connectors/${c.id}/rotate`, { key: reader }), 403, 'forbidden');
    const p = await createPipeline(ctx.api);
    const [e] = await insertEvents(ctx.api, p.id, [{ occurred_at: '2026-11-01T00:00:00.000Z', status: 'dead_lettered' }]);
    expectProblem(await ctx.api.request('POST', `/v2/events/${e!.id}/replay`, { key: reader }), 403, 'forbidden');
    expectProblem(await ctx.api.request('POST', `/v2/pipelines/${p.id}/events/replay`, { key: reader, body: {} }), 403, 'forbidden');
    // connectors:rotate alone is enough to rotate, but grants no reads.
    const rotator = await ctx.api.key(['connectors:rotate']);
    expect((await ctx.api.request('POST', `/v2/connectors/${c.id}/rotate`, { key: rotator })).status).toBe(200);
    expectProblem(await ctx.api.request('GET', `/v2/connectors/${c.id}`, { key: rotator }), 403, 'forbidden');
    const replayer = await ctx.api.key(['events:replay']);
    expect((await ctx.api.request('POST', `/v2/events/${e!.id}/replay`, { key: replayer })).status).toBe(202);
  });
});

describeMatrix('workspace isolation', (ctx) => {
  const other: Record<string, string> = {};
  let otherKey = '';

  beforeAll(async () => {
    const api = ctx.api;
    otherKey = await api.key(['write'], 'other', { requests: 100_000, per_seconds: 60 });
    const source = await createConnector(api, { type: 'webhook', direction: 'source', config: {} }, otherKey);
    const p = await createPipeline(api, { schedule: '*/5 * * * *', activate: true }, otherKey);
    const w = await createWebhook(api, {}, otherKey);
    const [e] = await insertEvents(api, p.id, [{ occurred_at: '2026-11-01T00:00:00.000Z', status: 'dead_lettered', workspace: 'other' }]);
    const d = await insertDelivery(api, w.id, 'failed', undefined, 'other');
    Object.assign(other, { connector: source.id, pipeline: p.id, webhook: w.id, event: e!.id, delivery: d.id });
  });

  const routes: Array<[string, (o: Record<string, string>) => string, unknown?]> = [
    ['GET', (o) => `/v2/connectors/${o.connector}`],
    ['PATCH', (o) => `/v2/connectors/${o.connector}`, { name: 'stolen' }],
    ['DELETE', (o) => `/v2/connectors/${o.connector}`],
    ['POST', (o) => `/v2/connectors/${o.connector}/check`],
    ['POST', (o) => `/v2/connectors/${o.connector}/rotate`],
    ['GET', (o) => `/v2/pipelines/${o.pipeline}`],
    ['PATCH', (o) => `/v2/pipelines/${o.pipeline}`, { name: 'stolen' }],
    ['DELETE', (o) => `/v2/pipelines/${o.pipeline}`],
    ['POST', (o) => `/v2/pipelines/${o.pipeline}/activate`],
    ['POST', (o) => `/v2/pipelines/${o.pipeline}/pause`],
    ['POST', (o) => `/v2/pipelines/${o.pipeline}/runs`],
    ['GET', (o) => `/v2/pipelines/${o.pipeline}/runs`],
    ['GET', (o) => `/v2/pipelines/${o.pipeline}/stats`],
    ['GET', (o) => `/v2/pipelines/${o.pipeline}/events`],
    ['POST', (o) => `/v2/pipelines/${o.pipeline}/events/replay`, {}],
    ['POST', (o) => `/v2/events/${o.event}/replay`],
    ['GET', (o) => `/v2/webhooks/${o.webhook}`],
    ['GET', (o) => `/v2/webhooks/${o.webhook}/secret`],
    ['PATCH', (o) => `/v2/webhooks/${o.webhook}`, { description: 'stolen' }],
    ['DELETE', (o) => `/v2/webhooks/${o.webhook}`],
    ['POST', (o) => `/v2/webhooks/${o.webhook}/rotate-secret`],
    ['GET', (o) => `/v2/webhooks/${o.webhook}/deliveries`],
    ['GET', (o) => `/v2/webhooks/${o.webhook}/deliveries/${o.delivery}`],
    ['GET', (o) => `/v2/deliveries/${o.delivery}`],
    ['POST', (o) => `/v2/webhooks/${o.webhook}/deliveries/${o.delivery}/redeliver`],
    ['POST', (o) => `/v2/webhooks/${o.webhook}/recover`, { since: '2026-01-01T00:00:00.000Z' }],
  ];

  it.each(routes.map(([m, p, b]) => ({ name: `${m} ${p({ connector: '{con}', pipeline: '{pip}', webhook: '{whk}', event: '{evt}', delivery: '{dlv}' })}`, m, p, b })))(
    '$name with another workspace\'s id is 404, never 403',
    async ({ m, p, b }) => {
      const res = await ctx.api.request(m, p(other), b === undefined ? {} : { body: b });
      expectProblem(res, 404, 'not_found');
      // An admin-free read key of the same workspace gets the same 404, not a 403 that would confirm the id.
      if (m === 'GET') expectProblem(await ctx.api.request(m, p(other), { key: await ctx.api.key(['read']) }), 404, 'not_found');
    },
  );

  it('the other workspace still sees and owns everything', async () => {
    expect((await ctx.api.request('GET', `/v2/connectors/${other.connector}`, { key: otherKey })).status).toBe(200);
    const p = await ctx.api.request('GET', `/v2/pipelines/${other.pipeline}`, { key: otherKey });
    expect(p.status).toBe(200);
    expect(p.body.name).not.toBe('stolen');
    expect((await ctx.api.request('GET', `/v2/webhooks/${other.webhook}`, { key: otherKey })).body.description).not.toBe('stolen');
  });

  it('lists never show another workspace\'s records', async () => {
    for (const path of ['/v2/connectors', '/v2/pipelines', '/v2/webhooks']) {
      const page = expectPage(await ctx.api.request('GET', `${path}?limit=100`));
      expect(page.data.map((r: { id: string }) => r.id)).not.toContain(other.connector);
      expect(page.data.map((r: { id: string }) => r.id)).not.toContain(other.pipeline);
      expect(page.data.map((r: { id: string }) => r.id)).not.toContain(other.webhook);
    }
  });

  it('a pipeline cannot reference another workspace\'s connector (422 invalid_reference)', async () => {
    const mine = await createConnector(ctx.api, { direction: 'destination' });
    const res = await ctx.api.request('POST', '/v2/pipelines', { body: { name: 'cross', source_connector_id: other.connector, destination_connector_id: mine.id } });
    expectProblem(res, 422, 'invalid_reference');
  });

  it('a cursor from another workspace is 400 invalid_cursor', async () => {
    await createConnector(ctx.api, {}, otherKey);
    const page = expectPage(await ctx.api.request('GET', '/v2/connectors?limit=1', { key: otherKey }));
    expect(page.next_cursor).toEqual(expect.any(String));
    expectProblem(await ctx.api.request('GET', `/v2/connectors?limit=1&cursor=${encodeURIComponent(page.next_cursor!)}`), 400, 'invalid_cursor');
  });
});

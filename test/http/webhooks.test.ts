/**
 * Webhook subscription routes (docs/api.md, Webhook delivery and Webhook secrets): CRUD, the secret (shown on create and by
 * GET .../secret only), rotate-secret, deliveries, redeliver and recover. Deliveries come from
 * the delivery worker, which this suite does not drive: rows are written into storage.
 */
import { expect, it } from 'vitest';
import { describeMatrix } from './harness.js';
import { createWebhook, expectFieldError, expectPage, expectProblem, ghostId, insertDelivery } from './fixtures.js';

const SECRET = /^whsec_[A-Za-z0-9+/]+={0,2}$/;
const GIVEN_SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;

describeMatrix('webhooks', (ctx) => {
  it('POST creates a subscription: 201 { id, url, events, secret, enabled, description, created_at }, Location', async () => {
    const res = await ctx.api.request('POST', '/v2/webhooks', { body: { url: 'https://hooks.example.com/ferry', events: ['pipeline.failed', 'pipeline.completed'], description: 'ops' } });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      id: expect.stringMatching(/^whk_[0-9A-HJKMNP-TV-Z]{26}$/),
      url: 'https://hooks.example.com/ferry',
      events: ['pipeline.failed', 'pipeline.completed'],
      secret: expect.stringMatching(SECRET),
      enabled: true,
      description: 'ops',
      created_at: expect.any(String),
    });
    expect(Buffer.from(res.body.secret.slice(6), 'base64')).toHaveLength(32);
    expect(res.headers.location).toBe(`/v2/webhooks/${res.body.id}`);
  });

  it('a supplied secret is kept; the secret is absent from GET and list, shown by GET .../secret', async () => {
    const w = await createWebhook(ctx.api, { secret: GIVEN_SECRET });
    expect(w.secret).toBe(GIVEN_SECRET);
    const one = await ctx.api.request('GET', `/v2/webhooks/${w.id}`);
    expect(one.status).toBe(200);
    expect(one.body).not.toHaveProperty('secret');
    expect(one.text).not.toContain(GIVEN_SECRET.slice(6, 20));
    const listRes = await ctx.api.request('GET', '/v2/webhooks?limit=100');
    const list = expectPage(listRes);
    expect(list.data.map((x: { id: string }) => x.id)).toContain(w.id);
    expect(listRes.text).not.toContain(GIVEN_SECRET.slice(6, 20));
    expect(list.data.every((x: object) => !('secret' in x))).toBe(true);
    const secret = await ctx.api.request('GET', `/v2/webhooks/${w.id}/secret`);
    expect(secret.status).toBe(200);
    expect(secret.body).toEqual({ secret: GIVEN_SECRET });
    expectProblem(await ctx.api.request('GET', `/v2/webhooks/${ghostId('whk')}/secret`), 404, 'not_found');
  });

  it('422 url_not_allowed for a non-https url, 422 unknown_event_type, 400 for shape errors', async () => {
    const http = await ctx.api.request('POST', '/v2/webhooks', { body: { url: 'http://hooks.example.com/x', events: ['pipeline.failed'] } });
    expectProblem(http, 422, 'url_not_allowed');
    expectFieldError(http, '/url', 'url_not_allowed');
    const loopback = await ctx.api.request('POST', '/v2/webhooks', { body: { url: 'https://127.0.0.1/x', events: ['pipeline.failed'] } });
    expectProblem(loopback, 422, 'url_not_allowed');
    const type = await ctx.api.request('POST', '/v2/webhooks', { body: { url: 'https://hooks.example.com/x', events: ['pipeline.exploded'] } });
    expectProblem(type, 422, 'unknown_event_type');
    expectFieldError(type, '/events/0', 'unknown_event_type');
    const shape = await ctx.api.request('POST', '/v2/webhooks', { body: { events: 'pipeline.failed', id: 'whk_x', extra: true } });
    expectProblem(shape, 400, 'validation_failed');
    expectFieldError(shape, '/url', 'required');
    expectFieldError(shape, '/id', 'read_only');
    expectFieldError(shape, '/extra', 'unknown_field');
    const secret = await ctx.api.request('POST', '/v2/webhooks', { body: { url: 'https://hooks.example.com/x', events: ['pipeline.failed'], secret: 'short' } });
    expectProblem(secret, 400, 'validation_failed');
    expectFieldError(secret, '/secret', 'format');
    expect(secret.text).not.toContain('"short"');
  });

  it('PATCH updates url, events, enabled, description; secret is read-only there', async () => {
    const w = await createWebhook(ctx.api);
    const res = await ctx.api.request('PATCH', `/v2/webhooks/${w.id}`, { body: { url: 'https://other.example.com/y', events: ['connector.error'], enabled: false, description: 'paused' } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: w.id, url: 'https://other.example.com/y', events: ['connector.error'], enabled: false, description: 'paused' });
    expect(res.body).not.toHaveProperty('secret');
    const ro = await ctx.api.request('PATCH', `/v2/webhooks/${w.id}`, { body: { secret: GIVEN_SECRET } });
    expectProblem(ro, 400, 'validation_failed');
    expectFieldError(ro, '/secret', 'read_only');
    expectProblem(await ctx.api.request('PATCH', `/v2/webhooks/${w.id}`, { body: { url: 'ftp://x' } }), 422, 'url_not_allowed');
    expectProblem(await ctx.api.request('PATCH', `/v2/webhooks/${ghostId('whk')}`, { body: { enabled: true } }), 404, 'not_found');
  });

  it('DELETE is 204, then 404', async () => {
    const w = await createWebhook(ctx.api);
    await insertDelivery(ctx.api, w.id, 'pending');
    const del = await ctx.api.request('DELETE', `/v2/webhooks/${w.id}`);
    expect(del.status, del.text).toBe(204);
    expectProblem(await ctx.api.request('GET', `/v2/webhooks/${w.id}`), 404, 'not_found');
    expectProblem(await ctx.api.request('DELETE', `/v2/webhooks/${w.id}`), 404, 'not_found');
  });

  it('POST .../rotate-secret makes a new secret (generated or given) that GET .../secret shows', async () => {
    const w = await createWebhook(ctx.api);
    const gen = await ctx.api.request('POST', `/v2/webhooks/${w.id}/rotate-secret`);
    expect(gen.status, gen.text).toBe(200);
    expect(gen.body.secret).toMatch(SECRET);
    expect(gen.body.secret).not.toBe(w.secret);
    expect((await ctx.api.request('GET', `/v2/webhooks/${w.id}/secret`)).body.secret).toBe(gen.body.secret);
    const given = await ctx.api.request('POST', `/v2/webhooks/${w.id}/rotate-secret`, { body: { secret: GIVEN_SECRET, previous_secret_expires_in: 0 } });
    expect(given.status, given.text).toBe(200);
    expect(given.body.secret).toBe(GIVEN_SECRET);
    for (const previous_secret_expires_in of [-1, 604801, 1.5]) {
      const bad = await ctx.api.request('POST', `/v2/webhooks/${w.id}/rotate-secret`, { body: { previous_secret_expires_in } });
      expectProblem(bad, 400, 'validation_failed');
      expectFieldError(bad, '/previous_secret_expires_in', previous_secret_expires_in === 1.5 ? 'type' : 'out_of_range');
    }
    const tooShort = await ctx.api.request('POST', `/v2/webhooks/${w.id}/rotate-secret`, { body: { secret: `whsec_${Buffer.alloc(16).toString('base64')}` } });
    expectProblem(tooShort, 400, 'validation_failed');
    expectProblem(await ctx.api.request('POST', `/v2/webhooks/${ghostId('whk')}/rotate-secret`), 404, 'not_found');
  });

  it('GET .../deliveries lists deliveries with status and since filters; GET one has its attempt history', async () => {
    const w = await createWebhook(ctx.api);
    const failed = await insertDelivery(ctx.api, w.id, 'failed', '2026-11-20T00:00:00.000Z');
    const delivered = await insertDelivery(ctx.api, w.id, 'delivered', '2026-11-21T00:00:00.000Z');
    const pending = await insertDelivery(ctx.api, w.id, 'pending', '2026-11-22T00:00:00.000Z');
    const all = expectPage(await ctx.api.request('GET', `/v2/webhooks/${w.id}/deliveries`));
    expect(all.data.map((d: { id: string }) => d.id)).toEqual([failed.id, delivered.id, pending.id]);
    expect(all.data[0]).toMatchObject({ id: failed.id, status: 'failed', attempts: 8, last_response_status: 500 });
    expect(Object.keys(all.data[0])).toEqual(expect.arrayContaining(['attempts', 'next_attempt_at', 'last_response_status', 'last_error']));
    const onlyFailed = expectPage(await ctx.api.request('GET', `/v2/webhooks/${w.id}/deliveries?status=failed`));
    expect(onlyFailed.data.map((d: { id: string }) => d.id)).toEqual([failed.id]);
    const since = expectPage(await ctx.api.request('GET', `/v2/webhooks/${w.id}/deliveries?since=${encodeURIComponent('2026-11-21T00:00:00.000Z')}`));
    expect(since.data.map((d: { id: string }) => d.id)).toEqual([delivered.id, pending.id]);
    expectFieldError(await ctx.api.request('GET', `/v2/webhooks/${w.id}/deliveries?status=lost`), '/status', 'enum');
    const page = expectPage(await ctx.api.request('GET', `/v2/webhooks/${w.id}/deliveries?limit=2`));
    expect(page.has_more).toBe(true);
    expectProblem(await ctx.api.request('GET', `/v2/webhooks/${w.id}/deliveries?limit=2&status=failed&cursor=${encodeURIComponent(page.next_cursor!)}`), 400, 'invalid_cursor');
    const one = await ctx.api.request('GET', `/v2/webhooks/${w.id}/deliveries/${failed.id}`);
    expect(one.status, one.text).toBe(200);
    expect(one.body).toMatchObject({ id: failed.id, status: 'failed', attempt_history: [] });
    expectProblem(await ctx.api.request('GET', `/v2/webhooks/${ghostId('whk')}/deliveries`), 404, 'not_found');
    // The same delivery by its id alone, whatever its subscription.
    const found = await ctx.api.request('GET', `/v2/deliveries/${failed.id}`);
    expect(found.status, found.text).toBe(200);
    expect(found.body).toEqual(one.body);
    expectProblem(await ctx.api.request('GET', `/v2/deliveries/${ghostId('dlv')}`), 404, 'not_found');
  });

  it('a delivery is 404 under an unknown id or under another subscription', async () => {
    const w = await createWebhook(ctx.api);
    const other = await createWebhook(ctx.api);
    const d = await insertDelivery(ctx.api, w.id, 'failed');
    expectProblem(await ctx.api.request('GET', `/v2/webhooks/${w.id}/deliveries/${ghostId('dlv')}`), 404, 'not_found');
    expectProblem(await ctx.api.request('GET', `/v2/webhooks/${other.id}/deliveries/${d.id}`), 404, 'not_found');
    expectProblem(await ctx.api.request('POST', `/v2/webhooks/${other.id}/deliveries/${d.id}/redeliver`), 404, 'not_found');
    expectProblem(await ctx.api.request('POST', `/v2/webhooks/${w.id}/deliveries/${ghostId('dlv')}/redeliver`), 404, 'not_found');
  });

  it('POST .../redeliver: 202 for a failed or delivered delivery, 409 delivery_in_progress while pending or retrying', async () => {
    const w = await createWebhook(ctx.api);
    const failed = await insertDelivery(ctx.api, w.id, 'failed');
    const res = await ctx.api.request('POST', `/v2/webhooks/${w.id}/deliveries/${failed.id}/redeliver`);
    expect(res.status, res.text).toBe(202);
    expect(res.body).toMatchObject({ id: failed.id, event_id: failed.event_id });
    expect(['pending', 'retrying']).toContain(res.body.status);
    const again = await ctx.api.request('POST', `/v2/webhooks/${w.id}/deliveries/${failed.id}/redeliver`);
    expect(expectProblem(again, 409, 'delivery_in_progress').current_status).toEqual(expect.stringMatching(/^(pending|retrying)$/));
    const retrying = await insertDelivery(ctx.api, w.id, 'retrying');
    expect(expectProblem(await ctx.api.request('POST', `/v2/webhooks/${w.id}/deliveries/${retrying.id}/redeliver`), 409, 'delivery_in_progress').current_status).toBe('retrying');
    const delivered = await insertDelivery(ctx.api, w.id, 'delivered');
    expect((await ctx.api.request('POST', `/v2/webhooks/${w.id}/deliveries/${delivered.id}/redeliver`)).status).toBe(202);
  });

  it('POST .../recover: 202 { count } of failed deliveries in [since, until)', async () => {
    const w = await createWebhook(ctx.api);
    await insertDelivery(ctx.api, w.id, 'failed', '2026-11-10T00:00:00.000Z');
    await insertDelivery(ctx.api, w.id, 'failed', '2026-11-11T00:00:00.000Z');
    await insertDelivery(ctx.api, w.id, 'failed', '2026-11-12T00:00:00.000Z');
    await insertDelivery(ctx.api, w.id, 'delivered', '2026-11-11T12:00:00.000Z');
    const some = await ctx.api.request('POST', `/v2/webhooks/${w.id}/recover`, { body: { since: '2026-11-11T00:00:00.000Z', until: '2026-11-12T00:00:00.000Z' } });
    expect(some.status, some.text).toBe(202);
    expect(some.body).toEqual({ count: 1 });
    const rest = await ctx.api.request('POST', `/v2/webhooks/${w.id}/recover`, { body: { since: '2026-11-01T00:00:00.000Z' } });
    expect(rest.body).toEqual({ count: 2 });
    const missing = await ctx.api.request('POST', `/v2/webhooks/${w.id}/recover`, { body: {} });
    expectProblem(missing, 400, 'validation_failed');
    expectFieldError(missing, '/since', 'required');
    expectProblem(await ctx.api.request('POST', `/v2/webhooks/${w.id}/recover`), 400, 'validation_failed');
    expectProblem(await ctx.api.request('POST', `/v2/webhooks/${ghostId('whk')}/recover`, { body: { since: '2026-11-01T00:00:00.000Z' } }), 404, 'not_found');
  });
});

/**
 * `Idempotency-Key` on POST (docs/api.md, The HTTP protocol): the same key and body answer the stored first
 * response; another body is 422 `idempotency_key_reused`; keys are at most 255 characters and
 * scoped per API key.
 */
import { expect, it } from 'vitest';
import { describeMatrix } from './harness.js';
import { createPipeline, expectPage, expectProblem, unique } from './fixtures.js';

describeMatrix('idempotency', (ctx) => {
  const body = () => ({ type: 'postgres', direction: 'source', config: { host: `h-${unique()}`, password: 'pw-idem-1234' } });

  it('the same key and body replay the first answer: same status and body, nothing created twice', async () => {
    const key = await ctx.api.key(['write'], `idem-${ctx.adapter}-${ctx.storage}`);
    const b = body();
    const idem = `idem-${unique()}`;
    const first = await ctx.api.request('POST', '/v2/connectors', { key, body: b, headers: { 'idempotency-key': idem } });
    expect(first.status, first.text).toBe(201);
    const second = await ctx.api.request('POST', '/v2/connectors', { key, body: b, headers: { 'idempotency-key': idem } });
    expect(second.status).toBe(201);
    expect(second.body).toEqual(first.body);
    expect(second.headers['content-type']).toBe('application/json');
    expect(second.headers.location).toBe(first.headers.location);
    // The same JSON with another key order and spacing is the same body.
    const reordered = `{ "config": ${JSON.stringify(b.config)}, "direction": "source", "type": "postgres" }`;
    const third = await ctx.api.request('POST', '/v2/connectors', { key, raw: reordered, headers: { 'content-type': 'application/json', 'idempotency-key': idem } });
    expect(third.status, third.text).toBe(201);
    expect(third.body).toEqual(first.body);
    const list = expectPage(await ctx.api.request('GET', '/v2/connectors', { key }));
    expect(list.data).toHaveLength(1);
  });

  it('a replay of a 202 or a 409 answers it again', async () => {
    const p = await createPipeline(ctx.api);
    const idem = `idem-${unique()}`;
    const first = await ctx.api.request('POST', `/v2/pipelines/${p.id}/pause`, { headers: { 'idempotency-key': idem } });
    expectProblem(first, 409, 'invalid_state_transition');
    await ctx.api.request('POST', `/v2/pipelines/${p.id}/activate`);
    const second = await ctx.api.request('POST', `/v2/pipelines/${p.id}/pause`, { headers: { 'idempotency-key': idem } });
    expect(second.status).toBe(409);
    expect({ ...second.body, request_id: null }).toEqual({ ...first.body, request_id: null });
    // The state was not changed by the replay.
    expect((await ctx.api.request('GET', `/v2/pipelines/${p.id}`)).body.state).toBe('active');
  });

  it('the same key with another body is 422 idempotency_key_reused', async () => {
    const idem = `idem-${unique()}`;
    expect((await ctx.api.request('POST', '/v2/connectors', { body: body(), headers: { 'idempotency-key': idem } })).status).toBe(201);
    expectProblem(await ctx.api.request('POST', '/v2/connectors', { body: body(), headers: { 'idempotency-key': idem } }), 422, 'idempotency_key_reused');
    // Another path with the same key is another request too.
    expectProblem(await ctx.api.request('POST', '/v2/webhooks', { body: { url: 'https://x.example.com', events: ['pipeline.failed'] }, headers: { 'idempotency-key': idem } }), 422, 'idempotency_key_reused');
  });

  it('a key over 255 characters is 400; 255 is accepted', async () => {
    expectProblem(await ctx.api.request('POST', '/v2/connectors', { body: body(), headers: { 'idempotency-key': 'k'.repeat(256) } }), 400, 'validation_failed');
    expect((await ctx.api.request('POST', '/v2/connectors', { body: body(), headers: { 'idempotency-key': `${unique()}${'k'.repeat(247)}` } })).status).toBe(201);
  });

  it('keys are scoped per API key: another key with the same Idempotency-Key runs its own request', async () => {
    const idem = `idem-${unique()}`;
    const b = body();
    const a = await ctx.api.request('POST', '/v2/connectors', { body: b, headers: { 'idempotency-key': idem } });
    const other = await ctx.api.key(['write']);
    const c = await ctx.api.request('POST', '/v2/connectors', { key: other, body: b, headers: { 'idempotency-key': idem } });
    expect(a.status).toBe(201);
    expect(c.status).toBe(201);
    expect(c.body.id).not.toBe(a.body.id);
  });

  it('a 400 is not stored: the corrected request may reuse the key', async () => {
    const idem = `idem-${unique()}`;
    expectProblem(await ctx.api.request('POST', '/v2/connectors', { body: { type: 'postgres' }, headers: { 'idempotency-key': idem } }), 400, 'validation_failed');
    expect((await ctx.api.request('POST', '/v2/connectors', { body: body(), headers: { 'idempotency-key': idem } })).status).toBe(201);
  });
});

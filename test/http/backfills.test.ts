/**
 * Backfills over HTTP (docs/api.md, Backfills) on both adapters and both storages: the record a
 * request answers, the listing and one backfill, cancel, and every refusal: a source that cannot
 * backfill, a table it does not capture, one without a key, a filter it refuses, a body that does
 * not fit, another workspace's ids, the scopes. The suite's `postgres` test source plans
 * backfills as the real plugin does (its tables, keys and filters); test/runtime/postgres-cdc.test.ts
 * runs real ones against a real Postgres.
 */
import { expect, it } from 'vitest';
import { describeMatrix } from './harness.js';
import { createConnector, createPipeline, expectFieldError, expectPage, expectProblem, ghostId, insertBackfill } from './fixtures.js';

describeMatrix('backfills', (ctx) => {
  it('POST answers 202 with the backfill, queued, its tables in order with their estimates; GET reads it back', async () => {
    const pipeline = await createPipeline(ctx.api);
    const res = await ctx.api.request('POST', `/v2/pipelines/${pipeline.id}/backfills`, { body: { tables: ['orders', 'items'], where: { 'public.items': "region = 'eu'" }, chunk_size: 500 } });
    expect(res.status, res.text).toBe(202);
    expect(Object.keys(res.body).sort()).toEqual(['chunk_size', 'created_at', 'error', 'finished_at', 'id', 'pipeline_id', 'rows_read', 'started_at', 'state', 'tables', 'where']);
    expect(res.body).toMatchObject({
      pipeline_id: pipeline.id,
      state: 'queued',
      tables: [
        { table: 'public.orders', rows_read: 0, rows_estimated: null, state: 'pending' },
        { table: 'public.items', rows_read: 0, rows_estimated: 1000, state: 'pending' },
      ],
      where: { 'public.items': "region = 'eu'" },
      chunk_size: 500,
      rows_read: 0,
      error: null,
      created_at: new Date(ctx.clock.now()).toISOString(),
      started_at: null,
      finished_at: null,
    });
    expect(res.body.id).toMatch(/^bfl_[0-9A-HJKMNP-TV-Z]{26}$/);
    const got = await ctx.api.request('GET', `/v2/backfills/${res.body.id}`);
    expect(got.status, got.text).toBe(200);
    expect(got.body).toEqual(res.body);

    // No body: every table of the source, chunks of its batch size.
    const all = await ctx.api.request('POST', `/v2/pipelines/${pipeline.id}/backfills`);
    expect(all.status, all.text).toBe(202);
    expect(all.body.tables.map((t: { table: string }) => t.table)).toEqual(['public.items', 'public.orders']);
    expect(all.body).toMatchObject({ where: null, chunk_size: null });
  });

  it('lists a pipeline\'s backfills oldest first, newest first with order=desc, and pages them', async () => {
    const pipeline = await createPipeline(ctx.api);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await ctx.api.request('POST', `/v2/pipelines/${pipeline.id}/backfills`, { body: { tables: ['items'] } })).body.id);
    const newest = expectPage(await ctx.api.request('GET', `/v2/pipelines/${pipeline.id}/backfills?limit=2&order=desc`));
    expect(newest.data.map((b) => b.id)).toEqual([ids[2], ids[1]]);
    expect(newest.has_more).toBe(true);
    const rest = expectPage(await ctx.api.request('GET', `/v2/pipelines/${pipeline.id}/backfills?limit=2&order=desc&cursor=${encodeURIComponent(newest.next_cursor!)}`));
    expect(rest.data.map((b) => b.id)).toEqual([ids[0]]);
    const oldest = expectPage(await ctx.api.request('GET', `/v2/pipelines/${pipeline.id}/backfills`));
    expect(oldest.data.map((b) => b.id)).toEqual(ids);
    // Another pipeline's list does not hold them.
    const other = await createPipeline(ctx.api);
    expect(expectPage(await ctx.api.request('GET', `/v2/pipelines/${other.id}/backfills`)).data).toEqual([]);
    expectProblem(await ctx.api.request('GET', `/v2/pipelines/${ghostId('pip')}/backfills`), 404, 'not_found');
  });

  it('cancel ends a queued or running backfill for good; an ended one answers 409 with its state', async () => {
    const pipeline = await createPipeline(ctx.api);
    const queued = (await ctx.api.request('POST', `/v2/pipelines/${pipeline.id}/backfills`)).body;
    const cancelled = await ctx.api.request('POST', `/v2/backfills/${queued.id}/cancel`);
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body).toMatchObject({ id: queued.id, state: 'cancelled', finished_at: new Date(ctx.clock.now()).toISOString() });
    expect((await ctx.api.request('GET', `/v2/backfills/${queued.id}`)).body.state).toBe('cancelled');
    expect(expectProblem(await ctx.api.request('POST', `/v2/backfills/${queued.id}/cancel`), 409, 'invalid_state_transition').current_status).toBe('cancelled');

    const running = await insertBackfill(ctx.api, pipeline.id, 'running');
    expect((await ctx.api.request('POST', `/v2/backfills/${running.id}/cancel`)).body.state).toBe('cancelled');
    const done = await insertBackfill(ctx.api, pipeline.id, 'succeeded');
    expect(expectProblem(await ctx.api.request('POST', `/v2/backfills/${done.id}/cancel`), 409, 'invalid_state_transition').current_status).toBe('succeeded');
    expectProblem(await ctx.api.request('POST', `/v2/backfills/${ghostId('bfl')}/cancel`), 404, 'not_found');
  });

  it('a running backfill of a paused pipeline shows paused', async () => {
    const pipeline = await createPipeline(ctx.api, { activate: true });
    const running = await insertBackfill(ctx.api, pipeline.id, 'running');
    const queued = await insertBackfill(ctx.api, pipeline.id, 'queued');
    expect((await ctx.api.request('POST', `/v2/pipelines/${pipeline.id}/pause`)).status).toBe(200);
    expect((await ctx.api.request('GET', `/v2/backfills/${running.id}`)).body.state).toBe('paused');
    expect((await ctx.api.request('GET', `/v2/backfills/${queued.id}`)).body.state).toBe('queued');
    expect((await ctx.api.request('POST', `/v2/pipelines/${pipeline.id}/activate`)).status).toBe(200);
    expect((await ctx.api.request('GET', `/v2/backfills/${running.id}`)).body.state).toBe('running');
  });

  it('refuses what the source refuses, with its code, and bodies that do not fit, before recording anything', async () => {
    const pipeline = await createPipeline(ctx.api);
    const post = (body: unknown) => ctx.api.request('POST', `/v2/pipelines/${pipeline.id}/backfills`, { body });
    expectFieldError(expectProblemOf(await post({ tables: ['nope'] }), 400, 'validation_failed'), '/tables', 'unknown_table');
    expect(expectProblem(await post({ tables: ['nokey'] }), 422, 'backfill_needs_key').detail).toContain('public.nokey');
    expectProblem(await post({ tables: ['items'], where: { 'public.items': 'invalid' } }), 422, 'invalid_where');
    // A filter of a table the backfill does not read.
    expectFieldError(expectProblemOf(await post({ tables: ['items'], where: { orders: 'id > 1' } }), 400, 'validation_failed'), '/tables', 'unknown_table');
    expectFieldError(expectProblemOf(await post({ chunk_size: 0 }), 400, 'validation_failed'), '/chunk_size', 'out_of_range');
    expectFieldError(expectProblemOf(await post({ tables: [] }), 400, 'validation_failed'), '/tables', 'too_short');
    expectFieldError(expectProblemOf(await post({ snapshot: true }), 400, 'validation_failed'), '/snapshot', 'unknown_field');
    expectProblem(await ctx.api.request('POST', `/v2/pipelines/${ghostId('pip')}/backfills`), 404, 'not_found');
    // A source whose type has nothing to read again.
    const webhookSource = await createConnector(ctx.api, { type: 'webhook', direction: 'source', config: {} });
    const fed = await createPipeline(ctx.api, { source_connector_id: webhookSource.id });
    expectProblem(await ctx.api.request('POST', `/v2/pipelines/${fed.id}/backfills`), 422, 'backfill_unsupported');
    expect(expectPage(await ctx.api.request('GET', `/v2/pipelines/${pipeline.id}/backfills`)).data).toEqual([]);
  });

  it('keeps workspaces apart and asks for the pipeline scopes', async () => {
    const pipeline = await createPipeline(ctx.api);
    const backfill = (await ctx.api.request('POST', `/v2/pipelines/${pipeline.id}/backfills`)).body;
    const stranger = await ctx.api.key(['write'], 'other-ws');
    expectProblem(await ctx.api.request('GET', `/v2/backfills/${backfill.id}`, { key: stranger }), 404, 'not_found');
    expectProblem(await ctx.api.request('POST', `/v2/backfills/${backfill.id}/cancel`, { key: stranger }), 404, 'not_found');
    expectProblem(await ctx.api.request('GET', `/v2/pipelines/${pipeline.id}/backfills`, { key: stranger }), 404, 'not_found');
    const reader = await ctx.api.key(['pipelines:read']);
    expect((await ctx.api.request('GET', `/v2/backfills/${backfill.id}`, { key: reader })).status).toBe(200);
    expectProblem(await ctx.api.request('POST', `/v2/backfills/${backfill.id}/cancel`, { key: reader }), 403, 'forbidden');
    expectProblem(await ctx.api.request('POST', `/v2/pipelines/${pipeline.id}/backfills`, { key: reader }), 403, 'forbidden');
  });
});

/** {@link expectProblem}, answering the response for more checks. */
function expectProblemOf(res: Parameters<typeof expectProblem>[0], status: number, code: string): Parameters<typeof expectProblem>[0] {
  expectProblem(res, status, code);
  return res;
}

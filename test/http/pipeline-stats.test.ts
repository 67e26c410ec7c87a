/**
 * `GET /v2/pipelines/{id}/stats` (docs/api.md, Pipeline statistics) on both adapters and both
 * storages: the answer's shape (a dense window ending with the current minute, the dead-lettered
 * and replaying counts), the `minutes` parameter's bounds, workspace isolation and the scope.
 * Minute rows and events are written straight into storage, as the HTTP suite drives no pipeline
 * (test/engine/pipeline-stats.test.ts counts real batches).
 */
import { expect, it } from 'vitest';
import { engineContext } from '@ferry/core/internal';
import { describeMatrix } from './harness.js';
import { createPipeline, expectFieldError, expectProblem, ghostId, insertEvents } from './fixtures.js';

const MINUTE = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();

describeMatrix('pipeline stats', (ctx) => {
  /** The start of the current minute of the cell's clock, in ms. */
  const currentMinute = () => ctx.clock.now() - (ctx.clock.now() % MINUTE);

  async function countedPipeline(): Promise<string> {
    const pipeline = await createPipeline(ctx.api);
    const minutes = engineContext(ctx.api.engine).storage.repos.pipelineMinutes;
    const row = (minuteMs: number, read: number, dead: number) => ({
      pipeline_id: pipeline.id, workspace_id: 'default', minute: iso(minuteMs),
      events_read: read, events_written: read - dead - 1, events_filtered: 1, events_dead_lettered: dead,
    });
    const now = currentMinute();
    await minutes.add(row(now, 10, 2));
    await minutes.add(row(now - MINUTE, 4, 0));
    // Two hours ago: outside the default window.
    await minutes.add(row(now - 120 * MINUTE, 99, 0));
    const at = iso(ctx.clock.now());
    await insertEvents(ctx.api, pipeline.id, [{ occurred_at: at, status: 'dead_lettered' }, { occurred_at: at, status: 'dead_lettered' }, { occurred_at: at, status: 'replaying' }, { occurred_at: at }]);
    return pipeline.id;
  }

  it('answers 200 with the last hour, one entry per minute ending with the current one, and the open dead letters', async () => {
    const id = await countedPipeline();
    const now = currentMinute();
    const res = await ctx.api.request('GET', `/v2/pipelines/${id}/stats`);
    expect(res.status, res.text).toBe(200);
    expect(res.headers['content-type']).toBe('application/json');
    expect(Object.keys(res.body).sort()).toEqual(['dead_lettered', 'minutes', 'per_minute', 'pipeline_id', 'replaying', 'since', 'until']);
    expect(res.body).toMatchObject({ pipeline_id: id, minutes: 60, since: iso(now - 59 * MINUTE), until: iso(now + MINUTE), dead_lettered: 2, replaying: 1 });
    const perMinute = res.body.per_minute as Array<Record<string, unknown>>;
    expect(perMinute.map((m) => m.minute)).toEqual(Array.from({ length: 60 }, (_, i) => iso(now - (59 - i) * MINUTE)));
    expect(perMinute.slice(-2)).toEqual([
      { minute: iso(now - MINUTE), events_read: 4, events_written: 3, events_filtered: 1, events_dead_lettered: 0 },
      { minute: iso(now), events_read: 10, events_written: 7, events_filtered: 1, events_dead_lettered: 2 },
    ]);
    expect(perMinute.slice(0, -2).every((m) => m.events_read === 0 && m.events_written === 0 && m.events_filtered === 0 && m.events_dead_lettered === 0)).toBe(true);

    const two = await ctx.api.request('GET', `/v2/pipelines/${id}/stats?minutes=2`);
    expect(two.status, two.text).toBe(200);
    expect(two.body).toMatchObject({ minutes: 2, since: iso(now - MINUTE), per_minute: perMinute.slice(-2) });
    const day = await ctx.api.request('GET', `/v2/pipelines/${id}/stats?minutes=1440`);
    expect(day.body.per_minute).toHaveLength(1440);
    expect(day.body.per_minute[1440 - 121]).toMatchObject({ minute: iso(now - 120 * MINUTE), events_read: 99 });
  });

  it('refuses a minutes that is not an integer from 1 to 1440, and any other parameter, with 400 validation_failed', async () => {
    const pipeline = await createPipeline(ctx.api);
    const path = `/v2/pipelines/${pipeline.id}/stats`;
    for (const [query, code] of [['minutes=0', 'out_of_range'], ['minutes=1441', 'out_of_range'], ['minutes=-5', 'out_of_range'], ['minutes=abc', 'type'], ['minutes=1.5', 'type'], ['minutes=', 'type'], ['minutes=1&minutes=2', 'type']] as const) {
      const res = await ctx.api.request('GET', `${path}?${query}`);
      expectProblem(res, 400, 'validation_failed');
      expectFieldError(res, '/minutes', code);
    }
    const unknown = await ctx.api.request('GET', `${path}?minutes=5&since=2026-01-01T00:00:00Z`);
    expectProblem(unknown, 400, 'validation_failed');
    expectFieldError(unknown, '/since', 'unknown_field');
    expect((await ctx.api.request('GET', `${path}?minutes=1`)).body.per_minute).toHaveLength(1);
  });

  it("is 404 for another workspace's pipeline and an unknown id, 403 for a key without pipelines:read", async () => {
    const otherKey = await ctx.api.key(['write'], 'stats-other');
    const theirs = await createPipeline(ctx.api, {}, otherKey);
    expectProblem(await ctx.api.request('GET', `/v2/pipelines/${theirs.id}/stats`), 404, 'not_found');
    expectProblem(await ctx.api.request('GET', `/v2/pipelines/${ghostId('pip')}/stats`), 404, 'not_found');
    expect((await ctx.api.request('GET', `/v2/pipelines/${theirs.id}/stats`, { key: otherKey })).status).toBe(200);

    const mine = await createPipeline(ctx.api);
    for (const scopes of [['events:read'], ['webhooks:read', 'connectors:write']]) {
      expectProblem(await ctx.api.request('GET', `/v2/pipelines/${mine.id}/stats`, { key: await ctx.api.key(scopes) }), 403, 'forbidden');
    }
    for (const scopes of [['pipelines:read'], ['read']]) {
      expect((await ctx.api.request('GET', `/v2/pipelines/${mine.id}/stats`, { key: await ctx.api.key(scopes) })).status).toBe(200);
    }
  });
});

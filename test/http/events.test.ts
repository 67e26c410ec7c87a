/**
 * The events listing and replay (docs/api.md, Events). Events come from running pipelines, which
 * this suite does not drive: rows are written into storage (fixtures.insertEvents) and the
 * routes are checked on them.
 */
import { expect, it } from 'vitest';
import { describeMatrix } from './harness.js';
import { createPipeline, expectFieldError, expectPage, expectProblem, ghostId, insertEvents } from './fixtures.js';

const at = (day: number, hour = 0) => `2026-11-${String(day).padStart(2, '0')}T${String(hour).padStart(2, '0')}:00:00.000Z`;

describeMatrix('events', (ctx) => {
  async function seeded() {
    const p = await createPipeline(ctx.api);
    // Recorded out of time order: the listing is in log order, the order they were recorded.
    const rows = await insertEvents(ctx.api, p.id, [
      { occurred_at: at(3), type: 'order.created' },
      { occurred_at: at(1), type: 'order.created' },
      { occurred_at: at(2), type: 'order.paid', status: 'dead_lettered' },
      { occurred_at: at(4), type: 'order.paid', status: 'filtered' },
      { occurred_at: at(5), type: 'order.created', status: 'dead_lettered' },
    ]);
    return { p, rows };
  }

  it('lists a pipeline\'s events in log order with the record fields', async () => {
    const { p, rows } = await seeded();
    const page = expectPage(await ctx.api.request('GET', `/v2/pipelines/${p.id}/events`));
    expect(page.data.map((e: { occurred_at: string }) => e.occurred_at)).toEqual([at(3), at(1), at(2), at(4), at(5)]);
    expect(page.has_more).toBe(false);
    const dead = page.data.find((e: { id: string }) => e.id === rows[2]!.id);
    expect(dead).toMatchObject({ id: rows[2]!.id, type: 'order.paid', occurred_at: at(2), payload: rows[2]!.payload, status: 'dead_lettered', attempts: 3, error: { stage: 'destination', code: expect.any(String), message: expect.any(String) }, dead_lettered_at: expect.any(String) });
    expect(page.data[0]).toMatchObject({ status: 'delivered', error: null, dead_lettered_at: null });
  });

  it('filters by type, status, since (inclusive) and until (exclusive)', async () => {
    const { p } = await seeded();
    const base = `/v2/pipelines/${p.id}/events`;
    const times = async (q: string) => expectPage(await ctx.api.request('GET', `${base}?${q}`)).data.map((e: { occurred_at: string }) => e.occurred_at);
    expect(await times('type=order.paid')).toEqual([at(2), at(4)]);
    expect(await times('status=dead_lettered')).toEqual([at(2), at(5)]);
    expect(await times(`since=${encodeURIComponent(at(2))}`)).toEqual([at(3), at(2), at(4), at(5)]);
    expect(await times(`until=${encodeURIComponent(at(3))}`)).toEqual([at(1), at(2)]);
    expect(await times(`since=${encodeURIComponent(at(2))}&until=${encodeURIComponent(at(4))}&type=order.created`)).toEqual([at(3)]);
    // An offset is accepted and compared in UTC.
    expect(await times(`since=${encodeURIComponent('2026-11-02T01:00:00.000+01:00')}&until=${encodeURIComponent(at(3))}`)).toEqual([at(2)]);
  });

  it('bad filters are 400 with pointers', async () => {
    const { p } = await seeded();
    const base = `/v2/pipelines/${p.id}/events`;
    const since = await ctx.api.request('GET', `${base}?since=yesterday`);
    expectProblem(since, 400, 'validation_failed');
    expectFieldError(since, '/since', 'format');
    const status = await ctx.api.request('GET', `${base}?status=lost`);
    expectProblem(status, 400, 'validation_failed');
    expectFieldError(status, '/status', 'enum');
    const limit = await ctx.api.request('GET', `${base}?limit=1.5`);
    expectFieldError(limit, '/limit', 'invalid_limit');
    expectFieldError(await ctx.api.request('GET', `${base}?foo=bar`), '/foo', 'unknown_field');
  });

  it('pages with next_cursor set whenever data is non-empty, so a client can tail', async () => {
    const { p } = await seeded();
    const base = `/v2/pipelines/${p.id}/events`;
    const first = expectPage(await ctx.api.request('GET', `${base}?limit=3`));
    expect(first.data).toHaveLength(3);
    expect(first.has_more).toBe(true);
    const second = expectPage(await ctx.api.request('GET', `${base}?limit=3&cursor=${encodeURIComponent(first.next_cursor!)}`));
    expect(second.data.map((e: { occurred_at: string }) => e.occurred_at)).toEqual([at(4), at(5)]);
    expect(second.has_more).toBe(false);
    expect(second.next_cursor).toEqual(expect.any(String));
    // Tailing: a new event after the last one shows up from the last cursor.
    await insertEvents(ctx.api, p.id, [{ occurred_at: at(6) }]);
    const tail = expectPage(await ctx.api.request('GET', `${base}?limit=3&cursor=${encodeURIComponent(second.next_cursor!)}`));
    expect(tail.data.map((e: { occurred_at: string }) => e.occurred_at)).toEqual([at(6)]);
    // Cursors are bound to their filters and their pipeline.
    expectProblem(await ctx.api.request('GET', `${base}?limit=3&type=order.paid&cursor=${encodeURIComponent(first.next_cursor!)}`), 400, 'invalid_cursor');
    const other = await createPipeline(ctx.api);
    expectProblem(await ctx.api.request('GET', `/v2/pipelines/${other.id}/events?limit=3&cursor=${encodeURIComponent(first.next_cursor!)}`), 400, 'invalid_cursor');
    const c = first.next_cursor!;
    expectProblem(await ctx.api.request('GET', `${base}?limit=3&cursor=${encodeURIComponent(`${c.slice(0, -3)}${c.at(-3) === 'x' ? 'y' : 'x'}${c.slice(-2)}`)}`), 400, 'invalid_cursor');
  });

  it('?order=desc lists the last recorded first, and its cursor is refused by the other order; a bad order is 400', async () => {
    const { p } = await seeded();
    const first = expectPage(await ctx.api.request('GET', `/v2/pipelines/${p.id}/events?order=desc&limit=2`));
    expect(first.data.map((e: { occurred_at: string }) => e.occurred_at)).toEqual([at(5), at(4)]);
    const rest = expectPage(await ctx.api.request('GET', `/v2/pipelines/${p.id}/events?order=desc&limit=10&cursor=${encodeURIComponent(first.next_cursor!)}`));
    expect(rest.data.map((e: { occurred_at: string }) => e.occurred_at)).toEqual([at(2), at(1), at(3)]);
    expectProblem(await ctx.api.request('GET', `/v2/pipelines/${p.id}/events?cursor=${encodeURIComponent(first.next_cursor!)}`), 400, 'invalid_cursor');
    const bad = await ctx.api.request('GET', `/v2/pipelines/${p.id}/events?order=newest`);
    expectProblem(bad, 400, 'validation_failed');
    expectFieldError(bad, '/order', 'enum');
    const newest = await createPipeline(ctx.api);
    expect(expectPage(await ctx.api.request('GET', '/v2/pipelines?order=desc&limit=1')).data.map((x: { id: string }) => x.id)).toEqual([newest.id]);
  });

  it('an empty listing is { data: [], next_cursor: null, has_more: false }; unknown pipeline is 404', async () => {
    const p = await createPipeline(ctx.api);
    expect(expectPage(await ctx.api.request('GET', `/v2/pipelines/${p.id}/events`))).toEqual({ data: [], next_cursor: null, has_more: false });
    expectProblem(await ctx.api.request('GET', `/v2/pipelines/${ghostId('pip')}/events`), 404, 'not_found');
  });

  it('GET /v2/events/{id}: one event of any pipeline of the workspace; unknown or another workspace is 404', async () => {
    const { p, rows } = await seeded();
    const res = await ctx.api.request('GET', `/v2/events/${rows[2]!.id}`);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: rows[2]!.id, pipeline_id: p.id, type: 'order.paid', occurred_at: at(2), payload: rows[2]!.payload, status: 'dead_lettered', attempts: 3 });
    expectProblem(await ctx.api.request('GET', `/v2/events/${ghostId('evt')}`), 404, 'not_found');
    expectProblem(await ctx.api.request('GET', `/v2/events/${rows[2]!.id}`, { key: await ctx.api.key(['read'], 'ws_elsewhere') }), 404, 'not_found');
  });

  it('POST /v2/events/{id}/replay: 202 with status replaying for a dead-lettered event', async () => {
    const { p, rows } = await seeded();
    const res = await ctx.api.request('POST', `/v2/events/${rows[2]!.id}/replay`);
    expect(res.status, res.text).toBe(202);
    expect(res.body).toMatchObject({ id: rows[2]!.id, type: 'order.paid', status: 'replaying' });
    const listed = expectPage(await ctx.api.request('GET', `/v2/pipelines/${p.id}/events?status=replaying`));
    expect(listed.data.map((e: { id: string }) => e.id)).toEqual([rows[2]!.id]);
  });

  it('replaying an event in any other status is 409 event_not_dead_lettered with current_status', async () => {
    const { rows } = await seeded();
    const delivered = await ctx.api.request('POST', `/v2/events/${rows[0]!.id}/replay`);
    expect(expectProblem(delivered, 409, 'event_not_dead_lettered').current_status).toBe('delivered');
    const filtered = await ctx.api.request('POST', `/v2/events/${rows[3]!.id}/replay`);
    expect(expectProblem(filtered, 409, 'event_not_dead_lettered').current_status).toBe('filtered');
    expect((await ctx.api.request('POST', `/v2/events/${rows[4]!.id}/replay`)).status).toBe(202);
    const twice = await ctx.api.request('POST', `/v2/events/${rows[4]!.id}/replay`);
    expect(expectProblem(twice, 409, 'event_not_dead_lettered').current_status).toBe('replaying');
    expectProblem(await ctx.api.request('POST', `/v2/events/${ghostId('evt')}/replay`), 404, 'not_found');
  });

  it('POST /v2/pipelines/{id}/events/replay replays every matching dead-lettered event: 202 { count }', async () => {
    const { p } = await seeded();
    const typed = await ctx.api.request('POST', `/v2/pipelines/${p.id}/events/replay`, { body: { type: 'order.paid' } });
    expect(typed.status, typed.text).toBe(202);
    expect(typed.body).toEqual({ count: 1 });
    const rest = await ctx.api.request('POST', `/v2/pipelines/${p.id}/events/replay`, { body: { since: at(3) } });
    expect(rest.status, rest.text).toBe(202);
    expect(rest.body).toEqual({ count: 1 });
    const none = await ctx.api.request('POST', `/v2/pipelines/${p.id}/events/replay`, { body: { since: at(1), until: at(2) } });
    expect(none.body).toEqual({ count: 0 });
    const bad = await ctx.api.request('POST', `/v2/pipelines/${p.id}/events/replay`, { body: { since: 'soon', bogus: 1 } });
    expectProblem(bad, 400, 'validation_failed');
    expectFieldError(bad, '/bogus', 'unknown_field');
    expectProblem(await ctx.api.request('POST', `/v2/pipelines/${ghostId('pip')}/events/replay`, { body: {} }), 404, 'not_found');
  });
});

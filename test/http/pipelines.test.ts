/**
 * Pipeline routes (docs/api.md, Pipelines and Runs): create (draft or active), list with filters, get with
 * last_run, update, delete, activate, pause, runs.
 */
import { expect, it } from 'vitest';
import { describeMatrix } from './harness.js';
import { createConnector, createPipeline, expectFieldError, expectPage, expectProblem, ghostId, unique } from './fixtures.js';

describeMatrix('pipelines', (ctx) => {
  async function connectors(): Promise<{ src: string; dst: string }> {
    const src = await createConnector(ctx.api, { direction: 'source' });
    const dst = await createConnector(ctx.api, { direction: 'destination' });
    return { src: src.id, dst: dst.id };
  }

  it('POST creates a draft pipeline: 201, Location, the record', async () => {
    const { src, dst } = await connectors();
    const name = `orders-${unique()}`;
    const res = await ctx.api.request('POST', '/v2/pipelines', {
      body: { name, source_connector_id: src, destination_connector_id: dst, transforms: [{ type: 'drop', paths: ['secret'] }], schedule: '*/5 * * * *' },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      id: expect.stringMatching(/^pip_[0-9A-HJKMNP-TV-Z]{26}$/),
      name,
      source_connector_id: src,
      destination_connector_id: dst,
      transforms: [{ type: 'drop', paths: ['secret'] }],
      schedule: '*/5 * * * *',
      state: 'draft',
    });
    expect(res.headers.location).toBe(`/v2/pipelines/${res.body.id}`);
  });

  it('"activate": true creates it active; without schedule it is streaming (schedule null)', async () => {
    const { src, dst } = await connectors();
    const res = await ctx.api.request('POST', '/v2/pipelines', { body: { name: `s-${unique()}`, source_connector_id: src, destination_connector_id: dst, activate: true } });
    expect(res.status, res.text).toBe(201);
    expect(res.body.state).toBe('active');
    expect(res.body.schedule ?? null).toBeNull();
  });

  it('a taken name is 409 name_taken; names are per workspace', async () => {
    const { src, dst } = await connectors();
    const name = `dup-${unique()}`;
    expect((await ctx.api.request('POST', '/v2/pipelines', { body: { name, source_connector_id: src, destination_connector_id: dst } })).status).toBe(201);
    expectProblem(await ctx.api.request('POST', '/v2/pipelines', { body: { name, source_connector_id: src, destination_connector_id: dst } }), 409, 'name_taken');
    const otherKey = await ctx.api.key(['write'], 'pipelines-other');
    await createPipeline(ctx.api, { name }, otherKey);
  });

  it('missing, unknown and read-only fields are 400 with every field error', async () => {
    const res = await ctx.api.request('POST', '/v2/pipelines', { body: { state: 'active', colour: 'red', last_run: null } });
    expectProblem(res, 400, 'validation_failed');
    expectFieldError(res, '/name', 'required');
    expectFieldError(res, '/source_connector_id', 'required');
    expectFieldError(res, '/destination_connector_id', 'required');
    expectFieldError(res, '/colour', 'unknown_field');
    expectFieldError(res, '/state', 'read_only');
    expectFieldError(res, '/last_run', 'read_only');
  });

  it('an invalid transform step is 400 with the step index in the pointer', async () => {
    const { src, dst } = await connectors();
    const res = await ctx.api.request('POST', '/v2/pipelines', {
      body: { name: `t-${unique()}`, source_connector_id: src, destination_connector_id: dst, transforms: [{ type: 'set', path: 'a', value: 1 }, { type: 'filter', path: 'a', op: 'nope', value: 1 }, { type: 'teleport' }] },
    });
    expectProblem(res, 400, 'validation_failed');
    const pointers = res.body.errors.map((e: { pointer: string }) => e.pointer);
    expect(pointers.some((p: string) => p.startsWith('/transforms/1'))).toBe(true);
    expect(pointers.some((p: string) => p.startsWith('/transforms/2'))).toBe(true);
    expect(pointers.some((p: string) => p.startsWith('/transforms/0'))).toBe(false);
  });

  it('a matches pattern runs in linear time: backtracking bombs are accepted, backreferences and lookaround are 400 unsafe_pattern', async () => {
    const { src, dst } = await connectors();
    const body = (value: string, extra: object[] = []) => ({ name: `re-${unique()}`, source_connector_id: src, destination_connector_id: dst, transforms: [...extra, { type: 'filter', path: 'name', op: 'matches', value }] });
    for (const value of ['(a|a)*$', '(a|aa)+$', '^(a+)+$']) {
      expect((await ctx.api.request('POST', '/v2/pipelines', { body: body(value) })).status).toBe(201);
    }
    for (const value of ['(a*)\\1*b', '(?=a)b', '(?<!a)b']) {
      const res = await ctx.api.request('POST', '/v2/pipelines', { body: body(value) });
      expectProblem(res, 400, 'unsafe_pattern');
      expectFieldError(res, '/transforms/0/value', 'unsafe_pattern');
    }
    // With another problem besides, the request is invalid and both are listed.
    const mixed = await ctx.api.request('POST', '/v2/pipelines', { body: body('(a*)\\1*b', [{ type: 'teleport' }]) });
    expectProblem(mixed, 400, 'validation_failed');
    expectFieldError(mixed, '/transforms/1/value', 'unsafe_pattern');
  });

  it('422 invalid_reference, invalid_direction, invalid_schedule', async () => {
    const { src, dst } = await connectors();
    const ref = await ctx.api.request('POST', '/v2/pipelines', { body: { name: `x-${unique()}`, source_connector_id: ghostId('con'), destination_connector_id: dst } });
    expectProblem(ref, 422, 'invalid_reference');
    expectFieldError(ref, '/source_connector_id', 'invalid_reference');
    const dir = await ctx.api.request('POST', '/v2/pipelines', { body: { name: `x-${unique()}`, source_connector_id: dst, destination_connector_id: src } });
    expectProblem(dir, 422, 'invalid_direction');
    for (const schedule of ['not a cron', '* * *', '@daily', '61 * * * *']) {
      expectProblem(await ctx.api.request('POST', '/v2/pipelines', { body: { name: `x-${unique()}`, source_connector_id: src, destination_connector_id: dst, schedule } }), 422, 'invalid_schedule');
    }
    // A bidirectional webhook connector may be either end.
    const both = await createConnector(ctx.api, { type: 'webhook', direction: 'bidirectional', config: {} });
    expect((await ctx.api.request('POST', '/v2/pipelines', { body: { name: `b-${unique()}`, source_connector_id: both.id, destination_connector_id: dst } })).status).toBe(201);
    expect((await ctx.api.request('POST', '/v2/pipelines', { body: { name: `b-${unique()}`, source_connector_id: src, destination_connector_id: both.id } })).status).toBe(201);
  });

  it('GET /v2/pipelines lists with state and name filters', async () => {
    const key = await ctx.api.key(['write'], `plist-${ctx.adapter}-${ctx.storage}`);
    const a = await createPipeline(ctx.api, {}, key);
    const b = await createPipeline(ctx.api, { activate: true }, key);
    const all = expectPage(await ctx.api.request('GET', '/v2/pipelines', { key }));
    expect(all.data.map((p: { id: string }) => p.id)).toEqual([a.id, b.id]);
    expect(all.data.every((p: { state: string }) => typeof p.state === 'string')).toBe(true);
    expect(expectPage(await ctx.api.request('GET', '/v2/pipelines?state=active', { key })).data.map((p: { id: string }) => p.id)).toEqual([b.id]);
    expect(expectPage(await ctx.api.request('GET', `/v2/pipelines?name=${encodeURIComponent(a.name)}`, { key })).data.map((p: { id: string }) => p.id)).toEqual([a.id]);
    const bad = await ctx.api.request('GET', '/v2/pipelines?state=running', { key });
    expectProblem(bad, 400, 'validation_failed');
    expectFieldError(bad, '/state', 'enum');
    const page = expectPage(await ctx.api.request('GET', '/v2/pipelines?limit=1', { key }));
    expect(page.has_more).toBe(true);
    expectProblem(await ctx.api.request('GET', `/v2/pipelines?limit=1&state=draft&cursor=${encodeURIComponent(page.next_cursor!)}`, { key }), 400, 'invalid_cursor');
    const next = expectPage(await ctx.api.request('GET', `/v2/pipelines?limit=1&cursor=${encodeURIComponent(page.next_cursor!)}`, { key }));
    expect(next.data.map((p: { id: string }) => p.id)).toEqual([b.id]);
  });

  it('GET /v2/pipelines/{id} includes last_run; unknown id is 404', async () => {
    const p = await createPipeline(ctx.api);
    const res = await ctx.api.request('GET', `/v2/pipelines/${p.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toHaveProperty('last_run', null);
    expectProblem(await ctx.api.request('GET', `/v2/pipelines/${ghostId('pip')}`), 404, 'not_found');
  });

  it('PATCH updates name, transforms, schedule (null makes it streaming); read-only fields are 400', async () => {
    const p = await createPipeline(ctx.api, { schedule: '0 * * * *' });
    const res = await ctx.api.request('PATCH', `/v2/pipelines/${p.id}`, { body: { name: `renamed-${unique()}`, transforms: [{ type: 'rename', from: 'a', to: 'b' }], schedule: null } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.schedule ?? null).toBeNull();
    expect(res.body.transforms).toEqual([{ type: 'rename', from: 'a', to: 'b' }]);
    for (const field of ['source_connector_id', 'destination_connector_id', 'state', 'id', 'activate']) {
      const ro = await ctx.api.request('PATCH', `/v2/pipelines/${p.id}`, { body: { [field]: field === 'activate' ? true : 'x' } });
      expectProblem(ro, 400, 'validation_failed');
      expectFieldError(ro, `/${field}`, 'read_only');
    }
    expectProblem(await ctx.api.request('PATCH', `/v2/pipelines/${p.id}`, { body: { schedule: 'nope' } }), 422, 'invalid_schedule');
    expectProblem(await ctx.api.request('PATCH', `/v2/pipelines/${ghostId('pip')}`, { body: { name: 'x' } }), 404, 'not_found');
  });

  it('event_log: defaults, set on create, PATCH keeps the field left out, bad values are field errors', async () => {
    const { src, dst } = await connectors();
    const plain = await ctx.api.request('POST', '/v2/pipelines', { body: { name: `log-${unique()}`, source_connector_id: src, destination_connector_id: dst } });
    expect(plain.body.event_log).toEqual({ payloads: 'all', retention_days: null });
    const lean = await ctx.api.request('POST', '/v2/pipelines', { body: { name: `log-${unique()}`, source_connector_id: src, destination_connector_id: dst, event_log: { payloads: 'failed' } } });
    expect(lean.status, lean.text).toBe(201);
    expect(lean.body.event_log).toEqual({ payloads: 'failed', retention_days: null });
    const patched = await ctx.api.request('PATCH', `/v2/pipelines/${lean.body.id}`, { body: { event_log: { retention_days: 30 } } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.event_log).toEqual({ payloads: 'failed', retention_days: 30 });
    expect((await ctx.api.request('GET', `/v2/pipelines/${lean.body.id}`)).body.event_log).toEqual({ payloads: 'failed', retention_days: 30 });
    for (const [event_log, pointer, code] of [
      [{ payloads: 'some' }, '/event_log/payloads', 'enum'],
      [{ retention_days: 0 }, '/event_log/retention_days', 'out_of_range'],
      [{ retention_days: 3651 }, '/event_log/retention_days', 'out_of_range'],
      [{ retention_days: 1.5 }, '/event_log/retention_days', 'type'],
      [{ keep: true }, '/event_log/keep', 'unknown_field'],
      ['all', '/event_log', 'type'],
    ] as const) {
      const bad = await ctx.api.request('PATCH', `/v2/pipelines/${lean.body.id}`, { body: { event_log } });
      expectProblem(bad, 400, 'validation_failed');
      expectFieldError(bad, pointer, code);
    }
  });

  it('activate and pause follow the state machine (409 invalid_state_transition with current_status)', async () => {
    const p = await createPipeline(ctx.api, { schedule: '0 * * * *' });
    expectProblem(await ctx.api.request('POST', `/v2/pipelines/${p.id}/pause`), 409, 'invalid_state_transition');
    const act = await ctx.api.request('POST', `/v2/pipelines/${p.id}/activate`);
    expect(act.status, act.text).toBe(200);
    expect(act.body.state).toBe('active');
    const again = await ctx.api.request('POST', `/v2/pipelines/${p.id}/activate`);
    expect(expectProblem(again, 409, 'invalid_state_transition').current_status).toBe('active');
    const pause = await ctx.api.request('POST', `/v2/pipelines/${p.id}/pause`);
    expect(pause.status, pause.text).toBe(200);
    expect(pause.body.state).toBe('paused');
    const pause2 = await ctx.api.request('POST', `/v2/pipelines/${p.id}/pause`);
    expect(expectProblem(pause2, 409, 'invalid_state_transition').current_status).toBe('paused');
    expect((await ctx.api.request('POST', `/v2/pipelines/${p.id}/activate`, { body: {} })).body.state).toBe('active');
    expectProblem(await ctx.api.request('POST', `/v2/pipelines/${ghostId('pip')}/activate`), 404, 'not_found');
    expectProblem(await ctx.api.request('POST', `/v2/pipelines/${ghostId('pip')}/pause`), 404, 'not_found');
    const withField = await ctx.api.request('POST', `/v2/pipelines/${p.id}/pause`, { body: { force: true } });
    expectProblem(withField, 400, 'validation_failed');
    expectFieldError(withField, '/force', 'unknown_field');
  });

  it('DELETE with nothing in flight is 204, then 404; connectors are kept; the name is free again', async () => {
    const p = await createPipeline(ctx.api);
    const del = await ctx.api.request('DELETE', `/v2/pipelines/${p.id}`);
    expect(del.status, del.text).toBe(204);
    expect(del.text).toBe('');
    expectProblem(await ctx.api.request('GET', `/v2/pipelines/${p.id}`), 404, 'not_found');
    expectProblem(await ctx.api.request('DELETE', `/v2/pipelines/${p.id}`), 404, 'not_found');
    expect((await ctx.api.request('GET', `/v2/connectors/${p.source_connector_id}`)).status).toBe(200);
    const again = await ctx.api.request('POST', '/v2/pipelines', { body: { name: p.name, source_connector_id: p.source_connector_id, destination_connector_id: p.destination_connector_id } });
    expect(again.status, again.text).toBe(201);
  });

  it('POST .../runs is 202 for an active scheduled pipeline and 409 otherwise; GET .../runs lists runs', async () => {
    const p = await createPipeline(ctx.api, { schedule: '0 0 1 1 *' });
    expectProblem(await ctx.api.request('POST', `/v2/pipelines/${p.id}/runs`), 409, 'invalid_state_transition');
    await ctx.api.request('POST', `/v2/pipelines/${p.id}/activate`);
    const run = await ctx.api.request('POST', `/v2/pipelines/${p.id}/runs`);
    expect(run.status, run.text).toBe(202);
    expect(run.body).toMatchObject({ id: expect.stringMatching(/^run_/), status: expect.stringMatching(/^(queued|running|succeeded)$/) });
    const runs = expectPage(await ctx.api.request('GET', `/v2/pipelines/${p.id}/runs`));
    expect(runs.data.map((r: { id: string }) => r.id)).toContain(run.body.id);
    expect(Object.keys(runs.data[0])).toEqual(expect.arrayContaining(['id', 'status', 'started_at', 'finished_at', 'events_read', 'events_written', 'events_dead_lettered', 'error']));
    const streaming = await createPipeline(ctx.api, { activate: true });
    expectProblem(await ctx.api.request('POST', `/v2/pipelines/${streaming.id}/runs`), 409, 'invalid_state_transition');
    await ctx.api.request('POST', `/v2/pipelines/${p.id}/pause`);
    expectProblem(await ctx.api.request('POST', `/v2/pipelines/${p.id}/runs`), 409, 'invalid_state_transition');
    expectProblem(await ctx.api.request('POST', `/v2/pipelines/${ghostId('pip')}/runs`), 404, 'not_found');
    expectProblem(await ctx.api.request('GET', `/v2/pipelines/${ghostId('pip')}/runs`), 404, 'not_found');
    expectProblem(await ctx.api.request('GET', `/v2/pipelines/${p.id}/runs?limit=0`), 400, 'validation_failed');
  });
});

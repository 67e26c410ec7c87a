/**
 * Shared assertions and data builders of the conformance suite: the problem+json shape every
 * error must have, and quick ways to create connectors, pipelines, events and deliveries.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { EventRecord, JsonObject } from '@ferry/core';
import { engineContext, IdGenerator, type BackfillRow, type DeliveryRow, type EventRow } from '@ferry/core/internal';
import { PROBLEM_JSON, type TestApi, type TestResponse } from './harness.js';

/** A well-formed id of the given prefix that names nothing. */
export const ghostId = (prefix: string): string => `${prefix}_01JZZZZZZZZZZZZZZZZZZZZZZZ`;

/**
 * Asserts an RFC 9457 answer (docs/api.md, Errors): status, `application/problem+json`, and
 * `{ type: '/problems/<code>', title, status, detail, code, errors?, request_id }` with the
 * request id also in `X-Request-Id`. Returns the body for further checks.
 */
export function expectProblem(res: TestResponse, status: number, code: string): { errors?: Array<{ pointer: string; code: string; detail: string }>; [k: string]: unknown } {
  expect({ status: res.status, code: res.body?.code }, res.text).toEqual({ status, code });
  expect(res.headers['content-type']).toBe(PROBLEM_JSON);
  const body = res.body as Record<string, unknown>;
  expect(body.type).toBe(`/problems/${code}`);
  expect(body.status).toBe(status);
  expect(typeof body.title).toBe('string');
  expect(typeof body.detail).toBe('string');
  expect(typeof body.request_id).toBe('string');
  expect(body.request_id).toBe(res.headers['x-request-id']);
  const allowed = new Set(['type', 'title', 'status', 'detail', 'code', 'errors', 'request_id', 'current_status']);
  expect(Object.keys(body).filter((k) => !allowed.has(k))).toEqual([]);
  if (body.errors !== undefined) {
    expect(Array.isArray(body.errors)).toBe(true);
    for (const e of body.errors as unknown[]) {
      expect(e).toEqual({ pointer: expect.any(String), code: expect.any(String), detail: expect.any(String) });
    }
  }
  expect(res.text).not.toMatch(/\n\s+at /); // no stack traces
  return body as ReturnType<typeof expectProblem>;
}

/** Asserts a field error `{ pointer, code }` is among the problem's `errors`. */
export function expectFieldError(res: TestResponse, pointer: string, code: string): void {
  const errors = (res.body?.errors ?? []) as Array<{ pointer: string; code: string }>;
  expect(errors.map((e) => ({ pointer: e.pointer, code: e.code })), res.text).toContainEqual({ pointer, code });
}

/** Asserts the list envelope (docs/api.md, Lists). */
export function expectPage(res: TestResponse): { data: any[]; next_cursor: string | null; has_more: boolean } { // eslint-disable-line @typescript-eslint/no-explicit-any
  expect(res.status, res.text).toBe(200);
  expect(res.headers['content-type']).toBe('application/json');
  expect(Object.keys(res.body).sort()).toEqual(['data', 'has_more', 'next_cursor']);
  expect(Array.isArray(res.body.data)).toBe(true);
  expect(typeof res.body.has_more).toBe('boolean');
  expect(res.body.next_cursor === null || typeof res.body.next_cursor === 'string').toBe(true);
  return res.body;
}

/** A unique suffix for names. */
export const unique = (): string => randomUUID().slice(0, 8);

/** Creates a connector through the API (default key) and returns its record. */
export async function createConnector(
  api: TestApi,
  input: { type?: string; direction?: string; config?: JsonObject; name?: string } = {},
  key?: string,
): Promise<any> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const body = {
    type: input.type ?? 'postgres',
    direction: input.direction ?? 'source',
    config: input.config ?? { host: 'db.example.com', password: `pw-${unique()}-secret` },
    ...(input.name !== undefined ? { name: input.name } : {}),
  };
  const res = await api.request('POST', '/v2/connectors', { body, ...(key ? { key } : {}) });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

/** Creates a source and a destination connector and a pipeline between them. */
export async function createPipeline(
  api: TestApi,
  extra: Record<string, unknown> = {},
  key?: string,
): Promise<any> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const source = await createConnector(api, { direction: 'source' }, key);
  const destination = await createConnector(api, { direction: 'destination' }, key);
  const res = await api.request('POST', '/v2/pipelines', {
    body: { name: `p-${unique()}`, source_connector_id: source.id, destination_connector_id: destination.id, ...extra },
    ...(key ? { key } : {}),
  });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

/** Creates a webhook subscription through the API. */
export async function createWebhook(api: TestApi, extra: Record<string, unknown> = {}, key?: string): Promise<any> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const res = await api.request('POST', '/v2/webhooks', {
    body: { url: `https://hooks.example.com/${unique()}`, events: ['pipeline.failed'], ...extra },
    ...(key ? { key } : {}),
  });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

let eventSeq = 0;
const ids = new WeakMap<TestApi, IdGenerator>();
/** Real ids from the api's clock, so they sort like the engine's own. */
const newId = (api: TestApi, kind: 'event' | 'delivery' | 'backfill'): string => {
  let gen = ids.get(api);
  if (!gen) ids.set(api, (gen = new IdGenerator(api.clock)));
  return gen.create(kind);
};

/**
 * Writes pipeline events straight into storage: events only come from running pipelines, which
 * the HTTP suite does not drive, so the listing and replay routes are tested on stored rows.
 */
export async function insertEvents(
  api: TestApi,
  pipelineId: string,
  events: Array<{ type?: string; occurred_at: string; status?: EventRecord['status']; payload?: JsonObject; workspace?: string }>,
): Promise<EventRow[]> {
  const now = new Date(api.clock.now()).toISOString();
  const rows: EventRow[] = events.map((e) => {
    eventSeq += 1;
    const dead = e.status === 'dead_lettered';
    return {
      id: newId(api, 'event'),
      workspace_id: e.workspace ?? 'default',
      pipeline_id: pipelineId,
      type: e.type ?? 'order.created',
      occurred_at: e.occurred_at,
      payload: e.payload ?? { n: eventSeq },
      status: e.status ?? 'delivered',
      attempts: dead ? 3 : 1,
      error: dead ? { stage: 'destination', code: 'record_rejected', message: 'The destination refused the record.' } : null,
      dead_lettered_at: dead ? now : null,
      created_at: now,
      updated_at: now,
    };
  });
  await engineContext(api.engine).storage.repos.events.append(rows);
  for (const row of rows) {
    if (row.status === 'dead_lettered') {
      await engineContext(api.engine).storage.repos.events.putDeadLetter({
        event_id: row.id,
        workspace_id: row.workspace_id,
        pipeline_id: pipelineId,
        stage: 'destination',
        record: { id: row.id, type: row.type, occurred_at: row.occurred_at, payload: row.payload },
        replay_requested_at: null,
        created_at: now,
      });
    }
  }
  return rows;
}

/** Writes a webhook delivery straight into storage (deliveries come from the delivery worker). */
export async function insertDelivery(
  api: TestApi,
  subscriptionId: string,
  status: DeliveryRow['status'],
  createdAt?: string,
  workspace = 'default',
): Promise<DeliveryRow> {
  const at = createdAt ?? new Date(api.clock.now()).toISOString();
  const id = newId(api, 'delivery');
  const eventId = newId(api, 'event');
  const row: DeliveryRow = {
    id,
    workspace_id: workspace,
    subscription_id: subscriptionId,
    event_id: eventId,
    event_type: 'pipeline.failed',
    body: JSON.stringify({ id: eventId, type: 'pipeline.failed', occurred_at: at, data: { pipeline_id: 'pip_x', error: 'internal' } }),
    status,
    attempts: status === 'pending' ? 0 : 8,
    next_attempt_at: status === 'pending' || status === 'retrying' ? at : null,
    cycle_started_at: at,
    last_attempt_at: status === 'pending' ? null : at,
    last_response_status: status === 'failed' ? 500 : status === 'delivered' ? 200 : null,
    last_error: status === 'failed' ? 'HTTP 500' : null,
    created_at: at,
    updated_at: at,
  };
  await engineContext(api.engine).storage.repos.deliveries.insertMany([row]);
  return row;
}

/**
 * Records a backfill of a pipeline straight into storage, in `state`: the suite's pipelines have
 * no source that could be asked for one (test/runtime/postgres-cdc.test.ts runs real ones).
 */
export async function insertBackfill(api: TestApi, pipelineId: string, state: BackfillRow['state'], workspace = 'default'): Promise<BackfillRow> {
  const at = new Date(api.clock.now()).toISOString();
  const ended = state === 'succeeded' || state === 'failed' || state === 'cancelled';
  const row: BackfillRow = {
    id: newId(api, 'backfill'),
    workspace_id: workspace,
    pipeline_id: pipelineId,
    state,
    tables: [{ table: 'public.items', rows_read: ended ? 10 : 0, rows_estimated: 10, state: ended ? 'done' : 'pending' }],
    where: null,
    chunk_size: null,
    rows_read: ended ? 10 : 0,
    error: state === 'failed' ? { code: 'table_not_found', message: 'The table is gone.' } : null,
    created_at: at,
    started_at: state === 'queued' ? null : at,
    finished_at: ended ? at : null,
    updated_at: at,
  };
  await engineContext(api.engine).storage.repos.backfills.insert(row);
  return row;
}

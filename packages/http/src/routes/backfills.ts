import type { CreateBackfillInput } from '@ferry/core';
import { inputSchemas } from '@ferry/core/internal';
import { PAGE_QUERY } from '../query.js';
import type { RouteDefinition } from '../route.js';
import { accepted, ok } from './respond.js';

// A backfill is part of its pipeline: the pipeline scopes cover it.
const scope = { read: { kind: 'api_key', scope: 'pipelines:read' }, write: { kind: 'api_key', scope: 'pipelines:write' } } as const;

/** The backfill routes (docs/api.md, Backfills). */
export const backfillRoutes: RouteDefinition[] = [
  {
    method: 'POST',
    path: '/v2/pipelines/{id}/backfills',
    operationId: 'createBackfill',
    summary: "Re-read tables of the pipeline's source while its changes keep streaming",
    tag: 'Backfills',
    auth: scope.write,
    body: 'optional',
    bodySchema: inputSchemas.createBackfill,
    responses: { 202: { description: 'The backfill, queued: the pipeline runs it after the backfills before it.', schema: 'Backfill' } },
    errors: [404, 409, 422],
    handle: async ({ engine, workspaceId, params, body }) => accepted(await engine.backfills.create(workspaceId, params.id!, (body ?? {}) as CreateBackfillInput)),
  },
  {
    method: 'GET',
    path: '/v2/pipelines/{id}/backfills',
    operationId: 'listBackfills',
    summary: 'List the backfills of a pipeline',
    tag: 'Backfills',
    auth: scope.read,
    body: 'none',
    query: PAGE_QUERY,
    responses: { 200: { description: 'A page of backfills, oldest first unless `order=desc`.', schema: 'Page:Backfill' } },
    errors: [404],
    handle: async ({ engine, workspaceId, params, query }) => ok(await engine.backfills.list(workspaceId, params.id!, query)),
  },
  {
    method: 'GET',
    path: '/v2/backfills/{id}',
    operationId: 'getBackfill',
    summary: 'Get a backfill, with its progress per table',
    tag: 'Backfills',
    auth: scope.read,
    body: 'none',
    responses: { 200: { description: 'The backfill.', schema: 'Backfill' } },
    errors: [404],
    handle: async ({ engine, workspaceId, params }) => ok(await engine.backfills.get(workspaceId, params.id!)),
  },
  {
    method: 'POST',
    path: '/v2/backfills/{id}/cancel',
    operationId: 'cancelBackfill',
    summary: 'Cancel a queued or running backfill',
    tag: 'Backfills',
    auth: scope.write,
    body: 'none',
    responses: { 200: { description: 'The backfill, cancelled: the source stops reading it at its next batch; rows already handed over stay written.', schema: 'Backfill' } },
    errors: [404, 409],
    handle: async ({ engine, workspaceId, params }) => ok(await engine.backfills.cancel(workspaceId, params.id!)),
  },
];

import { ENUMERATIONS, inputSchemas } from '@ferry/core/internal';
import type { Static } from '@sinclair/typebox';
import { PAGE_QUERY } from '../query.js';
import type { RouteDefinition } from '../route.js';
import { accepted, ok } from './respond.js';

const replay = { kind: 'api_key', scope: 'events:replay' } as const;

/** The event log routes: listing, one event, and replay (docs/api.md, Events). */
export const eventRoutes: RouteDefinition[] = [
  {
    method: 'GET',
    path: '/v2/pipelines/{id}/events',
    operationId: 'listEvents',
    summary: 'List the events that flowed through a pipeline, in log order',
    tag: 'Events',
    auth: { kind: 'api_key', scope: 'events:read' },
    body: 'none',
    query: {
      ...PAGE_QUERY,
      type: { kind: 'string', maxLength: 200, description: 'Only events of this type.' },
      since: { kind: 'timestamp', description: 'ISO 8601; occurred_at at or after it.' },
      until: { kind: 'timestamp', description: 'ISO 8601; occurred_at before it.' },
      status: { kind: 'enum', values: ENUMERATIONS.EVENT_STATUSES, description: 'Only events in this status.' },
    },
    responses: { 200: { description: 'A page of events in log order (the order the pipeline recorded them; for change capture, commit order); next_cursor is set whenever data is non-empty, for tailing.', schema: 'Page:Event' } },
    errors: [404],
    handle: async ({ engine, workspaceId, params, query }) => ok(await engine.events.list(workspaceId, params.id!, query)),
  },
  {
    method: 'GET',
    path: '/v2/events/{id}',
    operationId: 'getEvent',
    summary: 'Get one event of any pipeline of the workspace by id',
    tag: 'Events',
    auth: { kind: 'api_key', scope: 'events:read' },
    body: 'none',
    responses: { 200: { description: 'The event.', schema: 'Event' } },
    errors: [404],
    handle: async ({ engine, workspaceId, params }) => ok(await engine.events.get(workspaceId, params.id!)),
  },
  {
    method: 'POST',
    path: '/v2/events/{id}/replay',
    operationId: 'replayEvent',
    summary: 'Replay a dead-lettered event from the stage where it failed',
    tag: 'Events',
    auth: replay,
    body: 'none',
    responses: { 202: { description: 'The event, status `replaying`.', schema: 'Event' } },
    errors: [404, 409],
    handle: async ({ engine, workspaceId, params }) => accepted(await engine.events.replay(workspaceId, params.id!)),
  },
  {
    method: 'POST',
    path: '/v2/pipelines/{id}/events/replay',
    operationId: 'replayEvents',
    summary: 'Replay every matching dead-lettered event of a pipeline',
    tag: 'Events',
    auth: replay,
    body: 'optional',
    bodySchema: inputSchemas.bulkReplay,
    responses: { 202: { description: 'How many events were queued for replay.', schema: 'Count' } },
    errors: [404],
    handle: async ({ engine, workspaceId, params, body }) => accepted(await engine.events.replayMany(workspaceId, params.id!, (body ?? {}) as Static<typeof inputSchemas.bulkReplay>)),
  },
];

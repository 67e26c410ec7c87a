import { MAX_INGEST_EVENTS } from '@ferry/core/internal';
import { Type } from '@sinclair/typebox';
import type { RouteDefinition } from '../route.js';
import { accepted } from './respond.js';

const IngestEvent = Type.Object(
  {
    type: Type.String({ minLength: 1, maxLength: 200 }),
    occurred_at: Type.Optional(Type.String({ format: 'date-time' })),
    payload: Type.Object({}, { additionalProperties: true }),
  },
  { additionalProperties: false },
);

/** The webhook source endpoint (docs/api.md, Ingest: webhook sources). */
export const ingestRoutes: RouteDefinition[] = [
  {
    method: 'POST',
    path: '/v2/ingest/{connector_id}',
    operationId: 'ingestEvents',
    summary: 'Receive events for a webhook source connector (Standard Webhooks signature, no API key)',
    tag: 'Ingest',
    auth: { kind: 'signature' },
    body: 'required',
    rawBody: true,
    bodySchema: Type.Union([IngestEvent, Type.Object({ events: Type.Array(IngestEvent, { minItems: 1, maxItems: MAX_INGEST_EVENTS }) }, { additionalProperties: false })]),
    responses: { 202: { description: 'The events are stored durably; the pipeline picks them up.', schema: 'IngestAccepted' } },
    errors: [404],
    handle: async ({ engine, params, rawBody, headers }) => {
      const received = await engine.ingest.receive(params.connector_id!, rawBody, headers);
      return accepted({ count: received.count, ids: received.ids });
    },
  },
];

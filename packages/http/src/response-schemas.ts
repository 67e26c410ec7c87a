import { PLATFORM_EVENT_TYPES } from '@ferry/core';
import { Type, type TSchema } from '@sinclair/typebox';

/**
 * Schemas of what the API answers, for the OpenAPI document's `components.schemas`. The records
 * are the services' own (`@ferry/core` domain types); these schemas describe them for clients.
 */
const Id = (prefix: string) => Type.String({ pattern: `^${prefix}_[0-9A-HJKMNP-TV-Z]{26}$`, examples: [`${prefix}_01JD0000000000000000000000`] });
const Timestamp = Type.String({ format: 'date-time', examples: ['2026-11-22T10:00:00.000Z'] });
const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const Json = Type.Object({}, { additionalProperties: true });
const Lit = (values: readonly string[]) => Type.Union(values.map((v) => Type.Literal(v)));

const FieldError = Type.Object({
  pointer: Type.String({ description: 'JSON pointer (RFC 6901) to the value, in the body or (for query parameters) `/<name>`.' }),
  code: Type.String({ description: 'Stable snake_case code: required, type, unknown_field, read_only, enum, ...' }),
  detail: Type.String(),
});

const Run = Type.Object({
  id: Id('run'),
  pipeline_id: Id('pip'),
  trigger: Lit(['schedule', 'manual', 'stream']),
  status: Lit(['queued', 'running', 'succeeded', 'failed']),
  scheduled_for: Nullable(Timestamp),
  started_at: Nullable(Timestamp),
  finished_at: Nullable(Timestamp),
  events_read: Type.Integer(),
  events_written: Type.Integer(),
  events_filtered: Type.Integer(),
  events_dead_lettered: Type.Integer(),
  error: Nullable(Type.String()),
  created_at: Timestamp,
});

const Delivery = Type.Object({
  id: Id('dlv'),
  subscription_id: Id('whk'),
  event_id: Type.String(),
  event_type: Lit(PLATFORM_EVENT_TYPES),
  status: Lit(['pending', 'retrying', 'delivered', 'failed']),
  attempts: Type.Integer(),
  next_attempt_at: Nullable(Timestamp),
  last_attempt_at: Nullable(Timestamp),
  last_response_status: Nullable(Type.Integer()),
  last_error: Nullable(Type.String()),
  created_at: Timestamp,
});

const Webhook = Type.Object({
  id: Id('whk'),
  url: Type.String({ format: 'uri' }),
  events: Type.Array(Lit(PLATFORM_EVENT_TYPES)),
  enabled: Type.Boolean(),
  description: Nullable(Type.String()),
  disabled_reason: Nullable(Type.String()),
  created_at: Timestamp,
  updated_at: Timestamp,
});

const Connector = Type.Object({
  id: Id('con'),
  name: Nullable(Type.String()),
  type: Type.String(),
  direction: Lit(['source', 'destination', 'bidirectional']),
  config: Type.Object({}, { additionalProperties: true, description: 'Type-specific; secret fields read "********".' }),
  health: Lit(['healthy', 'degraded', 'down']),
  pipeline_count: Type.Integer(),
  rotation_status: Nullable(Type.Literal('rotating')),
  last_error: Nullable(Type.Object({ code: Type.String(), message: Type.String(), at: Timestamp })),
  created_at: Timestamp,
  updated_at: Timestamp,
});

/** Component schemas by name. */
export const responseSchemas: Record<string, TSchema> = {
  Problem: Type.Object({
    type: Type.String({ examples: ['/problems/validation_failed'] }),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Type.String({ description: 'Stable snake_case error code; branch on it.' }),
    errors: Type.Optional(Type.Array(FieldError)),
    current_status: Type.Optional(Type.String()),
    request_id: Type.String(),
  }),
  Connector,
  ConnectorCheck: Type.Object({
    health: Lit(['healthy', 'degraded', 'down']),
    latency_ms: Type.Integer(),
    error: Type.Optional(Type.Object({ code: Type.String(), message: Type.String() })),
    details: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'Facts the check found, by connector type (postgres change capture: wal_level and its replication slots with lag_bytes).' })),
  }),
  ConnectorRotation: Type.Object({
    connector: Connector,
    rotation: Type.Object({
      status: Type.Literal('completed'),
      paused_pipeline_ids: Type.Array(Id('pip')),
      started_at: Timestamp,
      completed_at: Timestamp,
    }),
  }),
  Pipeline: Type.Object({
    id: Id('pip'),
    name: Type.String(),
    source_connector_id: Id('con'),
    destination_connector_id: Id('con'),
    transforms: Type.Array(Type.Object({ type: Type.String() }, { additionalProperties: true })),
    schedule: Nullable(Type.String()),
    state: Lit(['draft', 'active', 'paused', 'deleting']),
    batch_size: Type.Integer(),
    flush_interval_ms: Type.Integer(),
    max_attempts: Type.Integer(),
    last_run: Nullable(Run),
    created_at: Timestamp,
    updated_at: Timestamp,
  }),
  Run,
  Event: Type.Object({
    id: Type.String(),
    pipeline_id: Id('pip'),
    type: Type.String(),
    occurred_at: Timestamp,
    payload: Json,
    status: Lit(['delivered', 'filtered', 'dead_lettered', 'replaying']),
    attempts: Type.Integer(),
    error: Nullable(Type.Object({ stage: Type.String(), code: Type.String(), message: Type.String() })),
    dead_lettered_at: Nullable(Timestamp),
  }),
  Count: Type.Object({ count: Type.Integer() }),
  Webhook,
  WebhookWithSecret: Type.Composite([Webhook, Type.Object({ secret: Type.String() })]),
  WebhookSecret: Type.Object({ secret: Type.String() }),
  ConnectorSigningSecret: Type.Object({ signing_secret: Type.String() }),
  WebhookSecretRotation: Type.Object({ secret: Type.String(), previous_secret_expires_at: Nullable(Timestamp) }),
  Delivery,
  DeliveryWithAttempts: Type.Composite([
    Delivery,
    Type.Object({
      attempt_history: Type.Array(
        Type.Object({
          id: Type.String(),
          attempted_at: Timestamp,
          response_status: Nullable(Type.Integer()),
          duration_ms: Type.Integer(),
          response_body: Nullable(Type.String()),
          error: Nullable(Type.String()),
        }),
      ),
    }),
  ]),
  IngestAccepted: Type.Object({ count: Type.Integer(), ids: Type.Array(Type.String()) }),
};

import { Type, type TSchema } from '@sinclair/typebox';
import { PLATFORM_EVENT_TYPES } from './domain.js';

/**
 * TypeBox schemas of every service input. The services validate with them (embedders get the
 * same field errors as HTTP clients) and the HTTP layer builds its OpenAPI document from them.
 */
const Name = Type.String({ minLength: 1, maxLength: 200 });
const Timestamp = Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,9})?(Z|[+-]\\d{2}:\\d{2})$' });
// In bodies a timestamp is any short string here; the service parses it and reports `format`
// with a readable message, the same way as in query filters.
const TimestampField = Type.String({ minLength: 1, maxLength: 64 });
const Direction = Type.Union([Type.Literal('source'), Type.Literal('destination'), Type.Literal('bidirectional')]);
const PlatformEventTypeSchema = Type.Union(PLATFORM_EVENT_TYPES.map((t) => Type.Literal(t)));
const BatchSize = Type.Integer({ minimum: 1, maximum: 10_000 });
const FlushInterval = Type.Integer({ minimum: 0, maximum: 3_600_000 });
const MaxAttempts = Type.Integer({ minimum: 1, maximum: 100 });
const TransformStepSchema = Type.Object({ type: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: true });

/** Schemas of the service inputs, by operation. */
export const inputSchemas = {
  createConnector: Type.Object(
    {
      type: Type.String({ minLength: 1, maxLength: 100 }),
      direction: Direction,
      config: Type.Object({}, { additionalProperties: true }),
      name: Type.Optional(Type.Union([Name, Type.Null()])),
    },
    { additionalProperties: false },
  ),
  updateConnector: Type.Object(
    {
      name: Type.Optional(Type.Union([Name, Type.Null()])),
      config: Type.Optional(Type.Object({}, { additionalProperties: true })),
    },
    { additionalProperties: false },
  ),
  createPipeline: Type.Object(
    {
      name: Name,
      source_connector_id: Type.String({ minLength: 1, maxLength: 64 }),
      destination_connector_id: Type.String({ minLength: 1, maxLength: 64 }),
      transforms: Type.Optional(Type.Array(TransformStepSchema, { maxItems: 100 })),
      schedule: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 200 }), Type.Null()])),
      activate: Type.Optional(Type.Boolean()),
      batch_size: Type.Optional(BatchSize),
      flush_interval_ms: Type.Optional(FlushInterval),
      max_attempts: Type.Optional(MaxAttempts),
    },
    { additionalProperties: false },
  ),
  updatePipeline: Type.Object(
    {
      name: Type.Optional(Name),
      transforms: Type.Optional(Type.Array(TransformStepSchema, { maxItems: 100 })),
      schedule: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 200 }), Type.Null()])),
      batch_size: Type.Optional(BatchSize),
      flush_interval_ms: Type.Optional(FlushInterval),
      max_attempts: Type.Optional(MaxAttempts),
    },
    { additionalProperties: false },
  ),
  createWebhook: Type.Object(
    {
      url: Type.String({ minLength: 1, maxLength: 2048 }),
      events: Type.Array(PlatformEventTypeSchema, { minItems: 1, maxItems: 50, uniqueItems: true }),
      secret: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
      description: Type.Optional(Type.Union([Type.String({ maxLength: 500 }), Type.Null()])),
      enabled: Type.Optional(Type.Boolean()),
    },
    { additionalProperties: false },
  ),
  updateWebhook: Type.Object(
    {
      url: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
      events: Type.Optional(Type.Array(PlatformEventTypeSchema, { minItems: 1, maxItems: 50, uniqueItems: true })),
      enabled: Type.Optional(Type.Boolean()),
      description: Type.Optional(Type.Union([Type.String({ maxLength: 500 }), Type.Null()])),
    },
    { additionalProperties: false },
  ),
  rotateWebhookSecret: Type.Object(
    {
      secret: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
      previous_secret_expires_in: Type.Optional(Type.Integer({ minimum: 0, maximum: 604_800 })),
    },
    { additionalProperties: false },
  ),
  recoverDeliveries: Type.Object({ since: TimestampField, until: Type.Optional(TimestampField) }, { additionalProperties: false }),
  bulkReplay: Type.Object(
    { since: Type.Optional(TimestampField), until: Type.Optional(TimestampField), type: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })) },
    { additionalProperties: false },
  ),
  createApiKey: Type.Object(
    {
      workspace: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
      scopes: Type.Optional(Type.Array(Type.String(), { minItems: 1, maxItems: 20, uniqueItems: true })),
      name: Type.Optional(Type.Union([Name, Type.Null()])),
      rate_limit: Type.Optional(
        Type.Union([
          Type.Object({ requests: Type.Integer({ minimum: 1 }), per_seconds: Type.Integer({ minimum: 1, maximum: 86_400 }) }, { additionalProperties: false }),
          Type.Null(),
        ]),
      ),
      key: Type.Optional(Type.String({ maxLength: 100 })),
    },
    { additionalProperties: false },
  ),
} satisfies Record<string, TSchema>;

/** Fields that responses show but requests may not set, by operation (400 `read_only`). */
export const readOnlyFields = {
  connector: ['id', 'health', 'pipeline_count', 'created_at', 'updated_at', 'rotation_status', 'last_error'],
  pipeline: ['id', 'state', 'last_run', 'created_at', 'updated_at'],
  webhook: ['id', 'created_at', 'updated_at', 'disabled_reason'],
} as const;

/** ISO 8601 timestamp as accepted in filters and bodies. */
export const TimestampSchema = Timestamp;

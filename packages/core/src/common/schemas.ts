import { Type, type TObject, type TSchema } from '@sinclair/typebox';
import type { JsonObject } from './json.js';
import { ConnectorDirectionSchema, PlatformEventTypeSchema } from './enumerations.js';
import { resourceSchemas, type TransformStep } from './shapes.js';

/**
 * TypeBox schemas of every service input. The services validate with them (embedders get the
 * same field errors as HTTP clients) and the HTTP layer builds its OpenAPI document from them.
 */
const Name = Type.String({ minLength: 1, maxLength: 200 });
const Timestamp = Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,9})?(Z|[+-]\\d{2}:\\d{2})$' });
// In bodies a timestamp is any short string here; the service parses it and reports `format`
// with a readable message, the same way as in query filters.
const TimestampField = Type.String({ minLength: 1, maxLength: 64 });
const BatchSize = Type.Integer({ minimum: 1, maximum: 10_000 });
const FlushInterval = Type.Integer({ minimum: 0, maximum: 3_600_000 });
const MaxAttempts = Type.Integer({ minimum: 1, maximum: 100 });
// A retention of at most ten years: keeping for ever is the server's default (no `--retention-days`).
const EventLogInput = Type.Object(
  {
    payloads: Type.Optional(Type.Union([Type.Literal('all'), Type.Literal('failed')])),
    retention_days: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 3650 }), Type.Null()])),
  },
  { additionalProperties: false, description: 'What the event log keeps of this pipeline; fields left out keep their value (on create: `all`, and the server\'s retention).' },
);
// `Unsafe` keeps the schema and gives the input types their JSON types: `Type.Object({})` alone
// types as `{}`, and a step's fields as nothing, so a caller could not pass them.
const Config = Type.Unsafe<JsonObject>(Type.Object({}, { additionalProperties: true }));
const TransformStepSchema = Type.Unsafe<TransformStep>(Type.Object({ type: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: true }));

/** Schemas of the service inputs, by operation. */
export const inputSchemas = {
  createConnector: Type.Object(
    {
      type: Type.String({ minLength: 1, maxLength: 100 }),
      direction: ConnectorDirectionSchema,
      config: Config,
      name: Type.Optional(Type.Union([Name, Type.Null()])),
    },
    { additionalProperties: false },
  ),
  updateConnector: Type.Object(
    {
      name: Type.Optional(Type.Union([Name, Type.Null()])),
      config: Type.Optional(Config),
    },
    { additionalProperties: false },
  ),
  rotateConnector: Type.Object(
    { config: Type.Optional(Type.Unsafe<JsonObject>(Type.Object({}, { additionalProperties: true, description: 'New values of secret config fields; absent when the plugin generates them.' }))) },
    { additionalProperties: false },
  ),
  createPipeline: Type.Object(
    {
      name: Name,
      source_connector_id: Type.String({ minLength: 1, maxLength: 64 }),
      destination_connector_id: Type.String({ minLength: 1, maxLength: 64 }),
      transforms: Type.Optional(Type.Array(TransformStepSchema, { maxItems: 100 })),
      schedule: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 200 }), Type.Null()])),
      activate: Type.Optional(Type.Boolean({ description: 'Create it `active` rather than `draft`.' })),
      batch_size: Type.Optional(BatchSize),
      flush_interval_ms: Type.Optional(FlushInterval),
      max_attempts: Type.Optional(MaxAttempts),
      event_log: Type.Optional(EventLogInput),
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
      event_log: Type.Optional(EventLogInput),
    },
    { additionalProperties: false },
  ),
  createWebhook: Type.Object(
    {
      url: Type.String({ minLength: 1, maxLength: 2048 }),
      events: Type.Array(PlatformEventTypeSchema, { minItems: 1, maxItems: 50, uniqueItems: true }),
      secret: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: '`whsec_` + base64 of 24 to 64 bytes; generated when omitted.' })),
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
      previous_secret_expires_in: Type.Optional(
        Type.Integer({ minimum: 0, maximum: 604_800, description: 'Seconds the old secret keeps signing alongside the new one: 0..604800, default 86400.' }),
      ),
    },
    { additionalProperties: false },
  ),
  recoverDeliveries: Type.Object({ since: TimestampField, until: Type.Optional(TimestampField) }, { additionalProperties: false }),
  pipelineStats: Type.Object(
    { minutes: Type.Optional(Type.Integer({ minimum: 1, maximum: 1440, default: 60, description: 'How many minutes the window holds, the current one last: 1 to 1440 (a day), default 60.' })) },
    { additionalProperties: false },
  ),
  createBackfill: Type.Object(
    {
      tables: Type.Optional(
        Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { minItems: 1, maxItems: 1000, uniqueItems: true, description: "The tables to read, in this order; default: every table of the pipeline's source." }),
      ),
      // An object of strings (additionalProperties), typed as a record of them.
      where: Type.Optional(
        Type.Unsafe<Record<string, string>>(
          Type.Object(
            {},
            {
              additionalProperties: Type.String({ minLength: 1, maxLength: 4000 }),
              description: 'A row filter per table, by table name: a boolean SQL expression over its columns, which the source parses and checks (no subqueries, no functions beyond a few pure ones).',
            },
          ),
        ),
      ),
      chunk_size: Type.Optional(Type.Integer({ minimum: 1, maximum: 100000, description: "Rows per chunk (each one short statement); default: the source's `batch_size`." })),
    },
    { additionalProperties: false },
  ),
  bulkReplay: Type.Object(
    { since: Type.Optional(TimestampField), until: Type.Optional(TimestampField), type: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })) },
    { additionalProperties: false },
  ),
  createApiKey: Type.Object(
    {
      workspace: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Workspace the key belongs to (created if missing); default `default`.' })),
      scopes: Type.Optional(Type.Array(Type.String(), { minItems: 1, maxItems: 20, uniqueItems: true, description: "Default `['write']`." })),
      name: Type.Optional(Type.Union([Name, Type.Null()])),
      rate_limit: Type.Optional(
        Type.Union(
          [
            Type.Object({ requests: Type.Integer({ minimum: 1 }), per_seconds: Type.Integer({ minimum: 1, maximum: 86_400 }) }, { additionalProperties: false }),
            Type.Null(),
          ],
          { description: "Per-key rate limit overriding the engine's default." },
        ),
      ),
      key: Type.Optional(
        Type.String({
          maxLength: 100,
          description: "Register this exact key instead of generating one (the server's `FERRY_BOOTSTRAP_API_KEY`). It must be well formed, checksum included.",
        }),
      ),
    },
    { additionalProperties: false },
  ),
} satisfies Record<string, TSchema>;

/** The fields of a record that its create input does not have: the ones only the engine sets. */
function engineSet(record: TObject, input: TObject): readonly string[] {
  return Object.keys(record.properties).filter((key) => !Object.hasOwn(input.properties, key));
}

/** Fields that responses show but requests may not set, by operation (400 `read_only`). */
export const readOnlyFields = {
  connector: engineSet(resourceSchemas.Connector, inputSchemas.createConnector),
  pipeline: engineSet(resourceSchemas.Pipeline, inputSchemas.createPipeline),
  webhook: engineSet(resourceSchemas.WebhookSubscription, inputSchemas.createWebhook),
};

/** ISO 8601 timestamp as accepted in filters and bodies. */
export const TimestampSchema = Timestamp;

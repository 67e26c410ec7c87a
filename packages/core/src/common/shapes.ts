import { Type, type SchemaOptions, type TLiteral, type TSchema, type TUnsafe } from '@sinclair/typebox';
import type { JsonObject } from './json.js';
import {
  ConnectorDirectionSchema,
  ConnectorHealthSchema,
  DeliveryStatusSchema,
  EventStatusSchema,
  PipelineStateSchema,
  PlatformEventTypeSchema,
  RunStatusSchema,
  RunTriggerSchema,
  BackfillStateSchema,
} from './enumerations.js';
import { ID_PREFIXES, idPattern, type IdKind } from './ids.js';

/**
 * TypeBox schemas of the records the services return: the one declaration of each shape. The
 * domain types (`Connector`, `Pipeline`, ...) are their `Static` types, and the HTTP layer's
 * OpenAPI document describes its answers with them. Nothing validates against them at run time:
 * the engine builds these records itself.
 */

const Id = (kind: IdKind) => Type.String({ pattern: idPattern(kind), examples: [`${ID_PREFIXES[kind]}_01JD0000000000000000000000`] });
const Timestamp = Type.String({ format: 'date-time', examples: ['2026-11-22T10:00:00.000Z'] });
const Nullable = <T extends TSchema>(schema: T, options?: SchemaOptions) => Type.Union([schema, Type.Null()], options);
// Typed as JSON: `Type.Object({})` alone would type as `{}`, which takes any non-null value.
const Json = (options?: SchemaOptions) => Type.Unsafe<JsonObject>(Type.Object({}, { additionalProperties: true, ...options }));

const FieldError = Type.Object({
  pointer: Type.String({ description: 'JSON pointer (RFC 6901) to the value, in the body or (for query parameters) `/<name>`.' }),
  code: Type.String({ description: 'Stable snake_case code: required, type, unknown_field, read_only, enum, ...' }),
  detail: Type.String({ description: 'Human-readable explanation. Never contains a secret value.' }),
});

/** The page envelope of every listing, around items of `item`. */
export function pageSchema<T extends TSchema>(item: T) {
  return Type.Object({
    data: Type.Array(item),
    // One JSON Schema type list rather than a union: the form the OpenAPI document has always had.
    next_cursor: Type.Unsafe<string | null>({ type: ['string', 'null'], description: 'Pass back as `cursor` for the next page.' }),
    has_more: Type.Boolean(),
  });
}

const Connector = Type.Object({
  id: Id('connector'),
  name: Nullable(Type.String()),
  type: Type.String(),
  direction: ConnectorDirectionSchema,
  config: Json({ description: 'Type-specific; secret fields read "********".' }),
  health: ConnectorHealthSchema,
  pipeline_count: Type.Integer({ description: 'Live pipelines that reference the connector.' }),
  rotation_status: Nullable(Type.Literal('rotating'), { description: 'Set while a credential rotation runs.' }),
  last_error: Nullable(Type.Object({ code: Type.String(), message: Type.String(), at: Timestamp })),
  created_at: Timestamp,
  updated_at: Timestamp,
});

const ConnectorCheck = Type.Object({
  health: ConnectorHealthSchema,
  latency_ms: Type.Integer(),
  error: Type.Optional(Type.Object({ code: Type.String(), message: Type.String() })),
  details: Type.Optional(
    Type.Unsafe<JsonObject>(
      Type.Record(Type.String(), Type.Unknown(), { description: 'Facts the check found, by connector type (postgres change capture: wal_level and its replication slots with lag_bytes).' }),
    ),
  ),
});

const ConnectorRotation = Type.Object({
  connector: Connector,
  rotation: Type.Object({
    status: Type.Literal('completed'),
    paused_pipeline_ids: Type.Array(Id('pipeline')),
    started_at: Timestamp,
    completed_at: Timestamp,
  }),
});

const PipelineHold = Type.Object(
  {
    since: Timestamp,
    attempts: Type.Integer({ description: 'Failed attempts in a row.' }),
    error: Type.Object({ code: Type.String(), message: Type.String() }, { description: 'The last failure, its message scrubbed of the connector\'s secrets.' }),
    next_attempt_at: Timestamp,
    events_waiting: Type.Integer({ description: 'Events of the batch that waits; 0 while the source cannot be read.' }),
  },
  { description: 'What a held flow waits on: a source, destination or storage that fails, the batch retried with backoff.' },
);

const Run = Type.Object({
  id: Id('run'),
  pipeline_id: Id('pipeline'),
  trigger: RunTriggerSchema,
  status: RunStatusSchema,
  scheduled_for: Nullable(Timestamp),
  started_at: Nullable(Timestamp),
  finished_at: Nullable(Timestamp),
  events_read: Type.Integer(),
  events_written: Type.Integer(),
  events_filtered: Type.Integer(),
  events_dead_lettered: Type.Integer(),
  error: Nullable(Type.String()),
  held: Nullable(PipelineHold, { description: "While the run is running and its pipeline's flow is held, what it waits on (the pipeline's `held`); null otherwise." }),
  created_at: Timestamp,
});

const PipelineMinute = Type.Object({
  minute: Type.String({ format: 'date-time', description: "The minute's start, UTC.", examples: ['2026-11-26T19:04:00.000Z'] }),
  events_read: Type.Integer(),
  events_written: Type.Integer(),
  events_filtered: Type.Integer(),
  events_dead_lettered: Type.Integer(),
});

const PipelineStats = Type.Object({
  pipeline_id: Id('pipeline'),
  minutes: Type.Integer({ description: 'How many minutes `per_minute` holds.' }),
  since: Type.String({ format: 'date-time', description: 'The start of the first minute.', examples: ['2026-11-26T18:05:00.000Z'] }),
  until: Type.String({ format: 'date-time', description: 'The end of the current minute (exclusive).', examples: ['2026-11-26T19:05:00.000Z'] }),
  dead_lettered: Type.Integer({ description: "The pipeline's events that are `dead_lettered` now." }),
  replaying: Type.Integer({ description: "The pipeline's events that are `replaying` now." }),
  per_minute: Type.Array(PipelineMinute, {
    description: "One entry per minute from `since` to `until`, oldest first, the current minute last; a minute without a commit counts zeros. The events the pipeline's batches committed, by the minute (UTC) of their commit; replays are not counted.",
  }),
});

const BackfillTable = Type.Object({
  table: Type.String({ description: 'The table, as its source names it (`schema.name`).' }),
  rows_read: Type.Integer({ description: 'Rows of the table handed over and committed so far.' }),
  rows_estimated: Nullable(Type.Integer(), { description: "The source's estimate of the table's rows when the backfill was asked for (Postgres: the planner's statistics); null when it has none." }),
  state: Type.Union([Type.Literal('pending'), Type.Literal('running'), Type.Literal('done')], { description: '`pending` until its first chunk, `running`, then `done` once read to its end.' }),
});

const Backfill = Type.Object({
  id: Id('backfill'),
  pipeline_id: Id('pipeline'),
  state: BackfillStateSchema,
  tables: Type.Array(BackfillTable, { description: 'The tables it reads, in the order it reads them.' }),
  where: Nullable(Type.Unsafe<Record<string, string>>(Type.Object({}, { additionalProperties: Type.String() })), { description: 'The row filter per table, by the names the source gives its tables (`schema.name`).' }),
  chunk_size: Nullable(Type.Integer(), { description: "Rows per chunk; null: the source's `batch_size`." }),
  rows_read: Type.Integer({ description: 'Rows handed over and committed so far, all tables.' }),
  error: Nullable(Type.Object({ code: Type.String(), message: Type.String() }), { description: 'Why it failed; null otherwise.' }),
  created_at: Timestamp,
  started_at: Nullable(Timestamp, { description: 'When its source started reading it.' }),
  finished_at: Nullable(Timestamp),
});

/** One transform step definition: `{ type, ...fields }`; the fields are the step type's own. */
export type TransformStep = { type: string } & JsonObject;

// Only `type` is common to all steps; the step type's plugin checks the rest.
const TransformStepShape = Type.Unsafe<TransformStep>(Type.Object({ type: Type.String() }, { additionalProperties: true }));

const EventLogSettings = Type.Object(
  {
    payloads: Type.Union([Type.Literal('all'), Type.Literal('failed')], {
      description: '`all`: every event keeps its payload. `failed`: every event keeps its id, type, time, status and attempts, but only events that were dead-lettered keep their payload (the others list `payload: null`).',
    }),
    retention_days: Nullable(Type.Integer({ minimum: 1 }), {
      description: "Days the pipeline's delivered and filtered events are kept; null: the server's setting (`--retention-days`). Dead-lettered and replaying events are kept until replayed.",
    }),
  },
  { description: 'What the event log keeps of this pipeline.' },
);

const Pipeline = Type.Object({
  id: Id('pipeline'),
  name: Type.String(),
  source_connector_id: Id('connector'),
  destination_connector_id: Id('connector'),
  transforms: Type.Array(TransformStepShape),
  schedule: Nullable(Type.String(), { description: 'Cron expression (UTC); null for a streaming pipeline.' }),
  state: PipelineStateSchema,
  batch_size: Type.Integer({ description: 'Most records read per batch.' }),
  flush_interval_ms: Type.Integer({ description: 'Longest a streaming batch waits to fill before it is flushed, in ms.' }),
  max_attempts: Type.Integer({ description: 'Attempts per event before it is dead-lettered.' }),
  event_log: EventLogSettings,
  held: Nullable(PipelineHold, { description: 'Set while the flow is held: its batch is retried with backoff and nothing moves on; null otherwise.' }),
  last_run: Nullable(Run),
  created_at: Timestamp,
  updated_at: Timestamp,
});

const EventRecord = Type.Object({
  id: Type.String(),
  pipeline_id: Id('pipeline'),
  type: Type.String(),
  occurred_at: Timestamp,
  payload: Nullable(Json(), { description: "The event's payload; null when the pipeline keeps payloads of failed events only (`event_log.payloads`) and this one never failed." }),
  status: EventStatusSchema,
  attempts: Type.Integer(),
  error: Nullable(Type.Object({ stage: Type.String(), code: Type.String(), message: Type.String() })),
  dead_lettered_at: Nullable(Timestamp),
});

const WebhookSubscription = Type.Object({
  id: Id('webhook'),
  url: Type.String({ format: 'uri' }),
  events: Type.Array(PlatformEventTypeSchema),
  enabled: Type.Boolean(),
  description: Nullable(Type.String()),
  disabled_reason: Nullable(Type.String(), {
    description: 'Why the engine disabled it: `endpoint_gone` (the endpoint answered 410) or `failing_for_too_long` (every attempt failed for 5 days, by default).',
  }),
  created_at: Timestamp,
  updated_at: Timestamp,
});

const Delivery = Type.Object({
  id: Id('delivery'),
  subscription_id: Id('webhook'),
  event_id: Type.String(),
  event_type: PlatformEventTypeSchema,
  status: DeliveryStatusSchema,
  attempts: Type.Integer(),
  next_attempt_at: Nullable(Timestamp),
  last_attempt_at: Nullable(Timestamp),
  last_response_status: Nullable(Type.Integer()),
  last_error: Nullable(Type.String()),
  created_at: Timestamp,
});

const DeliveryAttempt = Type.Object({
  id: Type.String(),
  attempted_at: Timestamp,
  response_status: Nullable(Type.Integer()),
  duration_ms: Type.Integer(),
  response_body: Nullable(Type.String(), { description: 'The start of the response body: its first 1 KiB, by default.' }),
  error: Nullable(Type.String()),
});

/** A platform event whose `type` is one of `type`'s; {@link resourceSchemas} has the one of every type. */
export function platformEventSchema<T extends TSchema>(type: T) {
  return Type.Object({
    id: Id('event'),
    type,
    occurred_at: Timestamp,
    data: Json({ description: 'The ids involved, e.g. `pipeline_id`.' }),
    workspace_id: Type.String(),
  });
}

/** A platform event of the types `T`, as a schema type: how `PlatformEvent<T>` is typed. */
export type PlatformEventOf<T extends string> = ReturnType<typeof platformEventSchema<TLiteral<T>>>;

const RateLimit = Type.Object({ requests: Type.Integer(), per_seconds: Type.Integer() });

const ApiKey = Type.Object({
  id: Id('key'),
  key_id: Type.String({ description: 'The 8-character id embedded in the key.' }),
  workspace_id: Type.String(),
  name: Nullable(Type.String()),
  scopes: Type.Array(Type.String()),
  last4: Type.String({ description: 'Last 4 characters of the key, to recognise it.' }),
  rate_limit: Nullable(RateLimit),
  created_at: Timestamp,
  last_used_at: Nullable(Timestamp),
  revoked_at: Nullable(Timestamp),
});

/** The schemas of the records the services return, by domain type name. */
export const resourceSchemas = {
  Connector,
  ConnectorCheck,
  ConnectorRotation,
  ConnectorSigningSecret: Type.Object({ signing_secret: Type.String() }),
  Pipeline,
  Run,
  PipelineStats,
  Backfill,
  EventRecord,
  Count: Type.Object({ count: Type.Integer() }),
  WebhookSubscription,
  WebhookSubscriptionWithSecret: Type.Composite([WebhookSubscription, Type.Object({ secret: Type.String() })]),
  WebhookSecret: Type.Object({ secret: Type.String() }),
  WebhookSecretRotation: Type.Object({ secret: Type.String(), previous_secret_expires_at: Nullable(Timestamp) }),
  Delivery,
  DeliveryAttempt,
  DeliveryWithAttempts: Type.Composite([Delivery, Type.Object({ attempt_history: Type.Array(DeliveryAttempt) })]),
  PlatformEvent: platformEventSchema(PlatformEventTypeSchema),
  ApiKey,
  CreatedApiKey: Type.Composite([ApiKey, Type.Object({ key: Type.String() })]),
  Workspace: Type.Object({ id: Type.String(), created_at: Timestamp }),
  FieldError,
  /** The page envelope around `item`: a function, since every listing has its own items. */
  Page: pageSchema,
};

/** The page of `T`, as a schema type: how `Page<T>` is typed. */
export type PageOf<T> = ReturnType<typeof pageSchema<TUnsafe<T>>>;

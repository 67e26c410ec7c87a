import { Type, type SchemaOptions, type TLiteral, type TUnion } from '@sinclair/typebox';

/**
 * The schema of one of a list of strings: a union of literals, TypeBox's spelling of an enum,
 * which validation reports as `enum` with the allowed values, and which keeps the literal types
 * for `Static`.
 */
export type TLiteralUnion<T extends readonly string[]> = TUnion<{ -readonly [K in keyof T]: TLiteral<T[K] & string> }>;

/** The {@link TLiteralUnion} of `values`, in their order. */
export function literalUnion<const T extends readonly string[]>(values: T, options?: SchemaOptions): TLiteralUnion<T> {
  // TypeBox types a mapped array as a union of plain string literals; the tuple is the same list.
  return Type.Union(
    values.map((value) => Type.Literal(value)),
    options,
  ) as unknown as TLiteralUnion<T>;
}

/** Which way a connector moves events. `bidirectional` only where the plugin declares it. */
export const CONNECTOR_DIRECTIONS = ['source', 'destination', 'bidirectional'] as const;
/** One of {@link CONNECTOR_DIRECTIONS}. */
export type ConnectorDirection = (typeof CONNECTOR_DIRECTIONS)[number];
/** Schema of a {@link ConnectorDirection}. */
export const ConnectorDirectionSchema = literalUnion(CONNECTOR_DIRECTIONS);

/** Connector health (docs/api.md, Connectors). */
export const CONNECTOR_HEALTHS = ['healthy', 'degraded', 'down'] as const;
/** One of {@link CONNECTOR_HEALTHS}. */
export type ConnectorHealth = (typeof CONNECTOR_HEALTHS)[number];
/** Schema of a {@link ConnectorHealth}. */
export const ConnectorHealthSchema = literalUnion(CONNECTOR_HEALTHS);

/** Pipeline states (docs/api.md, Pipelines). */
export const PIPELINE_STATES = ['draft', 'active', 'paused', 'deleting'] as const;
/** One of {@link PIPELINE_STATES}. */
export type PipelineState = (typeof PIPELINE_STATES)[number];
/** Schema of a {@link PipelineState}. */
export const PipelineStateSchema = literalUnion(PIPELINE_STATES);

/** Run statuses (docs/api.md, Runs). */
export const RUN_STATUSES = ['queued', 'running', 'succeeded', 'failed'] as const;
/** One of {@link RUN_STATUSES}. */
export type RunStatus = (typeof RUN_STATUSES)[number];
/** Schema of a {@link RunStatus}. */
export const RunStatusSchema = literalUnion(RUN_STATUSES);

/** What started a run: the cron schedule, a manual request, or a streaming pipeline's consumption. */
export const RUN_TRIGGERS = ['schedule', 'manual', 'stream'] as const;
/** One of {@link RUN_TRIGGERS}. */
export type RunTrigger = (typeof RUN_TRIGGERS)[number];
/** Schema of a {@link RunTrigger}. */
export const RunTriggerSchema = literalUnion(RUN_TRIGGERS);

/** Statuses of a data event (docs/api.md, Events). */
export const EVENT_STATUSES = ['delivered', 'filtered', 'dead_lettered', 'replaying'] as const;
/** One of {@link EVENT_STATUSES}. */
export type EventStatus = (typeof EVENT_STATUSES)[number];
/** Schema of an {@link EventStatus}. */
export const EventStatusSchema = literalUnion(EVENT_STATUSES);

/** Delivery statuses (docs/api.md, Webhook delivery). */
export const DELIVERY_STATUSES = ['pending', 'retrying', 'delivered', 'failed'] as const;
/** One of {@link DELIVERY_STATUSES}. */
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];
/** Schema of a {@link DeliveryStatus}. */
export const DeliveryStatusSchema = literalUnion(DELIVERY_STATUSES);

/**
 * Backfill states (docs/api.md, Backfills): `queued` until its source starts it, `running`,
 * `paused` while its pipeline is (shown, never stored), and one of the three ends.
 */
export const BACKFILL_STATES = ['queued', 'running', 'paused', 'succeeded', 'failed', 'cancelled'] as const;
/** One of {@link BACKFILL_STATES}. */
export type BackfillState = (typeof BACKFILL_STATES)[number];
/** Schema of a {@link BackfillState}. */
export const BackfillStateSchema = literalUnion(BACKFILL_STATES);

/** The platform event types (docs/api.md, Platform events). */
export const PLATFORM_EVENT_TYPES = [
  'pipeline.created',
  'pipeline.activated',
  'pipeline.paused',
  'pipeline.deleted',
  'pipeline.started',
  'pipeline.completed',
  'pipeline.failed',
  'connector.error',
  'connector.health_changed',
  'connector.rotated',
  'event.dead_lettered',
  'backfill.started',
  'backfill.completed',
  'backfill.failed',
] as const;
/** A platform (lifecycle) event type. */
export type PlatformEventType = (typeof PLATFORM_EVENT_TYPES)[number];
/** Schema of a {@link PlatformEventType}. */
export const PlatformEventTypeSchema = literalUnion(PLATFORM_EVENT_TYPES);

/**
 * Every enumeration above, by its name: one export for Ferry's own packages (the HTTP layer's
 * query filters, the server's metric labels), which list the same values.
 */
export const ENUMERATIONS = {
  CONNECTOR_DIRECTIONS,
  CONNECTOR_HEALTHS,
  PIPELINE_STATES,
  RUN_STATUSES,
  RUN_TRIGGERS,
  EVENT_STATUSES,
  DELIVERY_STATUSES,
  BACKFILL_STATES,
  PLATFORM_EVENT_TYPES,
} as const;

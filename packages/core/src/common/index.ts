/**
 * What every folder of the engine shares: the clock, errors and their codes, ids, the logger,
 * the enumerations, the records the services take and return and their schemas, input schemas
 * and validation, cursor pagination.
 */
export { guardedClock, isoNow, sleep, systemClock, type Clock, type ClockTimer } from './clock.js';
export { type ApiKey, type AuthContext, type Backfill, type CreateBackfillInput, type BulkReplayInput, type Connector, type ConnectorCheck, type ConnectorRotationResult, type ConnectorSigningSecret, type Count, type CreateApiKeyInput, type CreateConnectorInput, type CreatePipelineInput, type CreateWebhookInput, type CreatedApiKey, type Delivery, type DeliveryAttempt, type DeliveryWithAttempts, type EventRecord, type ListEventsParams, type Page, type PageParams, type Pipeline, type PipelineHold, type PipelineStats, type PipelineStatsParams, type PlatformEvent, type SortOrder, type RecoverDeliveriesInput, type RotateConnectorInput, type RotateWebhookSecretInput, type Run, type TransformStep, type UpdateConnectorInput, type UpdatePipelineInput, type UpdateWebhookInput, type WebhookSecret, type WebhookSecretRotation, type WebhookSubscription, type WebhookSubscriptionWithSecret, type Workspace } from './domain.js';
export { BACKFILL_STATES, DELIVERY_STATUSES, ENUMERATIONS, EVENT_STATUSES, PIPELINE_STATES, PLATFORM_EVENT_TYPES, type BackfillState, type ConnectorDirection, type ConnectorHealth, type DeliveryStatus, type EventStatus, type PipelineState, type PlatformEventType, type RunStatus } from './enumerations.js';
export { ERROR_CODES, ERROR_STATUS, FerryError, isFerryError, notFound, validationError, type ErrorCode, type FerryErrorOptions, type FieldError } from './errors.js';
export { parseExactJson } from './exact-json.js';
export { type JsonObject, type JsonValue } from './json.js';
export { decodePercent, decodeUtf8Exact, encodingError, exceedsJsonDepth, MAX_JSON_DEPTH, tooDeepError, utf8Fault, type PercentFault, type Utf8Fault } from './exact-text.js';
export { ID_PREFIXES, IdGenerator, firstIdAt, isId, type IdKind } from './ids.js';
export { silentLogger, type LogFn, type Logger } from './logger.js';
export { CURSOR_TTL_MS, CursorCodec, DEFAULT_LIMIT, MAX_LIMIT, normalizeLimit, normalizeOrder, paginate, type CursorScope, type KeysetResult } from './pagination.js';
export { TimestampSchema, inputSchemas, readOnlyFields } from './schemas.js';
export { parseIsoTimestamp } from './timestamps.js';
export { resourceSchemas } from './shapes.js';
export { assertSchema, assertText, compile, hasInvalidCharacter, normalizeTimestamp, pointerToken, schemaErrors, type SchemaErrorOptions } from './validation.js';
export { failSpan, inSpan, spanContext, SpanKind, startSpan, TRACER_NAME, type Span, type SpanFailure, type TraceContext } from './tracing.js';

/**
 * What every folder of the engine shares: the clock, errors and their codes, ids, the logger,
 * the records the services take and return, input schemas and validation, cursor pagination.
 */
export { guardedClock, isoNow, sleep, systemClock, type Clock, type ClockTimer } from './clock.js';
export { PLATFORM_EVENT_TYPES, type ApiKey, type AuthContext, type Connector, type CreateApiKeyInput, type CreateConnectorInput, type CreatePipelineInput, type CreateWebhookInput, type CreatedApiKey, type Delivery, type DeliveryAttempt, type DeliveryStatus, type DeliveryWithAttempts, type EventRecord, type EventStatus, type ListEventsParams, type Page, type PageParams, type Pipeline, type PipelineState, type PlatformEvent, type PlatformEventType, type RotateWebhookSecretInput, type Run, type RunStatus, type TransformStep, type UpdateConnectorInput, type UpdatePipelineInput, type UpdateWebhookInput, type WebhookSubscription, type WebhookSubscriptionWithSecret, type Workspace } from './domain.js';
export { ERROR_STATUS, FerryError, isFerryError, notFound, validationError, type ErrorCode, type FerryErrorOptions, type FieldError } from './errors.js';
export { parseExactJson } from './exact-json.js';
export { ID_PREFIXES, IdGenerator, isId, type IdKind } from './ids.js';
export { silentLogger, type LogFn, type Logger } from './logger.js';
export { CURSOR_TTL_MS, CursorCodec, DEFAULT_LIMIT, MAX_LIMIT, normalizeLimit, paginate, type CursorScope } from './pagination.js';
export { TimestampSchema, inputSchemas, readOnlyFields } from './schemas.js';
export { assertSchema, assertText, compile, hasInvalidCharacter, pointerToken, schemaErrors, type SchemaErrorOptions } from './validation.js';

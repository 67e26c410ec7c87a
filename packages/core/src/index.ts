/**
 * @ferry/core: the Ferry engine. Create an engine on SQLite or Postgres, register connector and
 * transform plugins, and drive it through typed services, an event emitter and RxJS streams.
 *
 * @packageDocumentation
 */
export { createEngine, Engine, type EngineOptions, type EngineState } from './engine.js';
export { sqlite, postgres, type StorageConfig, type SqliteOptions, type PostgresOptions, type Dialect } from './storage/storage-config.js';
export { FerryStorage, Repositories, openStorage } from './storage/ferry-storage.js';
export { isStorageUnavailable, translateStorageError } from './storage/storage-errors.js';
export { LeasesRepo, LeasedQueue, type LeaseGrant, type Claim, type ClaimOptions, type LeasedQueueSpec } from './storage/leases.js';
export type { KeysetResult } from './storage/keyset.js';
export type { ApiKeyRow } from './storage/repositories/api-keys-repo.js';
export type { ConnectorRow } from './storage/repositories/connectors-repo.js';
export type { PipelineRow } from './storage/repositories/pipelines-repo.js';
export type { RunRow, NewRun } from './storage/repositories/runs-repo.js';
export type { EventRow, DeadLetterRow, EventFilters } from './storage/repositories/events-repo.js';
export type { WebhookRow } from './storage/repositories/webhooks-repo.js';
export type { DeliveryRow, DeliveryAttemptRow } from './storage/repositories/deliveries-repo.js';
export type { OutboxRow } from './storage/repositories/outbox-repo.js';
export type { IdempotencyRecord, IdempotencyBegin } from './storage/repositories/idempotency-repo.js';
export type { InboxRow, InboxEntry } from './storage/repositories/inbox-repo.js';
export type { WorkspaceRow } from './storage/repositories/workspaces-repo.js';
export type { StorageStats, CountsBy } from './storage/repositories/stats-repo.js';

export { FerryError, ERROR_STATUS, isFerryError, type ErrorCode, type FieldError, type FerryErrorOptions } from './errors.js';
export { systemClock, sleep, isoNow, type Clock, type ClockTimer } from './clock.js';
export { silentLogger, type Logger, type LogFn } from './logger.js';
export { IdGenerator, ID_PREFIXES, isId, type IdKind } from './ids.js';
export { CursorCodec, normalizeLimit, DEFAULT_LIMIT, MAX_LIMIT, CURSOR_TTL_MS, type CursorScope } from './pagination.js';
export { hasInvalidCharacter, pointerToken, schemaErrors, type SchemaErrorOptions } from './validation.js';
export { parseExactJson } from './exact-json.js';
export { inputSchemas, readOnlyFields } from './schemas.js';
export { assertSchedule, nextFireAfter } from './schedule.js';
export { assertUrlAllowed, isBlockedAddress, isHostAllowed, canonicalHost, hostRefusal } from './outbound-policy.js';
export {
  createConnectorOutbound,
  outboundRefusal,
  URL_NOT_ALLOWED,
  type ConnectorOutbound,
  type ConnectorOutboundOptions,
  type OutboundConnectOptions,
} from './connector-outbound.js';
export { parseSecretKey, generateSecretKey, SecretBox } from './crypto/secret-box.js';
export {
  API_KEY_SCOPES,
  generateApiKey,
  parseApiKey,
  apiKeyChecksum,
  hashApiKeySecret,
  verifyApiKeySecret,
  scopeAllows,
  type ApiKeyScope,
  type GeneratedApiKey,
} from './crypto/api-key.js';
export { generateWebhookSecret, webhookSecretBytes, WEBHOOK_SECRET_PREFIX } from './crypto/webhook-secret.js';
export {
  signWebhook,
  webhookHeaders,
  verifyWebhook,
  WebhookVerificationError,
  WEBHOOK_TOLERANCE_SECONDS,
  type WebhookMessage,
  type VerifyWebhookOptions,
  type WebhookVerificationReason,
} from './crypto/webhook-signature.js';

export * from './domain.js';
export type { ConnectorsService } from './services/connectors-service.js';
export type { PipelinesService, DeletePipelineResult } from './services/pipelines-service.js';
export type { EventsService } from './services/events-service.js';
export type { WebhooksService } from './services/webhooks-service.js';
export type { ApiKeysService } from './services/api-keys-service.js';
export type { WorkspacesService } from './services/workspaces-service.js';
export { MAX_INGEST_EVENTS, type IngestService, type IngestResult } from './services/ingest-service.js';
export type { IdempotencyClaim, IdempotencyService, IdempotentResponse } from './services/idempotency-service.js';
export type { PlatformEventListener } from './platform-event-bus.js';

export { defineConnector, defineTransform } from './plugin/define.js';
export { Secret, REDACTED, SECRET_KEYWORD } from './plugin/secret.js';
export { secretPaths, type ConfigPath } from './plugin/config-secrets.js';
export { getPath, DotPath, DOT_PATH_PATTERN } from './transforms/dot-path.js';
export { ConnectorError, type ConnectorErrorOptions } from './plugin/connector-error.js';
export { probeCheck } from './plugin/probe-check.js';
export type {
  JsonValue,
  JsonObject,
  ConnectorDirection,
  ConnectorHealth,
  CheckResult,
  Checkpoint,
  SourceRecord,
  SourceBatch,
  PullSource,
  PushSource,
  Source,
  DestinationEvent,
  WriteResult,
  Destination,
  ConnectorContext,
  PipelineConnectorContext,
  ConnectorInbox,
  RotateInput,
  ConnectorDefinition,
  AnyConnectorDefinition,
  TransformEvent,
  TransformContext,
  TransformOutcome,
  TransformDefinition,
  AnyTransformDefinition,
  FerryPlugin,
} from './plugin/types.js';
export { builtinTransforms } from './transforms/index.js';
export { DEFAULT_RUNTIME_OPTIONS, type RuntimeOptions, type RuntimeOptionsInput } from './runtime/runtime-options.js';
export { type RetentionOptions, type RetentionOptionsInput } from './runtime/retention.js';
export { DEFAULT_DELIVERY_OPTIONS, type DeliveryOptions, type DeliveryOptionsInput } from './webhooks/delivery-options.js';
export { nextAttemptAt, parseRetryAfter } from './webhooks/delivery-schedule.js';
export { DELIVERY_USER_AGENT, DISABLED_FAILING, DISABLED_GONE } from './webhooks/delivery-worker.js';
export type { BackoffPolicy } from './runtime/backoff.js';
export { deriveEventId } from './runtime/event-id.js';
export {
  OutboundClient,
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_CONNECTIONS_PER_ORIGIN,
  type OutboundClientOptions,
  type OutboundLookup,
  type OutboundRequest,
  type OutboundResult,
} from './outbound-client.js';

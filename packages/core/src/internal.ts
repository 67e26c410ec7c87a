/**
 * @ferry/core/internal: what Ferry's own packages (@ferry/http, @ferry/server, @ferry/testing)
 * and its test suites use of the engine's inside: storage, repositories and their rows, the
 * HTTP layer's helpers, API keys, the delivery schedule. **Unstable**: any release may change or
 * remove any of it. Applications and plugins use `@ferry/core`, whose names are not repeated
 * here.
 *
 * @packageDocumentation
 */
export { engineContext } from './engine.js';
export type { EngineContext } from './engine-context.js';
export { openConnector, connectorContext, type OpenedConnector } from './services/opened-connector.js';
export type { SqliteOptions, PostgresOptions, Dialect } from './storage/storage-config.js';
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

export { ERROR_STATUS, type FerryErrorOptions } from './errors.js';
export { isoNow, type ClockTimer } from './clock.js';
export type { LogFn } from './logger.js';
export { IdGenerator, ID_PREFIXES, isId, type IdKind } from './ids.js';
export { CursorCodec, normalizeLimit, DEFAULT_LIMIT, MAX_LIMIT, CURSOR_TTL_MS, type CursorScope } from './pagination.js';
export { hasInvalidCharacter, pointerToken, schemaErrors, type SchemaErrorOptions } from './validation.js';
export { inputSchemas, readOnlyFields } from './schemas.js';
export { assertSchedule, nextFireAfter } from './schedule.js';
export { isBlockedAddress, isHostAllowed, canonicalHost, hostRefusal } from './outbound-policy.js';
export { createConnectorOutbound, outboundRefusal, URL_NOT_ALLOWED, type ConnectorOutboundOptions, type OutboundConnectOptions } from './connector-outbound.js';
export { parseSecretKey, SecretBox } from './crypto/secret-box.js';
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
export { WEBHOOK_SECRET_PREFIX } from './crypto/webhook-secret.js';
export { signWebhook, WEBHOOK_TOLERANCE_SECONDS, type WebhookMessage, type VerifyWebhookOptions, type WebhookVerificationReason } from './crypto/webhook-signature.js';

export type { AuthContext } from './domain.js';
export type { DeletePipelineResult } from './services/pipelines-service.js';
export type { ApiKeysService } from './services/api-keys-service.js';
export type { WorkspacesService } from './services/workspaces-service.js';
export { MAX_INGEST_EVENTS, type IngestService, type IngestResult } from './services/ingest-service.js';
export type { IdempotencyClaim, IdempotencyService, IdempotentResponse } from './services/idempotency-service.js';
export type { PlatformEventListener } from './platform-event-bus.js';

export { REDACTED, SECRET_KEYWORD } from './plugin/secret.js';
export { secretPaths, type ConfigPath } from './plugin/config-secrets.js';
export type { ConnectorErrorOptions } from './plugin/connector-error.js';
export type {
  ConnectorHealth,
  CheckResult,
  Source,
  AnyConnectorDefinition,
  TransformOutcome,
  AnyTransformDefinition,
} from './plugin/types.js';
export { builtinTransforms } from './transforms/index.js';
export { DEFAULT_RUNTIME_OPTIONS, type RuntimeOptions } from './runtime/runtime-options.js';
export type { RetentionOptions, RetentionOptionsInput } from './runtime/retention.js';
export { DEFAULT_DELIVERY_OPTIONS, type DeliveryOptions, type DeliveryOptionsInput } from './webhooks/delivery-options.js';
export { nextAttemptAt, parseRetryAfter } from './webhooks/delivery-schedule.js';
export { DELIVERY_USER_AGENT, DISABLED_FAILING, DISABLED_GONE } from './webhooks/delivery-worker.js';
export type { BackoffPolicy } from './runtime/backoff.js';
export { deriveEventId } from './runtime/event-id.js';
export {
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_CONNECTIONS_PER_ORIGIN,
  type OutboundClientOptions,
  type OutboundLookup,
  type OutboundRequest,
  type OutboundResult,
} from './outbound-client.js';

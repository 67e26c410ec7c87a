/**
 * @ferry/core/internal: what Ferry's own packages (@ferry/http, @ferry/server, @ferry/testing)
 * and its test suites use of the engine's inside: storage, repositories and their rows, the
 * HTTP layer's helpers, API keys, the delivery schedule. **Unstable**: any release may change or
 * remove any of it. Applications and plugins use `@ferry/core`, whose names are not repeated
 * here.
 *
 * @packageDocumentation
 */
export { engineContext, idempotencyRecords } from './engine/index.js';
export type { EngineContext } from './context/index.js';
export { openConnector, connectorContext, type OpenedConnector } from './connectors/index.js';
export type { SqliteOptions, PostgresOptions, Dialect } from './storage/index.js';
export { FerryStorage, Repositories, openStorage, migrationSource, MIGRATIONS_TABLE } from './storage/index.js';
export { isStorageUnavailable, translateStorageError } from './storage/index.js';
export type { KeysetResult } from './storage/index.js';
export type { ApiKeyRow } from './storage/index.js';
export type { ConnectorRow } from './storage/index.js';
export type { PipelineRow } from './storage/index.js';
export type { RunRow, NewRun } from './storage/index.js';
export type { EventRow, DeadLetterRow, EventFilters } from './storage/index.js';
export type { WebhookRow } from './storage/index.js';
export type { BackfillRow, DeliveryRow, DeliveryAttemptRow } from './storage/index.js';
export type { OutboxRow } from './storage/index.js';
export type { IdempotencyRecord, IdempotencyBegin } from './storage/index.js';
export type { InboxRow, InboxEntry } from './storage/index.js';
export type { WorkspaceRow } from './storage/index.js';
export type { StorageStats, CountsBy } from './storage/index.js';

export { ERROR_CODES, ERROR_STATUS, type FerryErrorOptions } from './common/index.js';
export { isoNow } from './common/index.js';
export type { LogFn } from './common/index.js';
export { IdGenerator, ID_PREFIXES, isId, type IdKind } from './common/index.js';
export { CursorCodec, normalizeLimit, DEFAULT_LIMIT, MAX_LIMIT, CURSOR_TTL_MS, type CursorScope } from './common/index.js';
export { hasInvalidCharacter, pointerToken, schemaErrors, type SchemaErrorOptions } from './common/index.js';
export { decodePercent, decodeUtf8Exact, exceedsJsonDepth, MAX_JSON_DEPTH, tooDeepError, type PercentFault, type Utf8Fault } from './common/index.js';
export { inputSchemas, readOnlyFields, resourceSchemas, ENUMERATIONS } from './common/index.js';
export { assertSchedule, nextFireAfter } from './pipelines/index.js';
export { isBlockedAddress, isHostAllowed, canonicalHost, hostRefusal } from './net/index.js';
export { createConnectorOutbound, outboundRefusal, URL_NOT_ALLOWED, type ConnectorOutboundOptions, type OutboundConnectOptions } from './net/index.js';
export { parseSecretKey, SecretBox } from './crypto/index.js';
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
} from './access/index.js';
export { WEBHOOK_SECRET_PREFIX } from './crypto/index.js';
export { signWebhook, WEBHOOK_TOLERANCE_SECONDS, type WebhookMessage, type VerifyWebhookOptions, type WebhookVerificationReason } from './crypto/index.js';

export type { AuthContext } from './common/index.js';
export type { DeletePipelineResult } from './pipelines/index.js';
export type { ApiKeysService } from './access/index.js';
export type { WorkspacesService } from './access/index.js';
export { MAX_INGEST_EVENTS, type IngestService, type IngestResult } from './events/index.js';
export type { IdempotencyClaim, IdempotencyService, IdempotentResponse } from './access/index.js';
export type { PlatformEventListener } from './context/index.js';

export { REDACTED, SECRET_KEYWORD } from './plugin-api/index.js';
export { secretPaths, type ConfigPath } from './plugin-api/index.js';
export type { ConnectorErrorOptions } from './plugin-api/index.js';
export type {
  ConnectorHealth,
  AnyConnectorDefinition,
  TransformOutcome,
  AnyTransformDefinition,
} from './plugin-api/index.js';
export { builtinTransforms } from './pipelines/index.js';
export { DEFAULT_RUNTIME_OPTIONS, type RuntimeOptions } from './pipelines/index.js';
export type { RetentionOptions, RetentionOptionsInput } from './engine/index.js';
export { DEFAULT_DELIVERY_OPTIONS, type DeliveryOptions, type DeliveryOptionsInput } from './webhooks/index.js';
export { nextAttemptAt, parseRetryAfter } from './webhooks/index.js';
export { DELIVERY_USER_AGENT, DISABLED_FAILING, DISABLED_GONE } from './webhooks/index.js';
export type { BackoffPolicy } from './queue/index.js';
export { deriveEventId } from './events/index.js';
export {
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_CONNECTIONS_PER_ORIGIN,
  type OutboundClientOptions,
  type OutboundLookup,
  type OutboundRequest,
  type OutboundResult,
} from './net/index.js';

/**
 * @ferry/core: the Ferry engine. Create an engine on SQLite or Postgres, register connector and
 * transform plugins, and drive it through typed services, an event emitter and RxJS streams.
 *
 * This entry is the stable API: what an application embedding the engine and a plugin author
 * need, and nothing of how the engine is built. `@ferry/core/internal` holds the rest for Ferry's
 * own packages (the HTTP layer, the server, the test kit); it may change in any release.
 *
 * @packageDocumentation
 */

// The engine, where it keeps its state, and its settings.
export { createEngine, Engine, type EngineOptions, type EngineState } from './engine.js';
export { sqliteStorage, postgresStorage, type StorageConfig } from './storage/storage-config.js';
export type { RuntimeOptionsInput } from './runtime/runtime-options.js';
export { generateSecretKey } from './crypto/secret-box.js';
export { systemClock, sleep, type Clock } from './clock.js';
export { silentLogger, type Logger } from './logger.js';

// Errors every service throws.
export { FerryError, isFerryError, type ErrorCode, type FieldError } from './errors.js';

// The typed services (`engine.connectors`, ...) and the records they take and return.
export type { ConnectorsService } from './services/connectors-service.js';
export type { PipelinesService } from './services/pipelines-service.js';
export type { EventsService } from './services/events-service.js';
export type { WebhooksService } from './services/webhooks-service.js';
export {
  PLATFORM_EVENT_TYPES,
  type Page,
  type PageParams,
  type Connector,
  type CreateConnectorInput,
  type UpdateConnectorInput,
  type PipelineState,
  type TransformStep,
  type RunStatus,
  type Run,
  type Pipeline,
  type CreatePipelineInput,
  type UpdatePipelineInput,
  type EventStatus,
  type EventRecord,
  type ListEventsParams,
  type WebhookSubscription,
  type WebhookSubscriptionWithSecret,
  type CreateWebhookInput,
  type UpdateWebhookInput,
  type RotateWebhookSecretInput,
  type DeliveryStatus,
  type Delivery,
  type DeliveryAttempt,
  type DeliveryWithAttempts,
  type PlatformEventType,
  type PlatformEvent,
  type ApiKey,
  type CreatedApiKey,
  type CreateApiKeyInput,
  type Workspace,
} from './domain.js';

// Receiving Ferry's signed webhooks.
export { verifyWebhook, WebhookVerificationError } from './crypto/webhook-signature.js';

// Writing plugins: connectors and transform steps.
export { defineConnector, defineTransform } from './plugin/define.js';
export { Secret } from './plugin/secret.js';
export { ConnectorError } from './plugin/connector-error.js';
export { probeCheck } from './plugin/probe-check.js';
export { parseExactJson } from './exact-json.js';
export { getPath, DotPath, DOT_PATH_PATTERN } from './transforms/dot-path.js';
export type {
  JsonValue,
  JsonObject,
  ConnectorDirection,
  Checkpoint,
  SourceRecord,
  SourceBatch,
  PullSource,
  PushSource,
  DestinationEvent,
  WriteResult,
  Destination,
  ConnectorContext,
  PipelineConnectorContext,
  ConnectorInbox,
  RotateInput,
  ConnectorDefinition,
  TransformEvent,
  TransformContext,
  TransformDefinition,
  FerryPlugin,
} from './plugin/types.js';
export type { ConnectorOutbound } from './connector-outbound.js';
// For connectors that call out over HTTP (the webhook connector): the outbound policy's client,
// its address check, and Standard Webhooks signing.
export { OutboundClient } from './outbound-client.js';
export { assertUrlAllowed } from './outbound-policy.js';
export { generateWebhookSecret, webhookSecretBytes } from './crypto/webhook-secret.js';
export { webhookHeaders } from './crypto/webhook-signature.js';

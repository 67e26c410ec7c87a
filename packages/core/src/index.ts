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
export { createEngine, Engine, type EngineOptions, type EngineState } from './engine/index.js';
export { sqliteStorage, postgresStorage, type StorageConfig } from './storage/index.js';
export type { RuntimeOptionsInput } from './pipelines/index.js';
export { generateSecretKey } from './crypto/index.js';
export { systemClock, sleep, type Clock, type ClockTimer } from './common/index.js';
export { silentLogger, type Logger } from './common/index.js';

// Errors every service throws.
export { FerryError, isFerryError, type ErrorCode, type FieldError } from './common/index.js';

// The typed services (`engine.connectors`, ...) and the records they take and return. A record's
// enumerations are named through it: `Pipeline['state']`, `Run['status']`, `Delivery['status']`.
export type { ConnectorsService } from './connectors/index.js';
export type { PipelinesService } from './pipelines/index.js';
export type { EventsService } from './events/index.js';
export type { WebhooksService } from './webhooks/index.js';
export type { BackfillsService } from './backfills/index.js';
export {
  PLATFORM_EVENT_TYPES,
  type Page,
  type PageParams,
  type Connector,
  type CreateConnectorInput,
  type UpdateConnectorInput,
  type TransformStep,
  type Run,
  type Backfill,
  type CreateBackfillInput,
  type Pipeline,
  type CreatePipelineInput,
  type UpdatePipelineInput,
  type EventRecord,
  type ListEventsParams,
  type WebhookSubscription,
  type WebhookSubscriptionWithSecret,
  type CreateWebhookInput,
  type UpdateWebhookInput,
  type RotateWebhookSecretInput,
  type Delivery,
  type DeliveryAttempt,
  type DeliveryWithAttempts,
  type PlatformEventType,
  type PlatformEvent,
  type ApiKey,
  type CreatedApiKey,
  type CreateApiKeyInput,
  type Workspace,
} from './common/index.js';

// Receiving Ferry's signed webhooks.
export { verifyWebhook, WebhookVerificationError } from './crypto/index.js';

// Writing plugins: connectors and transform steps.
export { defineConnector, defineTransform, payloadJson } from './plugin-api/index.js';
export { Secret } from './plugin-api/index.js';
export { ConnectorError } from './plugin-api/index.js';
export { probeCheck } from './plugin-api/index.js';
export { parseExactJson } from './common/index.js';
export { getPath, DotPath, DOT_PATH_PATTERN } from './pipelines/index.js';
export type {
  JsonValue,
  JsonObject,
  ConnectorDirection,
  Checkpoint,
  SourceRecord,
  SourceBatch,
  PullSource,
  PushSource,
  Source,
  CheckResult,
  DestinationEvent,
  WriteResult,
  Destination,
  ConnectorContext,
  PipelineConnectorContext,
  BackfillRequest,
  BackfillReport,
  ConnectorInbox,
  RotateInput,
  ConnectorDefinition,
  TransformEvent,
  TransformContext,
  TransformDefinition,
  FerryPlugin,
} from './plugin-api/index.js';
export type { ConnectorOutbound } from './net/index.js';
// For connectors that call out over HTTP (the webhook connector): the outbound policy's client,
// its address check, and Standard Webhooks signing.
export { OutboundClient } from './net/index.js';
export { assertUrlAllowed } from './net/index.js';
export { generateWebhookSecret, webhookSecretBytes } from './crypto/index.js';
export { webhookHeaders } from './crypto/index.js';

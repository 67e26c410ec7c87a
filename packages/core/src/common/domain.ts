import type { ConnectorDirection, ConnectorHealth, JsonObject, JsonValue } from '../plugin-api/index.js';

/** One page of a cursor-paginated listing (contract section 3). */
export interface Page<T> {
  data: T[];
  /** Pass back as `cursor` to get the next page; null when there is none. */
  next_cursor: string | null;
  has_more: boolean;
}

/** Paging input of every listing. */
export interface PageParams {
  /** 1..100, default 50; larger values are lowered to 100. */
  limit?: number;
  /** `next_cursor` of the previous page. */
  cursor?: string;
}

/** A connector as the API returns it; secret config fields read `"********"`. */
export interface Connector {
  id: string;
  name: string | null;
  type: string;
  direction: ConnectorDirection;
  config: JsonObject;
  health: ConnectorHealth;
  /** Live pipelines that reference the connector. */
  pipeline_count: number;
  /** Set while a credential rotation runs. */
  rotation_status: 'rotating' | null;
  last_error: { code: string; message: string; at: string } | null;
  created_at: string;
  updated_at: string;
}

/** Input of `connectors.create`. */
export interface CreateConnectorInput {
  type: string;
  direction: ConnectorDirection;
  config: JsonObject;
  name?: string | null;
}

/** Input of `connectors.update`: `config` is merged over the current config, then validated. */
export interface UpdateConnectorInput {
  name?: string | null;
  config?: JsonObject;
}

/** Pipeline states (contract section 6). */
export type PipelineState = 'draft' | 'active' | 'paused' | 'deleting';

/** One transform step definition: `{ type, ...fields }`. */
export type TransformStep = { type: string } & { [key: string]: JsonValue };

/** Run statuses (contract section 6). */
export type RunStatus = 'queued' | 'running' | 'succeeded' | 'failed';

/** One run of a pipeline. */
export interface Run {
  id: string;
  pipeline_id: string;
  trigger: 'schedule' | 'manual' | 'stream';
  status: RunStatus;
  scheduled_for: string | null;
  started_at: string | null;
  finished_at: string | null;
  events_read: number;
  events_written: number;
  events_filtered: number;
  events_dead_lettered: number;
  error: string | null;
  created_at: string;
}

/** A pipeline as the API returns it. */
export interface Pipeline {
  id: string;
  name: string;
  source_connector_id: string;
  destination_connector_id: string;
  transforms: TransformStep[];
  /** Cron expression (UTC); null for a streaming pipeline. */
  schedule: string | null;
  state: PipelineState;
  /** Most records read per batch. */
  batch_size: number;
  /** Longest a streaming batch waits to fill before it is flushed, in ms. */
  flush_interval_ms: number;
  /** Attempts per event before it is dead-lettered. */
  max_attempts: number;
  last_run: Run | null;
  created_at: string;
  updated_at: string;
}

/** Input of `pipelines.create`. */
export interface CreatePipelineInput {
  name: string;
  source_connector_id: string;
  destination_connector_id: string;
  transforms?: TransformStep[];
  schedule?: string | null;
  /** Create it `active` rather than `draft`. */
  activate?: boolean;
  batch_size?: number;
  flush_interval_ms?: number;
  max_attempts?: number;
}

/** Input of `pipelines.update`. `schedule: null` makes the pipeline streaming. */
export interface UpdatePipelineInput {
  name?: string;
  transforms?: TransformStep[];
  schedule?: string | null;
  batch_size?: number;
  flush_interval_ms?: number;
  max_attempts?: number;
}

/** Statuses of a data event (contract section 7). */
export type EventStatus = 'delivered' | 'filtered' | 'dead_lettered' | 'replaying';

/** A data event that flowed through a pipeline. */
export interface EventRecord {
  id: string;
  pipeline_id: string;
  type: string;
  occurred_at: string;
  payload: JsonObject;
  status: EventStatus;
  attempts: number;
  error: { stage: string; code: string; message: string } | null;
  dead_lettered_at: string | null;
}

/** Filters of the events listing. */
export interface ListEventsParams extends PageParams {
  type?: string;
  /** Inclusive lower bound on `occurred_at`. */
  since?: string;
  /** Exclusive upper bound on `occurred_at`. */
  until?: string;
  status?: EventStatus;
}

/** A webhook subscription, without its secret. */
export interface WebhookSubscription {
  id: string;
  url: string;
  events: PlatformEventType[];
  enabled: boolean;
  description: string | null;
  /** Why the engine disabled it (`gone` on a 410, `failing` after 5 days of failures). */
  disabled_reason: string | null;
  created_at: string;
  updated_at: string;
}

/** A subscription as returned by create: the only time, with `getSecret`, the secret is shown. */
export interface WebhookSubscriptionWithSecret extends WebhookSubscription {
  secret: string;
}

/** Input of `webhooks.create`. */
export interface CreateWebhookInput {
  url: string;
  events: PlatformEventType[];
  /** `whsec_` + base64 of 24 to 64 bytes; generated when omitted. */
  secret?: string;
  description?: string | null;
  enabled?: boolean;
}

/** Input of `webhooks.update`. */
export interface UpdateWebhookInput {
  url?: string;
  events?: PlatformEventType[];
  enabled?: boolean;
  description?: string | null;
}

/** Input of `webhooks.rotateSecret`. */
export interface RotateWebhookSecretInput {
  secret?: string;
  /** Seconds the old secret keeps signing alongside the new one: 0..604800, default 86400. */
  previous_secret_expires_in?: number;
}

/** Delivery statuses (contract section 8). */
export type DeliveryStatus = 'pending' | 'retrying' | 'delivered' | 'failed';

/** One delivery of a platform event to one subscription. */
export interface Delivery {
  id: string;
  subscription_id: string;
  event_id: string;
  event_type: PlatformEventType;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  last_response_status: number | null;
  last_error: string | null;
  created_at: string;
}

/** One HTTP attempt of a delivery. */
export interface DeliveryAttempt {
  id: string;
  attempted_at: string;
  response_status: number | null;
  duration_ms: number;
  /** First 1 KiB of the response body. */
  response_body: string | null;
  error: string | null;
}

/** A delivery with its attempt history. */
export interface DeliveryWithAttempts extends Delivery {
  attempt_history: DeliveryAttempt[];
}

/** The platform event types of contract section 9. */
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
] as const;

/** A platform (lifecycle) event type. */
export type PlatformEventType = (typeof PLATFORM_EVENT_TYPES)[number];

/** A platform event: the body a webhook subscriber receives (spec 2.5), plus its workspace. */
export interface PlatformEvent<TType extends PlatformEventType = PlatformEventType> {
  id: string;
  type: TType;
  occurred_at: string;
  data: JsonObject;
  workspace_id: string;
}

/** An API key as listed: never the secret. */
export interface ApiKey {
  id: string;
  /** The 8-character id embedded in the key. */
  key_id: string;
  workspace_id: string;
  name: string | null;
  scopes: string[];
  /** Last 4 characters of the key, to recognise it. */
  last4: string;
  rate_limit: { requests: number; per_seconds: number } | null;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

/** An API key as returned by create: the only time the full key is shown. */
export interface CreatedApiKey extends ApiKey {
  key: string;
}

/** Input of `apiKeys.create`. */
export interface CreateApiKeyInput {
  /** Workspace the key belongs to (created if missing); default `default`. */
  workspace?: string;
  /** Default `['write']`. */
  scopes?: string[];
  name?: string | null;
  /** Per-key rate limit overriding the engine's default. */
  rate_limit?: { requests: number; per_seconds: number } | null;
  /**
   * Register this exact key instead of generating one (the server's `FERRY_BOOTSTRAP_API_KEY`).
   * It must be well formed, checksum included.
   */
  key?: string;
}

/** What a verified API key grants. */
export interface AuthContext {
  api_key_id: string;
  workspace_id: string;
  scopes: string[];
  rate_limit: { requests: number; per_seconds: number } | null;
}

/** A workspace: the isolation boundary of every resource. */
export interface Workspace {
  id: string;
  created_at: string;
}

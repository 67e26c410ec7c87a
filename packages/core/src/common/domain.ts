import type { Static } from '@sinclair/typebox';
import type { EventStatus, PlatformEventType } from './enumerations.js';
import type { inputSchemas } from './schemas.js';
import type { PageOf, PlatformEventOf, resourceSchemas } from './shapes.js';

// The records and inputs are the `Static` types of their schemas (shapes.ts, schemas.ts): each
// field is declared once, for the services, the HTTP layer and its OpenAPI document alike.

/** One page of a cursor-paginated listing (docs/api.md, Lists). */
export type Page<T> = Static<PageOf<T>>;

/** The direction of a listing: `asc`, oldest first (the default), or `desc`, newest first. */
export type SortOrder = 'asc' | 'desc';

/** Paging input of every listing. */
export interface PageParams {
  /** 1..100, default 50; larger values are lowered to 100. */
  limit?: number;
  /** `next_cursor` of the previous page. */
  cursor?: string;
  /** `asc` (default) or `desc`; bound into the cursor, which the other order refuses. */
  order?: SortOrder;
}

/** A connector as the API returns it; secret config fields read `"********"`. */
export type Connector = Static<typeof resourceSchemas.Connector>;

/** The outcome of `connectors.check`: the plugin's check, as the API returns it. */
export type ConnectorCheck = Static<typeof resourceSchemas.ConnectorCheck>;

/** Input of `connectors.create`. */
export type CreateConnectorInput = Static<typeof inputSchemas.createConnector>;

/** Input of `connectors.update`: `config` is merged over the current config, then validated. */
export type UpdateConnectorInput = Static<typeof inputSchemas.updateConnector>;

/** Input of `connectors.rotate`. */
export type RotateConnectorInput = Static<typeof inputSchemas.rotateConnector>;

/** What a completed rotation answers (docs/api.md, Connector rotation). */
export type ConnectorRotationResult = Static<typeof resourceSchemas.ConnectorRotation>;

/** A webhook source connector's signing secret, which senders sign with. */
export type ConnectorSigningSecret = Static<typeof resourceSchemas.ConnectorSigningSecret>;

export type { TransformStep } from './shapes.js';

/** One run of a pipeline. */
export type Run = Static<typeof resourceSchemas.Run>;

/** A backfill: a re-read of what a pipeline's source holds, as the API returns it (docs/api.md, Backfills). */
export type Backfill = Static<typeof resourceSchemas.Backfill>;

/** Input of `backfills.create`. */
export type CreateBackfillInput = Static<typeof inputSchemas.createBackfill>;

/** A pipeline as the API returns it. */
export type Pipeline = Static<typeof resourceSchemas.Pipeline>;

/** What a held flow waits on: `held` of a pipeline, and of its running run. */
export type PipelineHold = NonNullable<Pipeline['held']>;

/** Input of `pipelines.create`. */
export type CreatePipelineInput = Static<typeof inputSchemas.createPipeline>;

/** Input of `pipelines.update`. `schedule: null` makes the pipeline streaming. */
export type UpdatePipelineInput = Static<typeof inputSchemas.updatePipeline>;

/** What `pipelines.stats` answers: a pipeline's events per minute over a window, and its open dead letters. */
export type PipelineStats = Static<typeof resourceSchemas.PipelineStats>;

/** Input of `pipelines.stats`. */
export type PipelineStatsParams = Static<typeof inputSchemas.pipelineStats>;

/** A data event that flowed through a pipeline. */
export type EventRecord = Static<typeof resourceSchemas.EventRecord>;

/** Input of `events.replayMany`: which dead-lettered events to replay. */
export type BulkReplayInput = Static<typeof inputSchemas.bulkReplay>;

/** How many records an action affected (`events.replayMany`, `webhooks.recover`). */
export type Count = Static<typeof resourceSchemas.Count>;

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
export type WebhookSubscription = Static<typeof resourceSchemas.WebhookSubscription>;

/** A subscription as returned by create: the only time, with `getSecret`, the secret is shown. */
export type WebhookSubscriptionWithSecret = Static<typeof resourceSchemas.WebhookSubscriptionWithSecret>;

/** Input of `webhooks.create`. */
export type CreateWebhookInput = Static<typeof inputSchemas.createWebhook>;

/** Input of `webhooks.update`. */
export type UpdateWebhookInput = Static<typeof inputSchemas.updateWebhook>;

/** Input of `webhooks.rotateSecret`. */
export type RotateWebhookSecretInput = Static<typeof inputSchemas.rotateWebhookSecret>;

/** A subscription's current signing secret. */
export type WebhookSecret = Static<typeof resourceSchemas.WebhookSecret>;

/** What `webhooks.rotateSecret` answers: the new secret, and when the previous one stops signing. */
export type WebhookSecretRotation = Static<typeof resourceSchemas.WebhookSecretRotation>;

/** Input of `webhooks.recover`: the creation range of the failed deliveries to send again. */
export type RecoverDeliveriesInput = Static<typeof inputSchemas.recoverDeliveries>;

/** One delivery of a platform event to one subscription. */
export type Delivery = Static<typeof resourceSchemas.Delivery>;

/** One HTTP attempt of a delivery. */
export type DeliveryAttempt = Static<typeof resourceSchemas.DeliveryAttempt>;

/** A delivery with its attempt history. */
export type DeliveryWithAttempts = Static<typeof resourceSchemas.DeliveryWithAttempts>;

/** A platform event: the body a webhook subscriber receives (spec 2.5), plus its workspace. */
export type PlatformEvent<TType extends PlatformEventType = PlatformEventType> = Static<PlatformEventOf<TType>>;

/** An API key as listed: never the secret. */
export type ApiKey = Static<typeof resourceSchemas.ApiKey>;

/** An API key as returned by create: the only time the full key is shown. */
export type CreatedApiKey = Static<typeof resourceSchemas.CreatedApiKey>;

/** Input of `apiKeys.create`. */
export type CreateApiKeyInput = Static<typeof inputSchemas.createApiKey>;

/** What a verified API key grants. */
export interface AuthContext {
  api_key_id: string;
  workspace_id: string;
  scopes: string[];
  rate_limit: ApiKey['rate_limit'];
}

/** A workspace: the isolation boundary of every resource. */
export type Workspace = Static<typeof resourceSchemas.Workspace>;

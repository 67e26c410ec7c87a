/**
 * The API's records, as the console reads them: the types `@ferry/core` declares them with (the
 * `Static` types of the schemas the API's OpenAPI document is made of), so a field is declared
 * once. Imported for their types only: nothing of the engine reaches the page's bundle.
 */
import type { Connector as ApiConnector, ConnectorsService, PipelinesService } from '@ferry/core';

export type { ApiConnector };
export type { Backfill, Delivery, DeliveryWithAttempts, EventRecord, Page, Pipeline, Run, WebhookSubscription } from '@ferry/core';

/**
 * A connector as the views show it: `name` is the API's name, or its id when it has none (see
 * `named` in data.ts), so that every row, label and message has something to call it by.
 */
export type Connector = Omit<ApiConnector, 'name'> & { name: string };

// The public entry names these records only as what a service method returns.

/** What a connector's live check answers (`POST /v2/connectors/{id}/check`). */
export type ConnectorCheck = Awaited<ReturnType<ConnectorsService['check']>>;

/** What a completed credential rotation answers (`POST /v2/connectors/{id}/rotate`). */
export type ConnectorRotation = Awaited<ReturnType<ConnectorsService['rotate']>>;

/** A pipeline's events per minute over a window, and its open dead letters (`GET /v2/pipelines/{id}/stats`). */
export type PipelineStats = Awaited<ReturnType<PipelinesService['stats']>>;

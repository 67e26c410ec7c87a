import type { RouteDefinition } from '../route.js';
import { backfillRoutes } from './backfills.js';
import { connectorRoutes } from './connectors.js';
import { eventRoutes } from './events.js';
import { ingestRoutes } from './ingest.js';
import { pipelineRoutes } from './pipelines.js';
import { webhookRoutes } from './webhooks.js';

/** The whole /v2 route table (a fresh array: each API instance may add its own meta routes). */
export function allRoutes(): RouteDefinition[] {
  return [...connectorRoutes, ...pipelineRoutes, ...backfillRoutes, ...eventRoutes, ...webhookRoutes, ...ingestRoutes];
}

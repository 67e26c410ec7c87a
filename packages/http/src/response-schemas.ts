import { resourceSchemas } from '@ferry/core/internal';
import { Type, type TSchema } from '@sinclair/typebox';
import { ProblemSchema } from './problem.js';

/**
 * Schemas of what the API answers, for the OpenAPI document's `components.schemas`, by component
 * name. The records are the services' own, with the schemas `@ferry/core` declares them by; only
 * the answers that exist over HTTP alone are declared here.
 */
export const responseSchemas: Record<string, TSchema> = {
  Problem: ProblemSchema,
  Connector: resourceSchemas.Connector,
  ConnectorCheck: resourceSchemas.ConnectorCheck,
  ConnectorRotation: resourceSchemas.ConnectorRotation,
  Pipeline: resourceSchemas.Pipeline,
  Run: resourceSchemas.Run,
  PipelineStats: resourceSchemas.PipelineStats,
  Backfill: resourceSchemas.Backfill,
  Event: resourceSchemas.EventRecord,
  Count: resourceSchemas.Count,
  Webhook: resourceSchemas.WebhookSubscription,
  WebhookWithSecret: resourceSchemas.WebhookSubscriptionWithSecret,
  WebhookSecret: resourceSchemas.WebhookSecret,
  ConnectorSigningSecret: resourceSchemas.ConnectorSigningSecret,
  WebhookSecretRotation: resourceSchemas.WebhookSecretRotation,
  Delivery: resourceSchemas.Delivery,
  DeliveryWithAttempts: resourceSchemas.DeliveryWithAttempts,
  // What the ingest route answers of the engine's `IngestResult`.
  IngestAccepted: Type.Object({ count: Type.Integer(), ids: Type.Array(Type.String()) }),
};

/**
 * @ferry/fastify: mount the Ferry /v2 API on a Fastify 5 app with {@link ferryPlugin}, and
 * receive Ferry's signed webhook deliveries with {@link webhookReceiver}.
 * @packageDocumentation
 */
export { ferryPlugin, type FerryPluginOptions } from './ferry-plugin.js';
export { ferryFrameworkErrors, ferryServerOptions } from './server-options.js';
export { webhookReceiver, WEBHOOK_BODY_LIMIT, type VerifiedWebhook, type WebhookReceiverOptions, type WebhookSecrets } from './webhook-receiver.js';
export type { HttpApiOptions } from '@ferry/http';

/**
 * @ferry/fastify: mount the Ferry /v2 API on a Fastify 5 app with {@link ferryPlugin}, the Ferry
 * Console with {@link ferryConsolePlugin}, and receive Ferry's signed webhook deliveries with
 * {@link webhookReceiver}.
 * @packageDocumentation
 */
export { ferryConsolePlugin } from './ferry-console-plugin.js';
export { ferryPlugin, type FerryPluginOptions } from './ferry-plugin.js';
export { ferryFrameworkErrors, ferryServerOptions } from './server-options.js';
export { webhookReceiver, WEBHOOK_BODY_LIMIT, type VerifiedWebhook, type WebhookReceiverOptions, type WebhookSecrets } from './webhook-receiver.js';
export type { HttpApiOptions } from '@ferry/http';
export type { ConsoleOptions } from '@ferry/console';

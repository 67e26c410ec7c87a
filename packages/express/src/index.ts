/**
 * @ferry/express: mount the Ferry /v2 API on an Express 5 app with {@link ferryRouter}, and
 * receive Ferry's signed webhook deliveries with {@link verifyWebhooks}.
 * @packageDocumentation
 */
export { ferryRouter } from './ferry-router.js';
export { verifyWebhooks, WEBHOOK_BODY_LIMIT, type VerifiedWebhook, type WebhookReceiverOptions, type WebhookSecrets } from './webhook-receiver.js';
export type { HttpApiOptions } from '@ferry/http';

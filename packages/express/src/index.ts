/**
 * @ferry/express: mount the Ferry /v2 API on an Express 5 app with {@link ferryRouter}, the Ferry
 * Console with {@link ferryConsole}, and receive Ferry's signed webhook deliveries with
 * {@link verifyWebhooks}. `answerClientError`, a listener for the server's `clientError` event,
 * makes what Node's parser refuses (a header block over 16 KiB, malformed HTTP) problem+json too.
 * @packageDocumentation
 */
export { ferryConsole } from './ferry-console.js';
export { ferryRouter } from './ferry-router.js';
export { verifyWebhooks, WEBHOOK_BODY_LIMIT, type VerifiedWebhook, type WebhookReceiverOptions, type WebhookSecrets } from './webhook-receiver.js';
export { answerClientError, type HttpApiOptions } from '@ferry/http';
export type { ConsoleOptions } from '@ferry/console';

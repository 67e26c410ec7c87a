/**
 * @ferry/webhook: the `webhook` connector type. As a destination it POSTs event batches to a
 * URL, signed with Standard Webhooks headers; as a source its events arrive at the engine's
 * ingest endpoint.
 *
 * @packageDocumentation
 */
export { webhook, WEBHOOK_PLUGIN_VERSION, type WebhookOptions, type WebhookConnector } from './webhook-connector.js';
export { webhookConfigSchema, DEFAULT_BATCH_SIZE, DEFAULT_CONCURRENCY, MAX_CONCURRENCY, DEFAULT_TIMEOUT_MS, DEFAULT_RETRIES, MAX_RETRIES, type WebhookConfig } from './config.js';
export { MAX_RESPONSE_BYTES } from './config.js';

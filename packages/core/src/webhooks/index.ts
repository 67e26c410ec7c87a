/**
 * Webhook subscriptions and the delivery of platform events to them: fan-out, claims, signed
 * sends, outcomes, and the retry schedule.
 */
export { DEFAULT_DELIVERY_OPTIONS, resolveDeliveryOptions, type DeliveryOptions, type DeliveryOptionsInput } from './delivery-options.js';
export { nextAttemptAt, parseRetryAfter } from './delivery-schedule.js';
export { DISABLED_FAILING, DISABLED_GONE } from './delivery-completer.js';
export { DELIVERY_USER_AGENT } from './delivery-worker.js';
export { WebhookDelivery } from './webhook-delivery.js';
export { WebhooksService } from './webhooks-service.js';

/**
 * Secrets and signatures: the secret box (encryption at rest), webhook signing secrets and
 * Standard Webhooks signatures.
 */
export { SecretBox, generateSecretKey, parseSecretKey } from './secret-box.js';
export { WEBHOOK_SECRET_PREFIX, generateWebhookSecret, webhookSecretBytes } from './webhook-secret.js';
export { WEBHOOK_TOLERANCE_SECONDS, WebhookVerificationError, signWebhook, verifyWebhook, webhookHeaders, type VerifyWebhookOptions, type WebhookMessage, type WebhookVerificationReason } from './webhook-signature.js';

import { randomBytes } from 'node:crypto';

/**
 * Prefix of subscription signing secrets (docs/api.md, Webhook secrets). It follows Standard Webhooks, so
 * receivers can hand the secret unchanged to off-the-shelf verification libraries.
 */
export const WEBHOOK_SECRET_PREFIX = 'whsec_';

/**
 * Fewest key bytes a signing secret may have. 24 rather than 32 so secrets issued by other
 * Standard Webhooks senders (whose examples use 24 bytes) can be brought over on rotation.
 */
export const WEBHOOK_SECRET_MIN_BYTES = 24;

/** Most key bytes a signing secret may have: one SHA-256 block, beyond which HMAC hashes the key first. */
export const WEBHOOK_SECRET_MAX_BYTES = 64;

const GENERATED_BYTES = 32;
const STANDARD_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** A new signing secret: `whsec_` + standard base64 of 32 random bytes. */
export function generateWebhookSecret(): string {
  return WEBHOOK_SECRET_PREFIX + randomBytes(GENERATED_BYTES).toString('base64');
}

/**
 * The HMAC key bytes of a signing secret, or null when it is not `whsec_` followed by standard,
 * padded, canonical base64 of {@link WEBHOOK_SECRET_MIN_BYTES} to {@link WEBHOOK_SECRET_MAX_BYTES}
 * bytes. Canonical means re-encoding the bytes gives the text back: Buffer's decoder would
 * otherwise skip stray characters and ignore unused bits, so two different strings could name
 * the same key, or a typo could go unnoticed until receivers start rejecting signatures.
 */
export function webhookSecretBytes(secret: string): Buffer | null {
  if (typeof secret !== 'string' || !secret.startsWith(WEBHOOK_SECRET_PREFIX)) return null;
  const encoded = secret.slice(WEBHOOK_SECRET_PREFIX.length);
  if (!STANDARD_BASE64.test(encoded)) return null;
  const bytes = Buffer.from(encoded, 'base64');
  if (bytes.toString('base64') !== encoded) return null;
  if (bytes.length < WEBHOOK_SECRET_MIN_BYTES || bytes.length > WEBHOOK_SECRET_MAX_BYTES) return null;
  return bytes;
}

import { createHmac, timingSafeEqual } from 'node:crypto';
import { systemClock, FerryError } from '../common/index.js';
import { webhookSecretBytes } from './webhook-secret.js';

/** Default tolerance of `webhook-timestamp` against the receiver's clock (Standard Webhooks). */
export const WEBHOOK_TOLERANCE_SECONDS = 300;

/** What is signed: the message id, its unix-seconds timestamp and the exact body bytes. */
export interface WebhookMessage {
  id: string;
  /** Unix seconds. */
  timestamp: number;
  body: string | Uint8Array;
}

function keyOf(secret: string): Buffer {
  const bytes = webhookSecretBytes(secret);
  if (!bytes) throw new FerryError('configuration_invalid', 'A webhook signing secret is not a valid whsec_ secret.');
  return bytes;
}

function sign(key: Buffer, message: WebhookMessage): string {
  return createHmac('sha256', key).update(`${message.id}.${message.timestamp}.`).update(message.body).digest('base64');
}

/**
 * The `webhook-signature` value of a message (Standard Webhooks): `v1,<base64 HMAC-SHA256>` per
 * secret, space-separated, so while a rotated secret overlaps receivers holding either one verify.
 */
export function signWebhook(message: WebhookMessage, secrets: readonly string[]): string {
  if (secrets.length === 0) throw new FerryError('configuration_invalid', 'At least one signing secret is needed.');
  return secrets.map((secret) => `v1,${sign(keyOf(secret), message)}`).join(' ');
}

/**
 * Every header a signed delivery carries: the Standard Webhooks three and `x-service-signature`
 * with the same value as `webhook-signature` (docs/api.md, Verifying webhook deliveries).
 */
export function webhookHeaders(message: WebhookMessage, secrets: readonly string[]): Record<string, string> {
  const signature = signWebhook(message, secrets);
  return {
    'webhook-id': message.id,
    'webhook-timestamp': String(message.timestamp),
    'webhook-signature': signature,
    'x-service-signature': signature,
  };
}

/** Why a webhook failed verification. */
export type WebhookVerificationReason = 'missing_headers' | 'bad_timestamp' | 'stale' | 'bad_signature';

/**
 * A webhook that must not be trusted. Its `code` is `unauthenticated` (a 401 over HTTP); `reason`
 * says which check failed, for the receiver's logs only: answering it to the sender would help
 * a forger.
 */
export class WebhookVerificationError extends FerryError {
  constructor(readonly reason: WebhookVerificationReason) {
    super('unauthenticated', 'The webhook signature could not be verified.');
    this.name = 'WebhookVerificationError';
  }
}

type HeaderBag = Record<string, string | string[] | undefined> | { get(name: string): string | null };

function headerOf(headers: HeaderBag, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  const bag = headers as Record<string, string | string[] | undefined>;
  let value = bag[name];
  if (value === undefined) {
    // Plain objects may carry other casings (a hand-built map rather than Node's lower-cased one).
    const key = Object.keys(bag).find((k) => k.toLowerCase() === name);
    value = key === undefined ? undefined : bag[key];
  }
  return Array.isArray(value) ? value[0] : value;
}

/** Options of {@link verifyWebhook}. */
export interface VerifyWebhookOptions {
  /** Largest accepted distance between `webhook-timestamp` and now, in seconds (default 300). */
  toleranceSeconds?: number;
  /** The receiver's time in ms (default: the wall clock; tests pass a virtual one). */
  now?: number;
}

// Unix seconds written the one way a sender writes them: no sign, no leading zero, no spaces.
// Anything looser would let two header texts name one timestamp while the HMAC covers only one.
const TIMESTAMP = /^(?:0|[1-9]\d{0,11})$/;

/**
 * The bytes of one `v1,` signature, or null when its text is not the canonical standard base64 of
 * them. Buffer's decoder skips stray characters, stops at the first `=`, takes base64url letters
 * and ignores unused low bits, so without the round trip `sig`, `sig` minus its padding, `sig`
 * with a newline or junk after it, and `sig` with its last letter bumped would all verify.
 */
function signatureBytes(text: string): Buffer | null {
  const bytes = Buffer.from(text, 'base64');
  return bytes.length > 0 && bytes.toString('base64') === text ? bytes : null;
}

/**
 * Verifies a received webhook (Standard Webhooks; docs/api.md, Verifying webhook deliveries): the `webhook-id`,
 * `webhook-timestamp` and `webhook-signature` headers (`x-service-signature` is accepted in place
 * of the last), a timestamp within the tolerance either way, and at least one `v1,` signature
 * matching one of `secrets`, compared in constant time. Pass the body exactly as received: a
 * re-serialized JSON body does not verify. Returns the message id and timestamp; throws
 * {@link WebhookVerificationError} otherwise.
 *
 * Strict where the format leaves room: the timestamp must be plain decimal digits without a
 * leading zero, and each signature canonical padded base64, so a signature text that verifies
 * cannot be altered into another one that does. A receiver misconfiguration (no secret, a secret
 * that is not a valid `whsec_` secret, a negative or NaN tolerance, a NaN `now`) is a
 * `configuration_invalid` {@link FerryError}, thrown whatever the request, rather than a
 * rejection that would look like a forged request.
 *
 * @example
 * ```ts
 * app.post('/hooks', express.raw({ type: 'application/json' }), (req, res) => {
 *   const { id } = verifyWebhook(req.body, req.headers, process.env.WEBHOOK_SECRET!);
 *   res.sendStatus(204);
 * });
 * ```
 */
export function verifyWebhook(
  rawBody: string | Uint8Array,
  headers: HeaderBag,
  secret: string | readonly string[],
  options: VerifyWebhookOptions = {},
): { id: string; timestamp: number } {
  // Configuration first, so a bad secret or option shows on the first request, not only on one
  // that happens to pass the header checks.
  const keys = (typeof secret === 'string' ? [secret] : secret).map(keyOf);
  if (keys.length === 0) throw new FerryError('configuration_invalid', 'At least one webhook verification secret is needed.');
  const tolerance = options.toleranceSeconds ?? WEBHOOK_TOLERANCE_SECONDS;
  // NaN would compare false against every distance and so accept any timestamp.
  if (!(tolerance >= 0)) throw new FerryError('configuration_invalid', 'The webhook timestamp tolerance must be a number of seconds, 0 or more.');
  const nowMs = options.now ?? systemClock.now();
  if (!Number.isFinite(nowMs)) throw new FerryError('configuration_invalid', 'The receiver time must be a finite number of milliseconds.');

  const id = headerOf(headers, 'webhook-id');
  const timestampText = headerOf(headers, 'webhook-timestamp');
  const signatures = headerOf(headers, 'webhook-signature') || headerOf(headers, 'x-service-signature');
  if (!id || !timestampText || !signatures) throw new WebhookVerificationError('missing_headers');
  if (!TIMESTAMP.test(timestampText)) throw new WebhookVerificationError('bad_timestamp');
  const timestamp = Number(timestampText);
  if (Math.abs(Math.floor(nowMs / 1000) - timestamp) > tolerance) throw new WebhookVerificationError('stale');
  const message: WebhookMessage = { id, timestamp, body: rawBody };
  const expected = keys.map((key) => Buffer.from(sign(key, message), 'base64'));
  let matched = false;
  for (const candidate of signatures.split(' ')) {
    const comma = candidate.indexOf(',');
    if (comma < 0 || candidate.slice(0, comma) !== 'v1') continue;
    const given = signatureBytes(candidate.slice(comma + 1));
    if (!given) continue;
    // Every comparison runs (no early exit), each in constant time for its length.
    for (const e of expected) if (given.length === e.length && timingSafeEqual(given, e)) matched = true;
  }
  if (!matched) throw new WebhookVerificationError('bad_signature');
  return { id, timestamp };
}

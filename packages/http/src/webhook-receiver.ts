import type { Readable } from 'node:stream';
import { FerryError, verifyWebhook, WebhookVerificationError } from '@ferry/core';

/** What a verified request carries besides its body: the message id and unix-seconds timestamp. */
export interface VerifiedWebhook {
  /** `webhook-id`: the delivery's event id, the same on every retry, so receivers dedupe on it. */
  id: string;
  /** `webhook-timestamp`, unix seconds. */
  timestamp: number;
}

/** Signing secrets: one, or several while a rotated secret overlaps the new one. */
export type WebhookSecrets = string | readonly string[];

/** Options every webhook receiver middleware takes; `TRequest` is its framework's request. */
export interface WebhookReceiverBaseOptions<TRequest> {
  /**
   * The subscription's `whsec_` signing secret, several during a rotation overlap (a delivery is
   * accepted when any of its signatures matches any of them), or a function that finds them for
   * a request, e.g. by a tenant in its path.
   */
  secret: WebhookSecrets | ((request: TRequest) => WebhookSecrets | Promise<WebhookSecrets>);
  /** Largest accepted distance between `webhook-timestamp` and now, in seconds (default 300). */
  toleranceSeconds?: number;
  /** The receiver's time in ms (default: the wall clock; tests pass a virtual one). */
  now?: () => number;
  /** Largest accepted body in bytes (default 1 MiB): larger ones are 413 before anything is verified. */
  limit?: number;
  /**
   * Called with each rejected request, before the 401. The error's `reason` says which check
   * failed: worth a log line, never worth telling the sender.
   */
  onRejected?: (error: WebhookVerificationError, request: TRequest) => void;
}

/** Default of {@link WebhookReceiverBaseOptions.limit}: the /v2 API's own body limit. */
export const WEBHOOK_BODY_LIMIT = 1024 * 1024;

/** A body that outgrows the limit; the adapter answers {@link WebhookReceiver.tooLarge}. */
export class WebhookBodyTooLarge extends Error {}

/** How a received body fared: accepted (with what the adapter puts on the request), or the problem to answer. */
export type WebhookCheck = { ok: true; webhook: VerifiedWebhook; body: unknown } | { ok: false; problem: FerryError };

/** The framework-free part of a webhook receiver middleware, shared by the Express and Fastify adapters. */
export interface WebhookReceiver<TRequest> {
  /** The body limit in bytes. */
  readonly limit: number;
  /** The 413 to answer for a body over the limit (close the connection: the rest is unread). */
  tooLarge(): FerryError;
  /**
   * Verifies the raw body and headers, then parses the JSON: 401 `unauthenticated` (the same
   * answer whichever check failed), 400 `malformed_json` for a signed body that is not JSON.
   * Rethrows what the secret function throws.
   */
  check(request: TRequest, raw: Buffer, headers: Record<string, string | string[] | undefined>): Promise<WebhookCheck>;
}

/**
 * Builds the receiver from its options, refusing bad ones at once (a wrong static secret fails
 * at startup rather than on the first delivery).
 */
export function webhookReceiverCore<TRequest>(options: WebhookReceiverBaseOptions<TRequest>): WebhookReceiver<TRequest> {
  const limit = options.limit ?? WEBHOOK_BODY_LIMIT;
  if (!(limit >= 0)) throw new FerryError('configuration_invalid', 'The webhook body limit must be a number of bytes, 0 or more.');
  const { secret, onRejected } = options;
  const configuration = () => ({
    ...(options.toleranceSeconds !== undefined ? { toleranceSeconds: options.toleranceSeconds } : {}),
    ...(options.now !== undefined ? { now: options.now() } : {}),
  });
  if (typeof secret !== 'function') {
    try {
      verifyWebhook('', {}, secret, configuration());
    } catch (error) {
      if (!(error instanceof WebhookVerificationError)) throw error;
    }
  }
  return {
    limit,
    tooLarge: () => new FerryError('payload_too_large', `The webhook body is larger than ${limit} bytes.`),
    async check(request, raw, headers) {
      let webhook: VerifiedWebhook;
      try {
        const secrets = typeof secret === 'function' ? await secret(request) : secret;
        webhook = verifyWebhook(raw, headers, secrets, configuration());
      } catch (error) {
        if (!(error instanceof WebhookVerificationError)) throw error;
        onRejected?.(error, request);
        // The same generic answer for every reason: telling which check failed would help a forger.
        return { ok: false, problem: error };
      }
      try {
        return { ok: true, webhook, body: raw.length === 0 ? undefined : JSON.parse(raw.toString('utf8')) };
      } catch {
        // Signed but not JSON: the sender's fault, and it knows the body anyway.
        return { ok: false, problem: new FerryError('malformed_json', 'The webhook body is not valid JSON.') };
      }
    },
  };
}

/**
 * Reads a body stream, failing with {@link WebhookBodyTooLarge} as soon as it passes `limit`
 * (or its declared length does), so an endless chunked body is never buffered.
 */
export async function readLimitedBody(stream: AsyncIterable<Buffer | string>, limit: number, declaredLength?: string): Promise<Buffer> {
  const declared = Number(declaredLength);
  if (declaredLength !== undefined && Number.isFinite(declared) && declared > limit) throw new WebhookBodyTooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  // Left open when refused half-way (see readBody): the 413 must still be written.
  const source = typeof (stream as { iterator?: unknown }).iterator === 'function' ? (stream as Readable).iterator({ destroyOnReturn: false }) : stream;
  for await (const chunk of source as AsyncIterable<Buffer | string>) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    size += buf.byteLength;
    if (size > limit) throw new WebhookBodyTooLarge();
    chunks.push(buf);
  }
  return Buffer.concat(chunks, size);
}

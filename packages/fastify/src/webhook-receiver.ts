import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { FerryError, verifyWebhook, WebhookVerificationError } from '@ferry/core';
import { problemResponse } from '@ferry/http';

/** What a verified request carries besides its body: the message id and unix-seconds timestamp. */
export interface VerifiedWebhook {
  /** `webhook-id`: the delivery's event id, the same on every retry, so receivers dedupe on it. */
  id: string;
  /** `webhook-timestamp`, unix seconds. */
  timestamp: number;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The body bytes exactly as received, set by {@link webhookReceiver} on the routes it guards. */
    rawBody?: Buffer;
    /** Set by {@link webhookReceiver} once the request's signature has been verified. */
    webhook?: VerifiedWebhook;
  }
}

/** Signing secrets: one, or several while a rotated secret overlaps the new one. */
export type WebhookSecrets = string | readonly string[];

/** Options of {@link webhookReceiver}, besides Fastify's own register options (`prefix`). */
export interface WebhookReceiverOptions {
  /**
   * The subscription's `whsec_` signing secret, several during a rotation overlap (a delivery is
   * accepted when any of its signatures matches any of them), or a function that finds them for
   * a request, e.g. by a tenant in its path.
   */
  secret: WebhookSecrets | ((request: FastifyRequest) => WebhookSecrets | Promise<WebhookSecrets>);
  /**
   * Declares the routes to guard, on the plugin's own encapsulated instance: only they get the
   * raw-body parser and the verification hook.
   */
  routes: (instance: FastifyInstance) => void | Promise<void>;
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
  onRejected?: (error: WebhookVerificationError, request: FastifyRequest) => void;
}

/** Default of {@link WebhookReceiverOptions.limit}: the /v2 API's own body limit. */
export const WEBHOOK_BODY_LIMIT = 1024 * 1024;

/** Thrown while reading a body that outgrows the limit; answered 413. */
class TooLarge extends Error {}

function sendProblem(reply: FastifyReply, error: FerryError, extraHeaders: Record<string, string> = {}): FastifyReply {
  const requestId = randomUUID();
  const { response } = problemResponse(error, requestId);
  reply.code(response.status).headers({ ...response.headers, ...extraHeaders, 'x-request-id': requestId });
  // A Buffer, not a string: Fastify would append a charset to the problem's Content-Type.
  return reply.send(Buffer.from(response.body!));
}

async function readBody(request: FastifyRequest, limit: number): Promise<Buffer> {
  const declared = Number(request.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) throw new TooLarge();
  // The parser below hands over the unread stream; bodyless requests never reach it.
  const stream = (request.body as AsyncIterable<Buffer | string> | undefined) ?? request.raw;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    size += buf.byteLength;
    // Cut off as soon as it is known, so an endless chunked body is never buffered.
    if (size > limit) throw new TooLarge();
    chunks.push(buf);
  }
  return Buffer.concat(chunks, size);
}

function configurationOf(options: WebhookReceiverOptions): { toleranceSeconds?: number; now?: number } {
  return {
    ...(options.toleranceSeconds !== undefined ? { toleranceSeconds: options.toleranceSeconds } : {}),
    ...(options.now !== undefined ? { now: options.now() } : {}),
  };
}

/**
 * A Fastify 5 plugin that lets through only webhook deliveries signed the Standard Webhooks way
 * (contract section 8), verified with `verifyWebhook` of `@ferry/core`, on the routes declared
 * in its `routes` option. On those routes:
 *
 * - a missing, mis-signed or stale (default tolerance 300 s) request is answered 401
 *   `application/problem+json` with code `unauthenticated`, before the handler (and before
 *   schema validation) runs; the answer is the same whichever check failed (`onRejected` gets
 *   the reason, for logs);
 * - a body over `limit` (default 1 MiB) is 413 `payload_too_large`, before verification;
 * - a correctly signed body that is not JSON is 400 `malformed_json`;
 * - otherwise `request.body` is the parsed JSON (undefined for an empty body), `request.rawBody`
 *   the bytes and `request.webhook` `{ id, timestamp }`.
 *
 * It is deliberately encapsulated (not wrapped in `fastify-plugin`): the catch-all content-type
 * parser that keeps the body's bytes unread until they are verified, and the verification hook,
 * stay on the guarded routes; the rest of the app keeps Fastify's JSON parser. A `secret`
 * function that throws, or returns something that is not a valid `whsec_` secret, fails the
 * request through the app's error handler; a wrong static secret fails the registration.
 *
 * @example
 * ```ts
 * const app = Fastify();
 * await app.register(webhookReceiver, {
 *   prefix: '/hooks',
 *   secret: process.env.FERRY_WEBHOOK_SECRET!,
 *   routes(hooks) {
 *     hooks.post('/ferry', async (request, reply) => {
 *       request.log.info({ id: request.webhook!.id, body: request.body }, 'delivery');
 *       return reply.code(204).send();
 *     });
 *   },
 * });
 * ```
 */
export const webhookReceiver: FastifyPluginAsync<WebhookReceiverOptions> = async (app, options) => {
  const limit = options.limit ?? WEBHOOK_BODY_LIMIT;
  if (!(limit >= 0)) throw new FerryError('configuration_invalid', 'The webhook body limit must be a number of bytes, 0 or more.');
  const { secret, onRejected } = options;
  if (typeof secret !== 'function') {
    // A static secret or option that is wrong fails the registration, not the first delivery.
    try {
      verifyWebhook('', {}, secret, configurationOf(options));
    } catch (error) {
      if (!(error instanceof WebhookVerificationError)) throw error;
    }
  }

  // Inherited decorations (another raw-body plugin higher up) are reused rather than redeclared.
  if (!app.hasRequestDecorator('rawBody')) app.decorateRequest('rawBody', undefined);
  if (!app.hasRequestDecorator('webhook')) app.decorateRequest('webhook', undefined);

  // Every media type (and none) arrives unread: the signature covers the bytes, not a parse of them.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, payload, done) => done(null, payload));

  // preValidation, not preHandler: a route's body schema must see the parsed JSON, and only
  // once it is known to be genuine.
  app.addHook('preValidation', async (request, reply) => {
    let raw: Buffer;
    try {
      raw = await readBody(request, limit);
    } catch (error) {
      if (!(error instanceof TooLarge)) throw error;
      // The rest of the body is not read: close the connection rather than drain it.
      return sendProblem(reply, new FerryError('payload_too_large', `The webhook body is larger than ${limit} bytes.`), { connection: 'close' });
    }
    let verified: VerifiedWebhook;
    try {
      const secrets = typeof secret === 'function' ? await secret(request) : secret;
      verified = verifyWebhook(raw, request.headers, secrets, configurationOf(options));
    } catch (error) {
      if (!(error instanceof WebhookVerificationError)) throw error;
      onRejected?.(error, request);
      // The same generic answer for every reason: telling which check failed would help a forger.
      return sendProblem(reply, error);
    }
    let parsed: unknown;
    try {
      parsed = raw.length === 0 ? undefined : JSON.parse(raw.toString('utf8'));
    } catch {
      // Signed but not JSON: the sender's fault, and it knows the body anyway.
      return sendProblem(reply, new FerryError('malformed_json', 'The webhook body is not valid JSON.'));
    }
    request.rawBody = raw;
    request.body = parsed;
    request.webhook = verified;
  });

  await options.routes(app);
};

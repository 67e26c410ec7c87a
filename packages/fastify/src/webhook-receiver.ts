import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { FerryError } from '@ferry/core';
import {
  lingerAfterRefusedBody,
  problemResponse,
  readLimitedBody,
  WEBHOOK_BODY_LIMIT,
  WebhookBodyTooLarge,
  webhookReceiverCore,
  type VerifiedWebhook,
  type WebhookReceiverBaseOptions,
  type WebhookSecrets,
} from '@ferry/http';

declare module 'fastify' {
  interface FastifyRequest {
    /** The body bytes exactly as received, set by {@link webhookReceiver} on the routes it guards. */
    rawBody?: Buffer;
    /** Set by {@link webhookReceiver} once the request's signature has been verified. */
    webhook?: VerifiedWebhook;
  }
}

/** Options of {@link webhookReceiver}. */
export interface WebhookReceiverOptions extends WebhookReceiverBaseOptions<FastifyRequest> {
  /**
   * Declares the routes to guard, on the plugin's own encapsulated instance: only they get the
   * raw-body parser and the verification hook.
   */
  routes: (instance: FastifyInstance) => void | Promise<void>;
}

export { WEBHOOK_BODY_LIMIT, type VerifiedWebhook, type WebhookSecrets };

function sendProblem(reply: FastifyReply, error: FerryError, extraHeaders: Record<string, string> = {}): FastifyReply {
  const requestId = randomUUID();
  const { response } = problemResponse(error, requestId);
  reply.code(response.status).headers({ ...response.headers, ...extraHeaders, 'x-request-id': requestId });
  // A Buffer, not a string: Fastify would append a charset to the problem's Content-Type.
  return reply.send(Buffer.from(response.body!));
}

/**
 * A Fastify 5 plugin that lets through only webhook deliveries signed the Standard Webhooks way
 * (docs/api.md, Verifying webhook deliveries), verified with `verifyWebhook` of `@ferry/core`, on the routes declared
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
  const receiver = webhookReceiverCore(options);

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
      // The parser below hands over the unread stream; bodyless requests never reach it.
      const stream = (request.body as AsyncIterable<Buffer | string> | undefined) ?? request.raw;
      raw = await readLimitedBody(stream, receiver.limit, request.headers['content-length']);
    } catch (error) {
      if (!(error instanceof WebhookBodyTooLarge)) throw error;
      // The rest of the body is not read: close the connection (lingering, so the 413 arrives).
      lingerAfterRefusedBody(request.raw);
      return sendProblem(reply, receiver.tooLarge(), { connection: 'close' });
    }
    const checked = await receiver.check(request, raw, request.headers);
    if (!checked.ok) return sendProblem(reply, checked.problem);
    request.rawBody = raw;
    request.body = checked.body;
    request.webhook = checked.webhook;
  });

  await options.routes(app);
};

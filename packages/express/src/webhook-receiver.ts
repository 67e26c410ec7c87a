import { randomUUID } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import type { FerryError } from '@ferry/core';
import {
  lingerAfterRefusedBody,
  problemResponse,
  readLimitedBody,
  WEBHOOK_BODY_LIMIT,
  WebhookBodyTooLarge,
  webhookReceiverCore,
  type VerifiedWebhook,
  type WebhookCheck,
  type WebhookReceiverBaseOptions,
  type WebhookSecrets,
} from '@ferry/http';

declare global {
  // Express's own extension point for request properties (declaration merging).
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** The body bytes exactly as received, set by {@link verifyWebhooks} (or by a host parser before it). */
      rawBody?: Buffer;
      /** Set by {@link verifyWebhooks} once the request's signature has been verified. */
      webhook?: VerifiedWebhook;
    }
  }
}

/** Options of {@link verifyWebhooks}. */
export type WebhookReceiverOptions = WebhookReceiverBaseOptions<Request>;

export { WEBHOOK_BODY_LIMIT, type VerifiedWebhook, type WebhookSecrets };

function writeProblem(res: Response, error: FerryError, extraHeaders: Record<string, string> = {}): void {
  const requestId = randomUUID();
  const { response } = problemResponse(error, requestId);
  res.status(response.status);
  // setHeader, not res.set: Express would append a charset to Content-Type.
  for (const [name, value] of Object.entries({ ...response.headers, ...extraHeaders, 'x-request-id': requestId })) res.setHeader(name, value);
  res.setHeader('content-length', Buffer.byteLength(response.body!));
  res.end(response.body);
}

/**
 * The body bytes as the sender signed them, or null when a host body parser already consumed
 * them without keeping them (`req.rawBody`), after which no signature can be checked.
 */
async function rawBodyOf(req: Request, limit: number): Promise<Buffer | null> {
  const given: unknown = req.rawBody;
  if (Buffer.isBuffer(given)) return given;
  if (typeof given === 'string') return Buffer.from(given);
  const body: unknown = req.body;
  // express.raw() ran first: its Buffer is the bytes.
  if (Buffer.isBuffer(body)) return body;
  // Express 5 leaves req.body undefined unless a parser set it; a parser that skipped the request
  // (another media type, no body) left the stream unread.
  if (body === undefined && !req.readableEnded) {
    return readLimitedBody(req as AsyncIterable<Buffer | string>, limit, req.headers['content-length']);
  }
  return null;
}

/**
 * Express 5 middleware that lets through only webhook deliveries signed the Standard Webhooks way
 * (docs/api.md, Verifying webhook deliveries), verified with `verifyWebhook` of `@ferry/core`. It reads the raw body
 * itself, so mount it on the webhook route before any body parser. Then:
 *
 * - a missing, mis-signed or stale (default tolerance 300 s) request is answered 401
 *   `application/problem+json` with code `unauthenticated`, before any later handler runs; the
 *   answer is the same whichever check failed (`onRejected` gets the reason, for logs);
 * - a body over `limit` (default 1 MiB) is 413 `payload_too_large`, before verification;
 * - a correctly signed body that is not JSON is 400 `malformed_json`;
 * - otherwise `req.body` is the parsed JSON (undefined for an empty body), `req.rawBody` the
 *   bytes and `req.webhook` `{ id, timestamp }`, and the next handler runs.
 *
 * If a host parser such as `express.json()` ran first, the bytes are gone and re-serializing the
 * parsed value would not give them back: unless that parser kept them in `req.rawBody` (its
 * `verify` option can), every request is answered 500 `configuration_invalid` with a detail
 * saying so, since the fault is the receiver's setup, not the request. A `secret` function that
 * throws, or returns something that is not a valid `whsec_` secret, passes its error to `next`.
 *
 * @example
 * ```ts
 * const app = express();
 * app.post('/hooks/ferry', verifyWebhooks({ secret: process.env.FERRY_WEBHOOK_SECRET! }), (req, res) => {
 *   console.log(req.webhook!.id, req.body);
 *   res.sendStatus(204);
 * });
 * app.use(express.json()); // the rest of the app may parse JSON as usual
 * ```
 */
export function verifyWebhooks(options: WebhookReceiverOptions): RequestHandler {
  const receiver = webhookReceiverCore(options);
  return async (req, res, next) => {
    let raw: Buffer | null;
    try {
      raw = await rawBodyOf(req, receiver.limit);
    } catch (error) {
      if (!(error instanceof WebhookBodyTooLarge)) throw error;
      // The rest of the body is not read: close the connection (lingering, so the 413 arrives).
      lingerAfterRefusedBody(req);
      writeProblem(res, receiver.tooLarge(), { connection: 'close' });
      return;
    }
    if (raw === null) {
      writeMisconfigured(res);
      return;
    }
    let checked: WebhookCheck;
    try {
      checked = await receiver.check(req, raw, req.headers);
    } catch (error) {
      return next(error);
    }
    if (!checked.ok) {
      writeProblem(res, checked.problem);
      return;
    }
    req.rawBody = raw;
    req.body = checked.body;
    req.webhook = checked.webhook;
    next();
  };
}

/**
 * A 500 with a detail that names the fix: problemResponse would hide a 5xx's message, but this one
 * holds no secret and is the only way the receiver's owner learns the setup from the sender's
 * delivery log.
 */
function writeMisconfigured(res: Response): void {
  const requestId = randomUUID();
  const body = JSON.stringify({
    type: '/problems/configuration_invalid',
    title: 'Internal Server Error',
    status: 500,
    detail: 'The webhook body was parsed before its signature could be checked: mount verifyWebhooks before any body parser, or keep the raw bytes in req.rawBody.',
    code: 'configuration_invalid',
    request_id: requestId,
  });
  res.status(500);
  res.setHeader('content-type', 'application/problem+json');
  res.setHeader('x-request-id', requestId);
  res.setHeader('content-length', Buffer.byteLength(body));
  res.end(body);
}

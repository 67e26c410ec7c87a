import { randomUUID } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import { FerryError, verifyWebhook, WebhookVerificationError } from '@ferry/core';
import { problemResponse } from '@ferry/http';

/** What a verified request carries besides its body: the message id and unix-seconds timestamp. */
export interface VerifiedWebhook {
  /** `webhook-id`: the delivery's event id, the same on every retry, so receivers dedupe on it. */
  id: string;
  /** `webhook-timestamp`, unix seconds. */
  timestamp: number;
}

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

/** Signing secrets: one, or several while a rotated secret overlaps the new one. */
export type WebhookSecrets = string | readonly string[];

/** Options of {@link verifyWebhooks}. */
export interface WebhookReceiverOptions {
  /**
   * The subscription's `whsec_` signing secret, several during a rotation overlap (a delivery is
   * accepted when any of its signatures matches any of them), or a function that finds them for
   * a request, e.g. by a tenant in its path.
   */
  secret: WebhookSecrets | ((req: Request) => WebhookSecrets | Promise<WebhookSecrets>);
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
  onRejected?: (error: WebhookVerificationError, req: Request) => void;
}

/** Default of {@link WebhookReceiverOptions.limit}: the /v2 API's own body limit. */
export const WEBHOOK_BODY_LIMIT = 1024 * 1024;

/** Thrown while reading a body that outgrows the limit; answered 413. */
class TooLarge extends Error {}

function writeProblem(res: Response, error: FerryError, extraHeaders: Record<string, string> = {}): void {
  const requestId = randomUUID();
  const { response } = problemResponse(error, requestId);
  res.status(response.status);
  // setHeader, not res.set: Express would append a charset to Content-Type.
  for (const [name, value] of Object.entries({ ...response.headers, ...extraHeaders, 'x-request-id': requestId })) res.setHeader(name, value);
  res.setHeader('content-length', Buffer.byteLength(response.body!));
  res.end(response.body);
}

async function readStream(req: Request, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer | string>) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    size += buf.byteLength;
    // Cut off as soon as it is known, so an endless chunked body is never buffered.
    if (size > limit) throw new TooLarge();
    chunks.push(buf);
  }
  return Buffer.concat(chunks, size);
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
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) throw new TooLarge();
    return readStream(req, limit);
  }
  return null;
}

/**
 * Express 5 middleware that lets through only webhook deliveries signed the Standard Webhooks way
 * (contract section 8), verified with `verifyWebhook` of `@ferry/core`. It reads the raw body
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
  const limit = options.limit ?? WEBHOOK_BODY_LIMIT;
  if (!(limit >= 0)) throw new FerryError('configuration_invalid', 'The webhook body limit must be a number of bytes, 0 or more.');
  const { secret, onRejected } = options;
  if (typeof secret !== 'function') {
    // A static secret or option that is wrong fails here, at startup, rather than on the first delivery.
    try {
      verifyWebhook('', {}, secret, configurationOf(options));
    } catch (error) {
      if (!(error instanceof WebhookVerificationError)) throw error;
    }
  }

  return async (req, res, next) => {
    let raw: Buffer | null;
    try {
      raw = await rawBodyOf(req, limit);
    } catch (error) {
      if (!(error instanceof TooLarge)) throw error;
      // The rest of the body is not read: close the connection rather than drain it.
      writeProblem(res, new FerryError('payload_too_large', `The webhook body is larger than ${limit} bytes.`), { connection: 'close' });
      return;
    }
    if (raw === null) {
      writeMisconfigured(res);
      return;
    }
    let verified: VerifiedWebhook;
    try {
      const secrets = typeof secret === 'function' ? await secret(req) : secret;
      verified = verifyWebhook(raw, req.headers, secrets, configurationOf(options));
    } catch (error) {
      if (!(error instanceof WebhookVerificationError)) return next(error);
      onRejected?.(error, req);
      // The same generic answer for every reason: telling which check failed would help a forger.
      writeProblem(res, error);
      return;
    }
    let parsed: unknown;
    try {
      parsed = raw.length === 0 ? undefined : JSON.parse(raw.toString('utf8'));
    } catch {
      // Signed but not JSON: the sender's fault, and it knows the body anyway.
      writeProblem(res, new FerryError('malformed_json', 'The webhook body is not valid JSON.'));
      return;
    }
    req.rawBody = raw;
    req.body = parsed;
    req.webhook = verified;
    next();
  };
}

function configurationOf(options: WebhookReceiverOptions): { toleranceSeconds?: number; now?: number } {
  return {
    ...(options.toleranceSeconds !== undefined ? { toleranceSeconds: options.toleranceSeconds } : {}),
    ...(options.now !== undefined ? { now: options.now() } : {}),
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

import { Router, type Request, type Response } from 'express';
import type { Engine } from '@ferry/core';
import { createHttpApi, lingerAfterRefusedBody, type HttpApiOptions, type HttpRequest } from '@ferry/http';

const MOUNT = '/v2';

/**
 * The path and query relative to the host's mount point, beginning with `/v2`. Taken from
 * `originalUrl` so `/v2` and `/v2/` stay distinct and percent-encoding is left as sent.
 */
function relativeUrl(req: Request): string {
  // req.baseUrl is the host's mount prefix followed by our '/v2'.
  if (req.originalUrl.startsWith(req.baseUrl)) return MOUNT + req.originalUrl.slice(req.baseUrl.length);
  // A host middleware rewrote the URL: fall back to what the router left us ('/' for '/v2' itself).
  return MOUNT + (req.url === '/' ? '' : req.url.startsWith('/?') ? req.url.slice(1) : req.url);
}

/**
 * An Express 5 router that serves the Ferry /v2 API of `engine` under `/v2`, wherever the host
 * mounts it: `app.use(ferryRouter(engine))` serves `/v2/...`, `app.use('/api', ferryRouter(engine))`
 * serves `/api/v2/...`. Every method is answered by `@ferry/http`, so status codes, headers and
 * problem bodies are those of every other Ferry adapter.
 *
 * Mount it before body parsers when you can: it reads the raw body itself, which lets it answer
 * malformed JSON (400), non-JSON media types (415) and oversized bodies (413). After a host
 * `express.json()` it uses the parsed body instead.
 *
 * @example
 * ```ts
 * const app = express();
 * app.use('/api', ferryRouter(engine, { publicUrl: 'https://example.com/api' }));
 * ```
 */
export function ferryRouter(engine: Engine, options: HttpApiOptions = {}): Router {
  const api = createHttpApi(engine, options);
  // Case-sensitive like the API's own route table: '/V2/...' is the host's business.
  const router = Router({ caseSensitive: true });
  router.use(MOUNT, (req: Request, res: Response, next: (error?: unknown) => void) => {
    const request: HttpRequest = { method: req.method, url: relativeUrl(req), headers: req.headers };
    // Express 5 leaves req.body undefined unless a body parser ran.
    if (req.body !== undefined) request.parsedBody = req.body as unknown;
    else request.body = req;
    if (req.socket.remoteAddress !== undefined) request.remoteAddress = req.socket.remoteAddress;
    // req.baseUrl is the host's mount prefix followed by our '/v2'.
    request.mountPath = req.baseUrl.endsWith(MOUNT) ? req.baseUrl.slice(0, -MOUNT.length) : '';
    api.dispatch(request).then((response) => {
      // A body refused half-way: the client must get the 413 before the connection closes.
      if (response.status === 413) lingerAfterRefusedBody(req);
      res.status(response.status);
      // setHeader, not res.set: Express would append a charset to Content-Type.
      for (const [name, value] of Object.entries(response.headers)) res.setHeader(name, value);
      // Explicit, so a HEAD answer carries the length a GET would have, as under Fastify.
      if (response.body !== undefined) res.setHeader('content-length', Buffer.byteLength(response.body));
      res.end(response.body);
    }, next);
  });
  return router;
}

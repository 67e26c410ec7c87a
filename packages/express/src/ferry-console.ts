import type { Request, RequestHandler, Response } from 'express';
import { createConsoleHandler, type ConsoleOptions } from '@ferry/console';

/**
 * Express middleware that serves the Ferry Console wherever the host mounts it:
 * `app.use('/console', ferryConsole())`. It is static files (the page, its script and style
 * sheet) which talk to the `/v2` API of the same origin; pass `apiBase` when the API is mounted
 * under a prefix (`app.use('/api', ferryRouter(engine))` → `ferryConsole({ apiBase: '/api' })`).
 * Every answer carries a Content-Security-Policy that allows scripts and requests from this
 * origin only.
 *
 * @example
 * ```ts
 * app.use(ferryRouter(engine));
 * app.use('/console', ferryConsole());
 * ```
 */
export function ferryConsole(options: ConsoleOptions = {}): RequestHandler {
  const handle = createConsoleHandler(options);
  return (req: Request, res: Response) => {
    // Express strips the mount path from req.url ('/' for '/console' itself) and keeps it in baseUrl.
    const answer = handle({ method: req.method, path: req.url, basePath: req.baseUrl, headers: req.headers });
    res.status(answer.status).set(answer.headers);
    res.end(answer.body);
  };
}

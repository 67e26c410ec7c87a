import { consoleAsset, loadBuiltAssets, type ConsoleAsset } from './console-assets.js';
import { consolePage, FAVICON_SVG } from './console-page.js';

/** Options of {@link createConsoleHandler}, and of the adapters' `ferryConsole`. */
export interface ConsoleOptions {
  /**
   * The path the host mounted the `/v2` API under: `''` (the default) when the API answers at
   * `/v2`, `'/api'` for `app.use('/api', ferryRouter(engine))`. A path on this origin only: the
   * page's Content-Security-Policy lets it talk to its own origin and nowhere else.
   */
  apiBase?: string;
}

/** What an adapter hands the console: the request's method, its path below the mount point, and two headers. */
export interface ConsoleRequest {
  method: string;
  /** The path below the console's mount point (`/`, `/pipelines/pip_...`, `/assets/console.js`), query included or not. */
  path: string;
  /** Where the console is mounted (`/console`), as the browser sees it; no trailing slash. */
  basePath: string;
  headers: { 'if-none-match'?: string | string[] | undefined; 'accept-encoding'?: string | string[] | undefined };
}

/** The answer: a status, headers and, except for HEAD and 304, a body. */
export interface ConsoleResponse {
  status: number;
  headers: Record<string, string>;
  body?: Buffer;
}

/** A function from a {@link ConsoleRequest} to its {@link ConsoleResponse}; synchronous, no I/O after the first call. */
export type ConsoleHandler = (request: ConsoleRequest) => ConsoleResponse;

/**
 * The Content-Security-Policy of every console answer: scripts, styles and requests from the
 * console's own origin only, no inline script or style element, no plugin, no frame of the page
 * elsewhere, no form posting anywhere. The page's only requests are its two files and the `/v2`
 * API on the same origin.
 */
export const CONSOLE_CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'";

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONSOLE_CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

/** Checks and normalises {@link ConsoleOptions.apiBase}: a same-origin path, no trailing slash. */
function normaliseApiBase(apiBase: string | undefined): string {
  const value = (apiBase ?? '').replace(/\/+$/, '');
  // `//host` would be another origin to the browser.
  if (value !== '' && (!/^\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*$/.test(value) || value.startsWith('//'))) {
    throw new TypeError(`ferryConsole: apiBase must be a path on the console's own origin, such as "/api" (got ${JSON.stringify(apiBase)}).`);
  }
  return value;
}

function header(value: string | string[] | undefined): string {
  return Array.isArray(value) ? value.join(', ') : (value ?? '');
}

/** Whether `Accept-Encoding` takes gzip (a `q=0` refuses it). */
function acceptsGzip(acceptEncoding: string): boolean {
  return acceptEncoding.split(',').some((part) => {
    const [coding, ...params] = part.trim().toLowerCase().split(';');
    if (coding !== 'gzip' && coding !== '*') return false;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

function text(status: number, message: string, extra: Record<string, string> = {}): ConsoleResponse {
  return { status, headers: { ...SECURITY_HEADERS, 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', ...extra }, body: Buffer.from(`${message}\n`) };
}

/**
 * The console as a framework-free function, which the Express and Fastify adapters and
 * `ferry serve` wrap. It serves the page's HTML for every view's URL (the page routes in the
 * browser, so a shared link opens the right view), the built script and style sheet, and the
 * icon; only GET and HEAD. Every answer carries {@link CONSOLE_CONTENT_SECURITY_POLICY} and
 * `nosniff`; files are revalidated by ETag and sent gzipped to clients that accept it.
 *
 * The built files are read once, at the first request: a checkout that has not built the
 * package answers 503 saying so, and the host keeps running.
 */
export function createConsoleHandler(options: ConsoleOptions = {}): ConsoleHandler {
  const apiBase = normaliseApiBase(options.apiBase);
  let built: Map<string, ConsoleAsset> | undefined;
  const favicon = consoleAsset('image/svg+xml', Buffer.from(FAVICON_SVG));
  // One page per mount point; a host mounts the console in one place, rarely two.
  const pages = new Map<string, ConsoleAsset>();

  function page(basePath: string): ConsoleAsset {
    let asset = pages.get(basePath);
    if (asset === undefined) {
      asset = consoleAsset('text/html; charset=utf-8', Buffer.from(consolePage(basePath, apiBase)));
      if (pages.size >= 16) pages.clear();
      pages.set(basePath, asset);
    }
    return asset;
  }

  function send(request: ConsoleRequest, asset: ConsoleAsset): ConsoleResponse {
    const gzip = asset.gzipped.length < asset.body.length && acceptsGzip(header(request.headers['accept-encoding']));
    // Each encoding is its own representation, with its own strong validator.
    const etag = gzip ? `${asset.etag.slice(0, -1)}-gz"` : asset.etag;
    const headers: Record<string, string> = { ...SECURITY_HEADERS, 'content-type': asset.contentType, 'cache-control': 'no-cache', etag, vary: 'accept-encoding' };
    const ifNoneMatch = header(request.headers['if-none-match']);
    if (ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag)) return { status: 304, headers };
    const body = gzip ? asset.gzipped : asset.body;
    if (gzip) headers['content-encoding'] = 'gzip';
    headers['content-length'] = String(body.length);
    return request.method === 'HEAD' ? { status: 200, headers } : { status: 200, headers, body };
  }

  return (request) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') return text(405, 'The console answers GET and HEAD only.', { allow: 'GET, HEAD' });
    const basePath = request.basePath.replace(/\/+$/, '');
    const path = request.path.split('?')[0] ?? '/';
    if (path === '/favicon.svg') return send(request, favicon);
    if (path.startsWith('/assets/')) {
      built ??= loadBuiltAssets();
      if (built === undefined) return text(503, 'The console is not built: run `npm run build` in the @ferry/console package.');
      const asset = built.get(path.slice('/assets/'.length));
      return asset === undefined ? text(404, 'Not found.') : send(request, asset);
    }
    return send(request, page(basePath));
  };
}

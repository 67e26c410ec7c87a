/**
 * The framework-free request and response shapes of the /v2 surface. An adapter turns its
 * framework's request into an {@link HttpRequest}, calls `dispatch`, and writes the
 * {@link HttpResponse} back unchanged: status, every header, and the body bytes.
 */

/** Header values as Node's `IncomingHttpHeaders` has them: lower-case names. */
export type HttpHeaders = Record<string, string | string[] | undefined>;

/** A request body as the adapter found it. */
export type HttpBody =
  /** The raw bytes, read by the adapter or by its framework. */
  | Uint8Array
  | string
  /** The unread request stream (Node's `IncomingMessage` is one): dispatch reads it with the body limit. */
  | AsyncIterable<Uint8Array | string>;

/** One request, as an adapter hands it to `dispatch`. */
export interface HttpRequest {
  /** Upper-case method. */
  method: string;
  /**
   * Path and query as the client sent them, relative to where the host mounted the API, so it
   * begins with `/v2`: `/v2/pipelines?limit=10`. An adapter mounted under a prefix (`/api`) strips
   * the prefix first. Percent-encoding is left as sent.
   */
  url: string;
  headers: HttpHeaders;
  /** Undefined for a request without a body. */
  body?: HttpBody;
  /**
   * A body some earlier middleware of the host already parsed as JSON (for example Express's
   * `express.json()`). Used when `body` is absent. Raw bytes are preferred: they let the API
   * answer malformed JSON and oversized bodies itself.
   */
  parsedBody?: unknown;
  /** Peer address, for logs. */
  remoteAddress?: string;
  /**
   * The path the host mounted the API under, as the adapter found it (`/api`), `''` at the root:
   * the OpenAPI document's `servers` URL (unless `publicUrl` is set) and the `Location` of a
   * created resource begin with it.
   */
  mountPath?: string;
}

/** The answer to write back. */
export interface HttpResponse {
  status: number;
  /** Lower-case header names; every one must be written. */
  headers: Record<string, string>;
  /** Serialized body; undefined for 204. */
  body?: string;
}

/** Per-key token bucket: `requests` tokens refilled evenly over `perSeconds`. */
export interface RateLimitSettings {
  requests: number;
  perSeconds: number;
}

/** A line of the API's access log, handed to `onRequest` after each answer. */
export interface RequestLog {
  requestId: string;
  method: string;
  /** The matched route template (`/v2/pipelines/{id}`), or the path's first segments when none matched. */
  route: string;
  status: number;
  durationMs: number;
  /** The error code of a problem answer. */
  code?: string;
  workspaceId?: string;
  apiKeyId?: string;
}

/** Options of `createHttpApi`. */
export interface HttpApiOptions {
  /** Default per-key rate limit (600 per 60 s; docs/api.md, The HTTP protocol). A key's own `rate_limit` wins. */
  rateLimit?: RateLimitSettings | false;
  /** Per-connector limit of the ingest endpoint (default 6000 per 60 s). */
  ingestRateLimit?: RateLimitSettings | false;
  /** Largest accepted body in bytes (default 1 MiB; docs/api.md, The HTTP protocol). */
  bodyLimit?: number;
  /** Called after every answer, e.g. to log it or count it. Errors thrown here are ignored. */
  onRequest?: (entry: RequestLog) => void;
  /**
   * Server URL written into the OpenAPI document's `servers`, whatever the mount point. Default:
   * the path the API is mounted under (`/api`), `/` at the root.
   */
  publicUrl?: string;
}

/** One route of the table, as listed by `HttpApi.routes`. */
export interface RouteInfo {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** OpenAPI-style template: `/v2/pipelines/{id}`. */
  path: string;
  operationId: string;
  /** Scope a key needs; `null` for routes that do not take an API key (ingest, openapi.json). */
  scope: string | null;
  summary: string;
}

/** The /v2 surface of one engine: what the adapters mount. */
export interface HttpApi {
  /** Answers one request. Never rejects: every failure is a problem+json response. */
  dispatch(request: HttpRequest): Promise<HttpResponse>;
  /** The route table. */
  readonly routes: readonly RouteInfo[];
  /**
   * The OpenAPI 3.1 document generated from the route table and the engine's registered types
   * (also served at `GET /v2/openapi.json`), its `servers` URL for the mount path given
   * (default `''`, the root).
   */
  openapi(mountPath?: string): Record<string, unknown>;
  /** Largest body dispatch accepts, in bytes: adapters that buffer bodies themselves use it as their limit. */
  readonly bodyLimit: number;
}

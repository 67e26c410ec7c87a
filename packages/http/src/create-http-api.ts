import { performance } from 'node:perf_hooks';
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace as otel, type Span } from '@opentelemetry/api';
import { isFerryError, type Engine, type FieldError } from '@ferry/core';
import { decodeUtf8Exact, pointerToken, scopeAllows, type AuthContext } from '@ferry/core/internal';
import { assertIdempotencyKey, requestHash, withIdempotency } from './idempotency.js';
import { openApiDocuments } from './openapi.js';
import { requestIdOf } from './outside-dispatch.js';
import { HttpProblem, JSON_CONTENT_TYPE, problemResponse } from './problem.js';
import { assertRequestCharacters } from './path-encoding.js';
import { parseQuery } from './query.js';
import { RateLimiter, rateLimitHeaders } from './rate-limiter.js';
import { header, isJsonContentType, parseJson, readBody } from './request-body.js';
import { compileRoutes, matchRoute, type RouteContext, type RouteDefinition } from './route.js';
import { allRoutes } from './routes/index.js';
import type { HttpApi, HttpApiOptions, HttpRequest, HttpResponse, RateLimitSettings, RouteInfo } from './types.js';

const DEFAULT_BODY_LIMIT = 1024 * 1024;
const EMPTY = new Uint8Array(0);
/** The instrumentation scope of the API's request spans. */
const TRACER_NAME = '@ferry/http';
const DEFAULT_RATE_LIMIT: RateLimitSettings = { requests: 600, perSeconds: 60 };
const DEFAULT_INGEST_RATE_LIMIT: RateLimitSettings = { requests: 6000, perSeconds: 60 };
/** Failed authentications allowed per client address: slows guessing keys down, costs honest clients nothing. */
const AUTH_FAILURE_LIMIT: RateLimitSettings = { requests: 60, perSeconds: 60 };

/** What dispatch learnt about a request, for the access log. */
interface Trace {
  route: string;
  /** The route matched an operation: `route` is its template, not a guess from the path. */
  matched?: boolean;
  auth?: AuthContext;
}

/**
 * Builds the /v2 surface of an engine: a route table and a `dispatch` that answers every request
 * itself, so the Express and Fastify adapters only translate and always answer alike.
 *
 * Per request, in order: match the route (404, or 405 with `Allow`); authenticate (401 with
 * `WWW-Authenticate`), rate-limit (429 with `Retry-After`; `RateLimit-Policy`/`RateLimit` on every
 * answer) and check the scope (403); read the body (413, 415, 400 `malformed_json`); read the
 * query (400); then, under an `Idempotency-Key` when one is sent, call the service, whose errors
 * become problem+json with their stable code. Every answer carries `X-Request-Id`.
 */
export function createHttpApi(engine: Engine, options: HttpApiOptions = {}): HttpApi {
  const routes = allRoutes();
  const compiled = compileRoutes(routes);
  const limiter = new RateLimiter(engine.clock);
  const bodyLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const rateLimit = options.rateLimit === undefined ? DEFAULT_RATE_LIMIT : options.rateLimit;
  const ingestLimit = options.ingestRateLimit === undefined ? DEFAULT_INGEST_RATE_LIMIT : options.ingestRateLimit;
  // Built on first use, from the route table (meta routes included) and the engine's plugins.
  const document = openApiDocuments(routes, { engine, bodyLimit, ...(options.publicUrl !== undefined ? { publicUrl: options.publicUrl } : {}) });

  const metaRoutes: RouteDefinition[] = [
    {
      method: 'GET',
      path: '/v2/openapi.json',
      operationId: 'getOpenApi',
      summary: 'This API as an OpenAPI 3.1 document',
      tag: 'Meta',
      auth: { kind: 'none' },
      body: 'none',
      responses: { 200: { description: 'The OpenAPI document.' } },
      errors: [],
      handle: async ({ mountPath }) => ({ status: 200, body: document(mountPath) }),
    },
  ];
  routes.push(...metaRoutes);
  compiled.push(...compileRoutes(metaRoutes));

  /** Takes a token; throws 429 when the bucket is empty. Adds the headers either way. */
  function limit(bucket: string, policy: RateLimitSettings | false, headers: Record<string, string>, name: string): void {
    if (policy === false) return;
    const decision = limiter.take(bucket, policy);
    Object.assign(headers, rateLimitHeaders(decision, name));
    if (!decision.allowed) {
      throw new HttpProblem('rate_limited', `Too many requests; retry in ${decision.retryAfterSeconds} s.`, { retryAfterSeconds: decision.retryAfterSeconds });
    }
  }

  async function authenticate(request: HttpRequest, headers: Record<string, string>): Promise<AuthContext> {
    const value = header(request.headers, 'authorization');
    const token = value === undefined ? undefined : /^Bearer +(\S+) *$/i.exec(value)?.[1];
    const challenge = token === undefined ? 'Bearer realm="ferry"' : 'Bearer realm="ferry", error="invalid_token"';
    const refuse = () => {
      // Failed attempts are counted per client address, so keys cannot be guessed at speed; the
      // answer shows that limit, the one this client is spending.
      limit(`auth-failures:${request.remoteAddress ?? ''}`, AUTH_FAILURE_LIMIT, headers, 'auth');
      return new HttpProblem('unauthenticated', token === undefined ? 'An API key is required: Authorization: Bearer <key>.' : 'The API key is not valid.', {
        headers: { 'www-authenticate': challenge },
      });
    };
    if (token === undefined) throw refuse();
    try {
      return await engine.apiKeys.verify(token);
    } catch (error) {
      if (isFerryError(error, 'unauthenticated')) throw refuse();
      throw error;
    }
  }

  async function bodyOf(request: HttpRequest, definition: RouteDefinition): Promise<{ bytes: Uint8Array; parsed: unknown }> {
    if (definition.method === 'GET' || definition.method === 'DELETE') return { bytes: EMPTY, parsed: undefined };
    let bytes: Uint8Array;
    if (request.body === undefined && request.parsedBody !== undefined) {
      // A host middleware parsed the body already; its bytes are gone, its meaning is not.
      bytes = Buffer.from(JSON.stringify(request.parsedBody) ?? '');
      if (bytes.byteLength > bodyLimit) throw new HttpProblem('payload_too_large', `The request body is larger than ${bodyLimit} bytes.`);
    } else {
      bytes = await readBody(request.body, request.headers, bodyLimit);
    }
    if (bytes.byteLength === 0) {
      if (definition.body === 'required') {
        throw new HttpProblem('validation_failed', 'A JSON body is required.', { errors: [{ pointer: '', code: 'required', detail: 'Send a JSON object.' }] });
      }
      return { bytes, parsed: undefined };
    }
    if (request.parsedBody === undefined && !isJsonContentType(header(request.headers, 'content-type'))) {
      throw new HttpProblem('unsupported_media_type', 'Send the body as Content-Type: application/json.');
    }
    // Ingest checks its signature over the bytes as received before it decodes them.
    if (definition.rawBody) return { bytes, parsed: undefined };
    // Bytes first: what is not UTF-8 is refused (400), never decoded with replacement characters.
    const parsed = request.body === undefined && request.parsedBody !== undefined ? request.parsedBody : parseJson(decodeUtf8Exact(bytes, 'The request body'));
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw new HttpProblem('validation_failed', 'The body must be a JSON object.', { errors: [{ pointer: '', code: 'type', detail: 'Expected an object.' }] });
    }
    if (definition.body === 'none') {
      const errors: FieldError[] = Object.keys(parsed).map((k) => ({ pointer: `/${pointerToken(k)}`, code: 'unknown_field', detail: 'This operation takes no body fields.' }));
      if (errors.length > 0) throw new HttpProblem('validation_failed', 'This operation takes no body.', { errors });
    }
    return { bytes, parsed };
  }

  async function handle(request: HttpRequest, requestId: string, headers: Record<string, string>, trace: Trace): Promise<HttpResponse> {
    const url = request.url;
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const search = q < 0 ? '' : url.slice(q + 1);
    const method = request.method.toUpperCase();
    assertRequestCharacters(path, request.headers);
    const match = matchRoute(compiled, method, path);
    if (match.kind !== 'found') {
      // No key is looked at for a request that names no operation: the client address pays.
      limit(`ip:${request.remoteAddress ?? ''}`, rateLimit, headers, 'default');
    }
    if (match.kind === 'not_found') {
      throw new HttpProblem('not_found', `There is no route ${method} ${path.slice(0, 200)}.`);
    }
    if (match.kind === 'method_not_allowed') {
      throw new HttpProblem('method_not_allowed', `${method} is not allowed here; use ${match.allow.join(', ')}.`, { headers: { allow: match.allow.join(', ') } });
    }
    const { definition } = match.route;
    trace.route = definition.path;
    trace.matched = true;
    let auth: AuthContext | null = null;
    if (definition.auth.kind === 'api_key') {
      auth = await authenticate(request, headers);
      trace.auth = auth;
      const policy = auth.rate_limit ? { requests: auth.rate_limit.requests, perSeconds: auth.rate_limit.per_seconds } : rateLimit;
      limit(`key:${auth.api_key_id}`, policy, headers, 'default');
      if (!scopeAllows(auth.scopes, definition.auth.scope)) {
        throw new HttpProblem('forbidden', `This API key lacks the ${definition.auth.scope} scope.`);
      }
    } else if (definition.auth.kind === 'signature') {
      limit(`ingest:${match.params.connector_id ?? ''}`, ingestLimit, headers, 'ingest');
    } else {
      limit(`ip:${request.remoteAddress ?? ''}`, rateLimit, headers, 'default');
    }
    const query = parseQuery(search, definition.query);
    const { bytes, parsed } = await bodyOf(request, definition);
    const mountPath = request.mountPath ?? '';
    const ctx: RouteContext = { engine, auth, workspaceId: auth?.workspace_id ?? '', params: match.params, query, body: parsed, rawBody: bytes, headers: request.headers, mountPath };
    const run = async (): Promise<HttpResponse> => {
      try {
        const result = await definition.handle(ctx);
        const out: HttpResponse = { status: result.status, headers: { ...result.headers } };
        // Handlers write paths from /v2; the client reaches them under the host's mount point.
        if (out.headers.location?.startsWith('/')) out.headers.location = mountPath + out.headers.location;
        if (result.body !== undefined) {
          out.headers['content-type'] = JSON_CONTENT_TYPE;
          out.body = JSON.stringify(result.body);
        }
        return out;
      } catch (error) {
        return answerError(error, requestId, trace);
      }
    };
    const idempotencyKey = header(request.headers, 'idempotency-key');
    if (idempotencyKey !== undefined && method === 'POST' && auth) {
      assertIdempotencyKey(idempotencyKey);
      return withIdempotency(engine, auth, idempotencyKey, requestHash(method, path, parsed), run);
    }
    return run();
  }

  function answerError(error: unknown, requestId: string, trace: Trace): HttpResponse {
    const { response, unexpected } = problemResponse(error, requestId);
    if (unexpected !== undefined) {
      engine.logger.error({ err: unexpected, request_id: requestId, route: trace.route }, 'request failed');
    }
    return response;
  }

  async function dispatch(request: HttpRequest): Promise<HttpResponse> {
    const started = performance.now();
    const requestId = requestIdOf(request.headers);
    const headers: Record<string, string> = {};
    const trace: Trace = { route: request.url.split('?')[0]!.split('/').slice(0, 3).join('/') };
    const span = startRequestSpan(request, requestId);
    let response: HttpResponse;
    try {
      response = await context.with(otel.setSpan(context.active(), span), () => handle(request, requestId, headers, trace));
    } catch (error) {
      response = answerError(error, requestId, trace);
    }
    endRequestSpan(span, request, response.status, trace);
    response.headers = { ...headers, ...response.headers, 'x-request-id': requestId, 'cache-control': 'no-store' };
    // A body refused before it was read to the end leaves the rest of it on the wire: the
    // connection cannot carry another request, and an endless chunked body must not hold it.
    if (response.status === 413) response.headers.connection = 'close';
    if (options.onRequest) {
      try {
        const code = response.status >= 400 && response.body ? (JSON.parse(response.body) as { code?: string }).code : undefined;
        options.onRequest({
          requestId,
          method: request.method,
          route: trace.route,
          status: response.status,
          durationMs: performance.now() - started,
          ...(code ? { code } : {}),
          ...(trace.auth ? { workspaceId: trace.auth.workspace_id, apiKeyId: trace.auth.api_key_id } : {}),
        });
      } catch {
        // A logging hook must not change the answer.
      }
    }
    return response;
  }

  /**
   * The request's server span, named and attributed as OpenTelemetry's HTTP conventions say, and
   * a child of the caller's trace when it sent a `traceparent` (or of the framework's own span,
   * when the host instruments Express or Fastify). A no-op until the host registers an SDK.
   */
  function startRequestSpan(request: HttpRequest, requestId: string): Span {
    const method = request.method.toUpperCase();
    const active = context.active();
    const parent = otel.getSpan(active) ? active : propagation.extract(ROOT_CONTEXT, request.headers);
    return otel.getTracer(TRACER_NAME).startSpan(method, { kind: SpanKind.SERVER, attributes: { 'http.request.method': method, 'ferry.request.id': requestId } }, parent);
  }

  /** Names the span by its route once known (`GET /v2/pipelines/{id}`, never the raw path), and ends it. */
  function endRequestSpan(span: Span, request: HttpRequest, status: number, trace: Trace): void {
    const method = request.method.toUpperCase();
    if (trace.matched) {
      span.updateName(`${method} ${trace.route}`);
      span.setAttribute('http.route', trace.route);
    }
    span.setAttribute('http.response.status_code', status);
    if (trace.auth) span.setAttribute('ferry.workspace.id', trace.auth.workspace_id);
    // A server span is an error only for a 5xx: a 4xx is the client's (OpenTelemetry's HTTP conventions).
    if (status >= 500) {
      span.setAttribute('error.type', String(status));
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
  }

  const info: RouteInfo[] = routes.map((r) => ({
    method: r.method,
    path: r.path,
    operationId: r.operationId,
    scope: r.auth.kind === 'api_key' ? r.auth.scope : null,
    summary: r.summary,
  }));
  return { dispatch, routes: info, openapi: (mountPath = '') => document(mountPath), bodyLimit };
}

import type { Engine } from '@ferry/core';
import { DEFAULT_LIMIT, ERROR_STATUS, ID_PREFIXES, MAX_JSON_DEPTH, MAX_LIMIT, normalizeLimit, resourceSchemas, type IdKind } from '@ferry/core/internal';
import { Type, type TSchema } from '@sinclair/typebox';
import { mapSchema, toJsonSchema, type JsonSchema } from './json-schema.js';
import { pluginCatalog, pluginSchemas } from './openapi-plugin-schemas.js';
import { HTTP_ERROR_STATUS } from './problem.js';
import { parseQuery } from './query.js';
import { responseSchemas } from './response-schemas.js';
import type { RouteDefinition } from './route.js';

/** Options of {@link buildOpenApi}. */
export interface OpenApiOptions {
  /**
   * The engine the API serves: its registered connector and step types make the connector
   * configs, the connector records and the pipeline steps precise. Without it they are
   * documented generically (`config` any object, a step any object with a `type`).
   */
  engine?: Engine;
  /** The largest body the API accepts, in bytes (`HttpApiOptions.bodyLimit`). */
  bodyLimit?: number;
}

/** Options of {@link openApiDocuments}: those of the document, and the host's public URL. */
export interface OpenApiDocumentsOptions extends OpenApiOptions {
  /** `HttpApiOptions.publicUrl`: when set, the `servers` URL whatever the mount point. */
  publicUrl?: string;
}

/** What each error status means, before the codes that have it (listed from the code tables). */
const STATUS_TEXT: Record<number, string> = {
  400: 'The body, query, path or a header fails its schema; `errors` lists every field.',
  401: 'Missing, malformed, unknown or revoked credentials.',
  403: 'The key lacks the scope.',
  404: 'No such resource in this workspace.',
  409: 'Conflicts with the current state; `current_status` where one applies.',
  413: 'The body is larger than the server accepts; the connection is closed after the answer.',
  415: 'The body is not `application/json`.',
  422: 'Well-formed, but breaks a rule.',
  429: 'Rate limited; retry after `Retry-After` seconds.',
  500: 'An internal error, logged with the request id.',
  503: 'Storage unreachable, or the server is shutting down; retry after `Retry-After` seconds.',
};

/** Every problem code by status: the engine's codes, then the HTTP layer's. */
function codesByStatus(): Map<number, string[]> {
  const out = new Map<number, string[]>();
  for (const [code, status] of [...Object.entries(ERROR_STATUS), ...Object.entries(HTTP_ERROR_STATUS)]) {
    out.set(status, [...(out.get(status) ?? []), code]);
  }
  return out;
}

const bytes = (n: number): string => (n % (1024 * 1024) === 0 ? `${n / (1024 * 1024)} MiB` : n % 1024 === 0 ? `${n / 1024} KiB` : `${n} bytes`);

/**
 * Whether a `limit` above the largest page size is refused rather than lowered, found by asking
 * the code that reads it (the query parser, then the services' `normalizeLimit`): the document
 * states what the server does, and follows it if that ever changes.
 */
function limitAboveMaximumRefused(): boolean {
  try {
    const query = parseQuery(`limit=${MAX_LIMIT + 1}`, { limit: { kind: 'limit' } });
    normalizeLimit(query.limit);
    return false;
  } catch {
    return true;
  }
}

const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });

/** Response headers, as components; each response lists those it carries. */
const HEADERS: Record<string, Record<string, unknown>> = {
  'X-Request-Id': {
    description: "The request's id: the client's `X-Request-Id` when it sent a usable one, else a new UUID. Problem bodies repeat it as `request_id`.",
    required: true,
    schema: { type: 'string' },
  },
  'Cache-Control': { description: 'Answers are never cached.', required: true, schema: { type: 'string', const: 'no-store' } },
  'RateLimit-Policy': {
    description:
      'The rate limit that applied (draft-ietf-httpapi-ratelimit-headers): `"<name>";q=<requests>;w=<seconds>`. `default` per API key (or per client address without one), `ingest` per connector, `auth` per client address for failed authentications. Absent when no limit applies.',
    required: false,
    schema: { type: 'string', examples: ['"default";q=600;w=60'] },
  },
  RateLimit: {
    description: 'What is left of that limit: `"<name>";r=<requests left>;t=<seconds until the bucket is full>`. Absent when no limit applies.',
    required: false,
    schema: { type: 'string', examples: ['"default";r=599;t=1'] },
  },
  'Retry-After': { description: 'Seconds to wait before retrying.', required: true, schema: { type: 'integer', minimum: 1 } },
  'Retry-After-In-Progress': {
    description: 'Seconds to wait before retrying, when the conflict is an `Idempotency-Key` whose first request is still running (`idempotency_key_in_progress`).',
    required: false,
    schema: { type: 'integer', minimum: 1 },
  },
  Location: { description: 'Where the new resource is read: `/v2/<collection>/<id>`, under the mount point.', required: true, schema: { type: 'string', format: 'uri-reference' } },
  'Idempotent-Replayed': {
    description: 'Present, `true`, when the answer is the stored answer of an earlier request with the same `Idempotency-Key`.',
    required: false,
    schema: { type: 'string', const: 'true' },
  },
  'WWW-Authenticate': { description: 'The Bearer challenge (RFC 6750).', required: true, schema: { type: 'string', examples: ['Bearer realm="ferry"'] } },
};

/** The header a component names, where the component's name differs from it. */
const HEADER_NAME: Record<string, string> = { 'Retry-After-In-Progress': 'Retry-After' };

/**
 * Statuses an answer stored under an `Idempotency-Key`, and so replayed, can have: successes,
 * and the operation's own 404, 409 and 422. A 400 or 5xx is not stored; a 401, 403, 413, 415 or
 * 429 is answered before the key is looked at.
 */
const replayable = (status: number): boolean => status < 400 || [404, 409, 422].includes(status);

function responseHeaders(route: RouteDefinition, status: number): Record<string, unknown> {
  const names = ['X-Request-Id', 'Cache-Control', 'RateLimit-Policy', 'RateLimit'];
  if (status === 201) names.push('Location');
  if (status === 401 && route.auth.kind === 'api_key') names.push('WWW-Authenticate');
  if (status === 429 || status === 503) names.push('Retry-After');
  const idempotent = route.method === 'POST' && route.auth.kind === 'api_key';
  if (idempotent && status === 409) names.push('Retry-After-In-Progress');
  if (idempotent && replayable(status)) names.push('Idempotent-Replayed');
  return Object.fromEntries(names.map((name) => [HEADER_NAME[name] ?? name, headerRef(name)]));
}

interface Context {
  swaps: ReadonlyMap<object, JsonSchema>;
  codes: Map<number, string[]>;
  limitRefused: boolean;
  bodyLimit: number | undefined;
  /** The error answers of `components.responses`, filled as operations use them. */
  responses: Record<string, Record<string, unknown>>;
}

function schemaRef(schema: string | TSchema, ctx: Context): JsonSchema {
  if (typeof schema !== 'string') return toJsonSchema(schema, ctx.swaps);
  const page = /^Page:(\w+)$/.exec(schema);
  return { $ref: `#/components/schemas/${page ? `${page[1]}Page` : schema}` };
}

/**
 * The problem answer of a status, as a component shared by every operation that answers it with
 * the same headers: named by status, `Bearer` where it carries the challenge, `Idempotent`
 * where an `Idempotency-Key` adds its headers.
 */
function errorResponse(route: RouteDefinition, status: number, ctx: Context): Record<string, unknown> {
  const headers = responseHeaders(route, status);
  const name = `Problem${status}${'WWW-Authenticate' in headers ? 'Bearer' : ''}${'Idempotent-Replayed' in headers ? 'Idempotent' : ''}`;
  if (!ctx.responses[name]) {
    let text = STATUS_TEXT[status] ?? 'Error.';
    if (status === 413 && ctx.bodyLimit !== undefined) text = `The body is over ${bytes(ctx.bodyLimit)} (${ctx.bodyLimit} bytes); the connection is closed after the answer.`;
    const codes = ctx.codes.get(status) ?? [];
    ctx.responses[name] = {
      description: `${text}${codes.length > 0 ? ` Codes: ${codes.map((c) => `\`${c}\``).join(', ')}.` : ''}`,
      headers,
      content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
    };
  }
  return { $ref: `#/components/responses/${name}` };
}

function limitParameter(ctx: Context): JsonSchema {
  const schema: JsonSchema = { type: 'integer', minimum: 1, default: DEFAULT_LIMIT };
  if (ctx.limitRefused) {
    return { ...schema, maximum: MAX_LIMIT, description: `Page size, 1 to ${MAX_LIMIT}.` };
  }
  // Not `maximum`: the server does not refuse a larger value, and a client must not either.
  return { ...schema, description: `Page size. A page holds at most ${MAX_LIMIT} items: a larger value is served as ${MAX_LIMIT}.` };
}

/**
 * The id fields of the records, by kind: a path parameter takes the pattern the answers give the
 * same id, so a client (or a fuzzer) that reads one side of the document reads the other alike.
 * Platform events carry the `evt_` pattern; the event log's derived ids have the same form.
 */
const RECORD_IDS: Partial<Record<IdKind, TSchema>> = {
  connector: resourceSchemas.Connector.properties.id,
  pipeline: resourceSchemas.Pipeline.properties.id,
  event: resourceSchemas.PlatformEvent.properties.id,
  run: resourceSchemas.Run.properties.id,
  webhook: resourceSchemas.WebhookSubscription.properties.id,
  delivery: resourceSchemas.Delivery.properties.id,
  key: resourceSchemas.ApiKey.properties.id,
  backfill: resourceSchemas.Backfill.properties.id,
};

/** Characters of a ULID, the body of every id after its prefix and `_` (docs/api.md, Ids and timestamps). */
const ULID_LENGTH = 26;

/**
 * An id of `kind` as a schema: the records' pattern, and the length every such id has. The
 * pattern alone already fixes the length; `maxLength` says so to tools that do not read patterns.
 */
function idSchema(kind: IdKind): JsonSchema | undefined {
  const pattern = (RECORD_IDS[kind] as { pattern?: string } | undefined)?.pattern;
  return pattern === undefined ? undefined : { type: 'string', pattern, maxLength: ID_PREFIXES[kind].length + 1 + ULID_LENGTH };
}

/** The id schema of each record's pattern: where a component holds an id, it gets its `maxLength` too. */
const ID_BY_PATTERN = new Map(
  (Object.keys(RECORD_IDS) as IdKind[]).flatMap((kind) => {
    const schema = idSchema(kind);
    return schema ? [[schema.pattern as string, schema] as const] : [];
  }),
);

/** A schema with every id it holds (a string of an id's pattern) given the length of that id. */
function withIdLengths(schema: JsonSchema): JsonSchema {
  return mapSchema(schema, (node) => {
    const id = typeof node.pattern === 'string' ? ID_BY_PATTERN.get(node.pattern) : undefined;
    return id && node.type === 'string' && node.maxLength === undefined ? { ...node, maxLength: id.maxLength } : node;
  });
}

/** The collection a path segment names, for the `{id}` that follows it: `/v2/connectors/{id}`. */
const KIND_OF_COLLECTION: Record<string, IdKind> = {
  connectors: 'connector',
  pipelines: 'pipeline',
  events: 'event',
  runs: 'run',
  webhooks: 'webhook',
  deliveries: 'delivery',
  keys: 'key',
  backfills: 'backfill',
};

/**
 * The kind of id a path parameter takes: named by the parameter (`connector_id`, `delivery_id`:
 * the ingest route's `{connector_id}` follows `ingest`, which names no collection), else by the
 * collection before it (`/v2/pipelines/{id}/events` takes a pipeline id). Undefined when neither
 * says, and the parameter is then documented as any string rather than with a wrong pattern.
 */
function pathIdKind(path: string, name: string): IdKind | undefined {
  const named = /^(\w+)_id$/.exec(name)?.[1];
  if (named !== undefined && Object.hasOwn(ID_PREFIXES, named)) return named as IdKind;
  const segments = path.split('/');
  const at = segments.indexOf(`{${name}}`);
  return at > 0 ? KIND_OF_COLLECTION[segments[at - 1]!] : undefined;
}

/**
 * Whether the server reads a body on this route: POST and PATCH. A GET or DELETE body is
 * ignored (docs/api.md, Bodies), so those operations declare none and cannot answer 413 or 415.
 */
const readsBody = (route: RouteDefinition): boolean => route.method === 'POST' || route.method === 'PATCH';

/**
 * The body of an operation that takes none: nothing, or `{}`. Declared rather than left out, so
 * that a validating proxy passes the `{}` the server accepts (docs/api.md, Bodies); a field is
 * 400 `unknown_field`.
 */
const NO_FIELDS: JsonSchema = { type: 'object', properties: {}, additionalProperties: false, description: 'This operation takes no fields: send no body, or `{}`.' };

function operation(route: RouteDefinition, ctx: Context): Record<string, unknown> {
  const parameters: unknown[] = [];
  for (const m of route.path.matchAll(/\{(\w+)\}/g)) {
    const kind = pathIdKind(route.path, m[1]!);
    parameters.push({ name: m[1], in: 'path', required: true, schema: (kind && idSchema(kind)) ?? { type: 'string' } });
  }
  for (const [name, param] of Object.entries(route.query ?? {})) {
    if (param.kind === 'limit') {
      const { description, ...schema } = limitParameter(ctx);
      parameters.push({ name, in: 'query', required: false, schema, description });
      continue;
    }
    const schema =
      param.kind === 'cursor'
        ? { type: 'string', description: 'next_cursor of the previous page.' }
        : param.kind === 'enum'
          ? { type: 'string', enum: [...param.values] }
          : param.kind === 'timestamp'
            ? { type: 'string', format: 'date-time' }
            : param.kind === 'integer'
              ? { type: 'integer', minimum: param.minimum, maximum: param.maximum, default: param.default }
              : { type: 'string', minLength: 1, maxLength: param.maxLength ?? 200 };
    const description = 'description' in param ? param.description : undefined;
    parameters.push({ name, in: 'query', required: false, schema, ...(description ? { description } : {}) });
  }
  parameters.push({ $ref: '#/components/parameters/RequestId' });
  if (route.method === 'POST' && route.auth.kind === 'api_key') parameters.push({ $ref: '#/components/parameters/IdempotencyKey' });
  if (route.auth.kind === 'signature') {
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      parameters.push({ name, in: 'header', required: true, schema: { type: 'string' } });
    }
  }

  const responses: Record<string, unknown> = {};
  for (const [status, doc] of Object.entries(route.responses)) {
    // Every answer but a 204 carries a JSON object (dispatch writes any body as JSON). One the
    // route table leaves undescribed (the document's own) is still declared, so a validating
    // proxy does not take its body for one the operation never sends.
    const schema = doc.schema ? schemaRef(doc.schema, ctx) : status === '204' ? undefined : { type: 'object' };
    responses[status] = {
      description: doc.description,
      headers: responseHeaders(route, Number(status)),
      ...(schema ? { content: { 'application/json': { schema } } } : {}),
    };
  }
  const errors = new Set<number>([400, 429, 500, 503, ...route.errors]);
  if (route.auth.kind !== 'none') errors.add(401);
  if (route.auth.kind === 'api_key') errors.add(403);
  if (readsBody(route)) {
    // Even an operation without fields reads what is sent, to refuse it.
    errors.add(413);
    errors.add(415);
  }
  if (route.method === 'POST' && route.auth.kind === 'api_key') {
    errors.add(409); // an Idempotency-Key still in use
    errors.add(422); // an Idempotency-Key reused with another body
  }
  for (const status of [...errors].sort()) responses[String(status)] = errorResponse(route, status, ctx);

  const op: Record<string, unknown> = {
    operationId: route.operationId,
    summary: route.summary,
    tags: [route.tag],
    parameters,
    responses,
    security: route.auth.kind === 'api_key' ? [{ bearerAuth: [] }] : route.auth.kind === 'signature' ? [{ webhookSignature: [] }] : [],
  };
  if (route.auth.kind === 'api_key') op['x-required-scope'] = route.auth.scope;
  if (readsBody(route) && route.body === 'none') {
    op.requestBody = { required: false, description: 'None, or `{}`.', content: { 'application/json': { schema: NO_FIELDS } } };
  } else if (readsBody(route) && route.bodySchema) {
    const limit = ctx.bodyLimit === undefined ? '' : `At most ${bytes(ctx.bodyLimit)} (${ctx.bodyLimit} bytes), `;
    op.requestBody = {
      // `optional`: no body is the same as `{}`, every field absent.
      required: route.body === 'required',
      description: `${limit}${limit ? 'nested' : 'Nested'} at most ${MAX_JSON_DEPTH} levels deep.`,
      content: { 'application/json': { schema: toJsonSchema(route.bodySchema, ctx.swaps) } },
    };
  }
  return op;
}

/**
 * The OpenAPI 3.1 document of a route table: generated from the same definitions dispatch
 * serves, and from the connector and step types the engine registered, so it cannot drift from
 * what the server accepts. Paths begin with `/v2`; `serverUrl` is where they are appended (the
 * mount point, `/` at the root).
 */
export function buildOpenApi(routes: readonly RouteDefinition[], serverUrl: string, options: OpenApiOptions = {}): Record<string, unknown> {
  const catalog = options.engine ? pluginCatalog(options.engine) : undefined;
  const pages = new Set<string>();
  for (const route of routes) {
    for (const doc of Object.values(route.responses)) {
      const page = typeof doc.schema === 'string' ? /^Page:(\w+)$/.exec(doc.schema) : null;
      if (page) pages.add(page[1]!);
    }
  }
  const taken = new Set([...Object.keys(responseSchemas), ...[...pages].map((item) => `${item}Page`)]);
  const plugins = catalog ? pluginSchemas(catalog, taken) : { components: {}, swaps: new Map<object, JsonSchema>() };
  const ctx: Context = { swaps: plugins.swaps, codes: codesByStatus(), limitRefused: limitAboveMaximumRefused(), bodyLimit: options.bodyLimit, responses: {} };

  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    (paths[route.path] ??= {})[route.method.toLowerCase()] = operation(route, ctx);
  }
  const schemas: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(responseSchemas)) schemas[name] = withIdLengths(plugins.components[name] ?? toJsonSchema(schema, ctx.swaps));
  for (const item of pages) schemas[`${item}Page`] = toJsonSchema(resourceSchemas.Page(Type.Ref(`#/components/schemas/${item}`)));
  for (const [name, schema] of Object.entries(plugins.components)) schemas[name] ??= withIdLengths(schema);

  const limit = options.bodyLimit === undefined ? '' : ` Bodies are JSON of at most ${bytes(options.bodyLimit)}.`;
  return {
    openapi: '3.1.0',
    info: {
      title: 'Ferry Pipeline Data-Movement API',
      version: '2',
      description: `Connectors, pipelines, events and webhook subscriptions. Errors are RFC 9457 problem details with a stable \`code\`.${limit} String lengths (\`minLength\`, \`maxLength\`) are counted in UTF-16 code units, as JavaScript counts them: a character beyond U+FFFF (most emoji) counts as two. Paths begin with \`/v2\`, under the server URL: the point the API is mounted at.`,
    },
    servers: [{ url: serverUrl }],
    tags: [...new Set(routes.map((r) => r.tag))].map((name) => ({ name })),
    paths,
    components: {
      schemas,
      responses: Object.fromEntries(Object.entries(ctx.responses).sort(([a], [b]) => a.localeCompare(b))),
      headers: HEADERS,
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key: `fry_<key id>_<secret><checksum>`.' },
        webhookSignature: { type: 'apiKey', in: 'header', name: 'webhook-signature', description: "Standard Webhooks signature with the connector's signing secret." },
      },
      parameters: {
        RequestId: {
          name: 'X-Request-Id',
          in: 'header',
          required: false,
          schema: { type: 'string' },
          description: 'Echoed back (and logged) when it is 1 to 200 printable ASCII characters; otherwise a new UUID is used instead.',
        },
        IdempotencyKey: {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7e]+$' },
          description: 'The same key with the same body within 24 h returns the first answer (with `Idempotent-Replayed: true`); with another body, 422 `idempotency_key_reused`; while the first still runs, 409 `idempotency_key_in_progress`.',
        },
      },
    },
  };
}

/**
 * The server URL of the document: the host's `publicUrl` when it gave one, else the path the
 * API is mounted under (`/api`), or `/` at the root. Relative, it resolves against the address
 * the document was fetched from, so a client pointed at the document finds the API behind any
 * host name or port.
 */
export function openApiServerUrl(publicUrl: string | undefined, mountPath: string): string {
  if (publicUrl !== undefined) return publicUrl;
  const trimmed = mountPath.replace(/\/+$/, '');
  return trimmed === '' ? '/' : trimmed;
}

/**
 * The document of an API, built once on first use, with `servers` per mount point: an adapter
 * learns where the host mounted it per request (an Express router is not told its mount path),
 * so the one built document is served with the server URL of each request's mount point.
 */
export function openApiDocuments(routes: readonly RouteDefinition[], options: OpenApiDocumentsOptions = {}): (mountPath?: string) => Record<string, unknown> {
  let built: Record<string, unknown> | undefined;
  return (mountPath = '') => {
    built ??= buildOpenApi(routes, '/', options);
    return { ...built, servers: [{ url: openApiServerUrl(options.publicUrl, mountPath) }] };
  };
}

import { resourceSchemas } from '@ferry/core/internal';
import { Type, type TSchema } from '@sinclair/typebox';
import { responseSchemas } from './response-schemas.js';
import type { RouteDefinition } from './route.js';

const STATUS_TEXT: Record<number, string> = {
  400: 'The body, query or path fails its schema (`validation_failed`, `malformed_json`, `invalid_cursor`); `errors` lists every field.',
  401: 'Missing, malformed, unknown or revoked credentials (`unauthenticated`).',
  403: 'The key lacks the scope (`forbidden`).',
  404: 'No such resource in this workspace (`not_found`).',
  409: 'Conflicts with the current state; `current_status` where one applies.',
  413: 'The body is over 1 MiB (`payload_too_large`).',
  415: 'The body is not `application/json` (`unsupported_media_type`).',
  422: 'Well-formed but breaks a rule (`invalid_reference`, `invalid_direction`, `invalid_schedule`, ...).',
  429: 'Rate limited (`rate_limited`); see `Retry-After`.',
  500: 'An internal error (`internal`), logged with the request id.',
  503: 'Storage unreachable or shutting down (`unavailable`); see `Retry-After`.',
};

/** A TypeBox schema as plain JSON Schema (TypeBox's symbol keys are not JSON). */
function plain(schema: TSchema): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
}

function schemaRef(schema: string | TSchema): Record<string, unknown> {
  if (typeof schema !== 'string') return plain(schema);
  const page = /^Page:(\w+)$/.exec(schema);
  return { $ref: `#/components/schemas/${page ? `${page[1]}Page` : schema}` };
}

function pageSchema(item: string): Record<string, unknown> {
  return plain(resourceSchemas.Page(Type.Ref(`#/components/schemas/${item}`)));
}

const problem = (description: string) => ({ description, content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } } });

function operation(route: RouteDefinition): Record<string, unknown> {
  const parameters: unknown[] = [];
  for (const m of route.path.matchAll(/\{(\w+)\}/g)) {
    parameters.push({ name: m[1], in: 'path', required: true, schema: { type: 'string' } });
  }
  for (const [name, param] of Object.entries(route.query ?? {})) {
    const schema =
      param.kind === 'limit'
        ? { type: 'integer', minimum: 1, default: 50, description: 'Page size; above 100 is lowered to 100.' }
        : param.kind === 'cursor'
          ? { type: 'string', description: 'next_cursor of the previous page.' }
          : param.kind === 'enum'
            ? { type: 'string', enum: [...param.values] }
            : param.kind === 'timestamp'
              ? { type: 'string', format: 'date-time' }
              : { type: 'string', maxLength: param.maxLength ?? 200 };
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
    responses[status] = doc.schema ? { description: doc.description, content: { 'application/json': { schema: schemaRef(doc.schema) } } } : { description: doc.description };
  }
  const errors = new Set<number>([400, 429, 500, 503, ...route.errors]);
  if (route.auth.kind !== 'none') errors.add(401);
  if (route.auth.kind === 'api_key') errors.add(403);
  if (route.body !== 'none') {
    errors.add(413);
    errors.add(415);
  }
  if (route.method === 'POST' && route.auth.kind === 'api_key') {
    errors.add(409); // an Idempotency-Key still in use
    errors.add(422); // an Idempotency-Key reused with another body
  }
  for (const status of [...errors].sort()) responses[String(status)] = problem(STATUS_TEXT[status] ?? 'Error.');

  const op: Record<string, unknown> = {
    operationId: route.operationId,
    summary: route.summary,
    tags: [route.tag],
    parameters,
    responses,
    security: route.auth.kind === 'api_key' ? [{ bearerAuth: [] }] : route.auth.kind === 'signature' ? [{ webhookSignature: [] }] : [],
  };
  if (route.auth.kind === 'api_key') op['x-required-scope'] = route.auth.scope;
  if (route.body !== 'none' && route.bodySchema) {
    op.requestBody = { required: route.body === 'required', content: { 'application/json': { schema: plain(route.bodySchema) } } };
  }
  return op;
}

/**
 * The OpenAPI 3.1 document of a route table: generated from the same definitions dispatch
 * serves, so it cannot drift from them.
 */
export function buildOpenApi(routes: readonly RouteDefinition[], serverUrl: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    (paths[route.path] ??= {})[route.method.toLowerCase()] = operation(route);
  }
  const schemas: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(responseSchemas)) schemas[name] = plain(schema);
  for (const route of routes) {
    for (const doc of Object.values(route.responses)) {
      const page = typeof doc.schema === 'string' ? /^Page:(\w+)$/.exec(doc.schema) : null;
      if (page) schemas[`${page[1]}Page`] = pageSchema(page[1]!);
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Ferry Pipeline Data-Movement API',
      version: '2',
      description: 'Connectors, pipelines, events and webhook subscriptions. Errors are RFC 9457 problem details with a stable `code`.',
    },
    servers: [{ url: serverUrl }],
    tags: [...new Set(routes.map((r) => r.tag))].map((name) => ({ name })),
    paths,
    components: {
      schemas,
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key: `fry_<key id>_<secret><checksum>`.' },
        webhookSignature: { type: 'apiKey', in: 'header', name: 'webhook-signature', description: "Standard Webhooks signature with the connector's signing secret." },
      },
      parameters: {
        RequestId: { name: 'X-Request-Id', in: 'header', required: false, schema: { type: 'string', maxLength: 200 }, description: 'Echoed back; generated when absent.' },
        IdempotencyKey: {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          schema: { type: 'string', minLength: 1, maxLength: 255 },
          description: 'The same key with the same body within 24 h returns the first response.',
        },
      },
    },
  };
}

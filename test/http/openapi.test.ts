/**
 * `GET /v2/openapi.json`: the document validates as OpenAPI 3.1 (an off-the-shelf validator),
 * names exactly the operations the adapters serve with the authentication it documents, and
 * describes what is actually sent: real requests and answers are checked against the documented
 * schemas, and every header of an answer against the headers documented for it. The connector
 * configs and pipeline steps it declares are those of the engine's registered types, its error
 * codes those of the source, its page size the one the server enforces.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Type } from '@sinclair/typebox';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, defineConnector, defineTransform, Secret, sqliteStorage } from '@ferry/core';
import { engineContext, ERROR_CODES, MAX_LIMIT, resourceSchemas } from '@ferry/core/internal';
import { createHttpApi } from '@ferry/http';
import { ADAPTERS, PROBLEM_JSON, startApi, testPlugins, type TestApi, type TestResponse } from './harness.js';
import { createConnector, createPipeline, createWebhook, expectProblem, ghostId, insertBackfill, insertDelivery, insertEvents, unique } from './fixtures.js';

type Schema = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
type Header = { required?: boolean; schema: Schema };
type Response = { $ref?: string; headers?: Record<string, Header | { $ref: string }>; content?: Record<string, { schema: unknown }> };
type Parameter = { name: string; in: string; schema: Schema; description?: string };
type Operation = {
  operationId: string;
  security: Array<Record<string, unknown>>;
  parameters: Array<Parameter | { $ref: string }>;
  responses: Record<string, Response>;
  requestBody?: { required?: boolean; content: Record<string, { schema: unknown }> };
};
type Document = {
  openapi: string;
  servers: Array<{ url: string }>;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema>; responses: Record<string, Response>; headers: Record<string, Header> } & Record<string, unknown>;
};

/** Headers of the connection and the host, not of the API: the document does not describe them. */
const TRANSPORT_HEADERS = new Set(['content-type', 'content-length', 'date', 'connection', 'keep-alive', 'transfer-encoding', 'x-powered-by']);
/** Where the document points: `#/components/<kind>/<name>`. */
const resolve = <T>(doc: Document, value: T | { $ref: string }): T => {
  const ref = (value as { $ref?: string }).$ref;
  if (ref === undefined) return value as T;
  const [, kind, name] = /#\/components\/(\w+)\/(.+)$/.exec(ref)!;
  return resolve(doc, (doc.components as Record<string, Record<string, unknown>>)[kind!]![name!] as T);
};

/**
 * Every error code the source raises by name: `new FerryError('code'`, `new HttpProblem('code'`,
 * `standaloneProblem('code'`, or through a constant (`new FerryError(URL_NOT_ALLOWED`). The types
 * already hold codes to the tables the document's enum is made from; this catches a code cast
 * past them.
 */
function raisedCodes(): Set<string> {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) files.push(path);
    }
  };
  for (const group of ['packages', 'plugins']) {
    for (const pkg of readdirSync(join(root, group))) {
      try {
        walk(join(root, group, pkg, 'src'));
      } catch {
        // a package without sources
      }
    }
  }
  const texts = files.map((f) => readFileSync(f, 'utf8'));
  const constants = new Map<string, string>();
  for (const text of texts) for (const m of text.matchAll(/\bconst ([A-Z][A-Z0-9_]*) = '([a-z_]+)'/g)) constants.set(m[1]!, m[2]!);
  const codes = new Set<string>();
  for (const text of texts) {
    for (const m of text.matchAll(/(?:new (?:FerryError|HttpProblem)|standaloneProblem)\(\s*(?:'([a-z_]+)'|([A-Z][A-Z0-9_]*)\b)/g)) {
      const code = m[1] ?? constants.get(m[2]!);
      codes.add(code ?? `<unresolved ${m[2]}>`);
    }
  }
  return codes;
}

const METHODS = ['GET', 'POST', 'PATCH', 'DELETE', 'PUT'] as const;
/** The id every path parameter takes, by its prefix: one line per parameter of the route table. */
const PATH_IDS: Record<string, string> = {
  'GET /v2/connectors/{id} id': 'con',
  'PATCH /v2/connectors/{id} id': 'con',
  'DELETE /v2/connectors/{id} id': 'con',
  'POST /v2/connectors/{id}/check id': 'con',
  'GET /v2/connectors/{id}/signing-secret id': 'con',
  'GET /v2/events/{id} id': 'evt',
  'POST /v2/connectors/{id}/rotate id': 'con',
  'GET /v2/pipelines/{id} id': 'pip',
  'PATCH /v2/pipelines/{id} id': 'pip',
  'DELETE /v2/pipelines/{id} id': 'pip',
  'POST /v2/pipelines/{id}/activate id': 'pip',
  'POST /v2/pipelines/{id}/pause id': 'pip',
  'POST /v2/pipelines/{id}/runs id': 'pip',
  'GET /v2/pipelines/{id}/runs id': 'pip',
  'GET /v2/pipelines/{id}/stats id': 'pip',
  'POST /v2/pipelines/{id}/backfills id': 'pip',
  'GET /v2/pipelines/{id}/backfills id': 'pip',
  'GET /v2/backfills/{id} id': 'bfl',
  'POST /v2/backfills/{id}/cancel id': 'bfl',
  'GET /v2/pipelines/{id}/events id': 'pip',
  'POST /v2/pipelines/{id}/events/replay id': 'pip',
  'POST /v2/events/{id}/replay id': 'evt',
  'GET /v2/webhooks/{id} id': 'whk',
  'PATCH /v2/webhooks/{id} id': 'whk',
  'DELETE /v2/webhooks/{id} id': 'whk',
  'GET /v2/webhooks/{id}/secret id': 'whk',
  'POST /v2/webhooks/{id}/rotate-secret id': 'whk',
  'GET /v2/webhooks/{id}/deliveries id': 'whk',
  'GET /v2/webhooks/{id}/deliveries/{delivery_id} id': 'whk',
  'GET /v2/webhooks/{id}/deliveries/{delivery_id} delivery_id': 'dlv',
  'GET /v2/deliveries/{id} id': 'dlv',
  'POST /v2/webhooks/{id}/deliveries/{delivery_id}/redeliver id': 'whk',
  'POST /v2/webhooks/{id}/deliveries/{delivery_id}/redeliver delivery_id': 'dlv',
  'POST /v2/webhooks/{id}/recover id': 'whk',
  'POST /v2/ingest/{connector_id} connector_id': 'con',
};
/** The pattern the records give each kind of id (`shapes.ts`), by prefix. */
const RECORD_ID_PATTERNS: Record<string, string | undefined> = {
  con: resourceSchemas.Connector.properties.id.pattern,
  pip: resourceSchemas.Pipeline.properties.id.pattern,
  evt: resourceSchemas.PlatformEvent.properties.id.pattern,
  whk: resourceSchemas.WebhookSubscription.properties.id.pattern,
  dlv: resourceSchemas.Delivery.properties.id.pattern,
  bfl: resourceSchemas.Backfill.properties.id.pattern,
};
/** Operations that take no fields (`body: 'none'`), and those whose body may be left out (`'optional'`). */
const NO_FIELDS = new Set(['checkConnector', 'activatePipeline', 'pausePipeline', 'triggerRun', 'replayEvent', 'redeliverDelivery', 'cancelBackfill']);
const OPTIONAL_BODY = new Set(['rotateConnector', 'replayEvents', 'rotateWebhookSecret', 'createBackfill']);
const GHOSTS: Record<string, string> = { id: ghostId('pip'), connector_id: ghostId('con'), delivery_id: ghostId('dlv') };
const DOC_ID = 'urn:ferry:openapi';

describe.each(ADAPTERS)('the OpenAPI document [%s]', (adapter) => {
  let api: TestApi;
  let doc: Document;

  beforeAll(async () => {
    api = await startApi({ adapter, storage: 'sqlite', httpOptions: { rateLimit: false } });
    const res = await api.request('GET', '/v2/openapi.json', { key: null });
    expect(res.status, res.text).toBe(200);
    expect(res.headers['content-type']).toBe('application/json');
    doc = res.body as Document;
  });
  afterAll(async () => {
    await api?.close();
  });

  it('is served without a key and validates as OpenAPI 3.1', async () => {
    expect(doc.openapi).toBe('3.1.0');
    const result = await new Validator().validate(doc as unknown as Record<string, unknown>);
    expect(result.errors ?? [], JSON.stringify(result.errors)).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('lists exactly the route table, each operation once', () => {
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    const table = createHttpApi(api.engine).routes.map((r) => `${r.method} ${r.path}`);
    expect(documented.sort()).toEqual([...table].sort());
    const ids = Object.values(doc.paths).flatMap((ops) => Object.values(ops).map((o) => o.operationId));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('serves every documented operation with the documented authentication, and nothing else on its paths', async () => {
    for (const [template, ops] of Object.entries(doc.paths)) {
      const path = template.replace(/\{(\w+)\}/g, (_, name: string) => GHOSTS[name] ?? ghostId('pip'));
      for (const method of METHODS) {
        const op = ops[method.toLowerCase()];
        const res = await api.request(method, path, { key: null });
        const what = `${method} ${template}: ${res.status} ${res.text.slice(0, 300)}`;
        if (!op) {
          expectProblem(res, 405, 'method_not_allowed');
          expect(res.headers.allow?.split(', ').sort(), what).toEqual(Object.keys(ops).map((m) => m.toUpperCase()).sort());
          continue;
        }
        const scheme = Object.keys(op.security[0] ?? {})[0];
        if (scheme === 'bearerAuth') {
          expectProblem(res, 401, 'unauthenticated');
          expect(res.headers['www-authenticate'], what).toMatch(/^Bearer/);
        } else if (scheme === 'webhookSignature') {
          // Routed (not "no route"): the missing body or the unknown connector is the answer.
          expect([400, 401, 404], what).toContain(res.status);
          expect(res.headers['content-type'], what).toBe(PROBLEM_JSON);
          expect(res.body.detail, what).not.toMatch(/no route/i);
        } else {
          expect(res.status, what).toBe(200);
        }
      }
    }
    expectProblem(await api.request('GET', '/v2/nothing-here'), 404, 'not_found');
    expectProblem(await api.request('GET', '/v2/pipelines/a/b/c/d'), 404, 'not_found');
  });

  it('gives every path id the pattern and length of the id the answers give it', async () => {
    const documented: Record<string, string> = {};
    const schemas: Record<string, Schema> = {};
    for (const [template, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        for (const p of op.parameters) {
          if ('$ref' in p || p.in !== 'path') continue;
          const key = `${method.toUpperCase()} ${template} ${p.name}`;
          const prefix = /^\^(\w+)_/.exec(String(p.schema.pattern))?.[1];
          documented[key] = prefix ?? `<no id pattern: ${JSON.stringify(p.schema)}>`;
          schemas[key] = p.schema;
        }
      }
    }
    expect(documented).toEqual(PATH_IDS);
    const ajv = new Ajv2020({ strict: false });
    const pipeline = await createPipeline(api);
    const webhook = await createWebhook(api);
    const [event] = await insertEvents(api, pipeline.id, [{ occurred_at: new Date(api.clock.now()).toISOString() }]);
    const delivery = await insertDelivery(api, webhook.id, 'failed');
    const backfill = await insertBackfill(api, pipeline.id, 'queued');
    const real: Record<string, string> = { con: pipeline.source_connector_id, pip: pipeline.id, evt: event!.id, whk: webhook.id, dlv: delivery.id, bfl: backfill.id };
    for (const [key, schema] of Object.entries(schemas)) {
      const prefix = PATH_IDS[key]!;
      // The same pattern as the records, and the length every id of the kind has.
      expect(schema, key).toEqual({ type: 'string', pattern: RECORD_ID_PATTERNS[prefix], maxLength: real[prefix]!.length });
      const validate = ajv.compile(schema);
      expect(validate(real[prefix]), `${key} takes ${real[prefix]}`).toBe(true);
      expect(validate(ghostId(prefix)), key).toBe(true);
      for (const other of Object.keys(real).filter((p) => p !== prefix)) expect(validate(real[other]), `${key} refuses ${real[other]}`).toBe(false);
      expect(validate(`${real[prefix]}0`), key).toBe(false);
      expect(validate(real[prefix]!.toLowerCase()), key).toBe(false);
    }
    // The answers' ids say the same.
    expect(doc.components.schemas.Pipeline!.properties.id).toMatchObject({ pattern: RECORD_ID_PATTERNS.pip, maxLength: pipeline.id.length });
    expect(doc.components.schemas.Delivery!.properties.subscription_id).toMatchObject({ pattern: RECORD_ID_PATTERNS.whk, maxLength: webhook.id.length });
  });

  it('declares what each operation that reads a body accepts; one without fields takes nothing or {}', async () => {
    const ajv = new Ajv2020({ strict: false });
    for (const [template, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const what = `${method.toUpperCase()} ${template}`;
        // GET and DELETE bodies are ignored: nothing to declare.
        if (method === 'get' || method === 'delete') {
          expect(op.requestBody, what).toBeUndefined();
          continue;
        }
        expect(op.requestBody, what).toBeDefined();
        expect(op.requestBody!.required, what).toBe(!NO_FIELDS.has(op.operationId) && !OPTIONAL_BODY.has(op.operationId));
        // A body is read, so it can be too large or not JSON.
        expect(Object.keys(op.responses), what).toEqual(expect.arrayContaining(['413', '415']));
        if (!NO_FIELDS.has(op.operationId)) continue;
        const schema = op.requestBody!.content['application/json']!.schema as Schema;
        expect(schema, what).toMatchObject({ type: 'object', properties: {}, additionalProperties: false });
        const validate = ajv.compile(schema);
        expect(validate({}), what).toBe(true);
        expect(validate({ force: true }), what).toBe(false);
      }
    }
    expect([...NO_FIELDS, ...OPTIONAL_BODY].every((id) => Object.values(doc.paths).some((ops) => Object.values(ops).some((op) => op.operationId === id)))).toBe(true);
    // What the server does: nothing or {} is taken, a field is refused.
    const pipeline = await createPipeline(api);
    expect((await api.request('POST', `/v2/pipelines/${pipeline.id}/activate`, { body: {} })).status).toBe(200);
    expect((await api.request('POST', `/v2/pipelines/${pipeline.id}/pause`)).status).toBe(200);
    expectProblem(await api.request('POST', `/v2/pipelines/${pipeline.id}/activate`, { body: { force: true } }), 400, 'validation_failed');
    expectProblem(await api.request('POST', `/v2/pipelines/${pipeline.id}/activate`, { raw: 'x', headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type');
  });

  it('describes the bodies actually served', async () => {
    // The document's own schemas, every "#/components/..." reference made absolute so any part
    // of it can be compiled on its own. Formats are not asserted: ajv ships none by itself.
    // Objects the document lists properties for are closed here, so a field the document does
    // not describe (a leaked internal column, say) fails the check.
    const absolute = JSON.parse(JSON.stringify(doc).replaceAll('"#/components/', `"${DOC_ID}#/components/`), (_key, value: unknown) => {
      const o = value as Record<string, unknown> | null;
      return o && typeof o === 'object' && !Array.isArray(o) && o.type === 'object' && o.properties && o.additionalProperties === undefined ? { ...o, additionalProperties: false } : value;
    }) as Document;
    const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
    ajv.addSchema({ $id: DOC_ID, components: absolute.components });
    const checkAgainst = (method: string, template: string, res: TestResponse, sent?: unknown): void => {
      const op = absolute.paths[template]?.[method.toLowerCase()];
      const what = `${method} ${template} ${res.status}`;
      const documented = op?.responses[String(res.status)];
      expect(documented, `${method} ${template} documents ${res.status}: ${res.text.slice(0, 300)}`).toBeDefined();
      const response = resolve(absolute, documented!);
      // Headers: each required one is sent, each one sent is documented, and reads as documented.
      const headers = Object.fromEntries(Object.entries(response.headers ?? {}).map(([name, h]) => [name.toLowerCase(), resolve(absolute, h)]));
      for (const [name, header] of Object.entries(headers)) {
        if (header.required) expect(res.headers[name], `${what} sends ${name}`).toBeDefined();
        const value = res.headers[name];
        if (value === undefined) continue;
        const validate = ajv.compile(header.schema);
        expect(validate(header.schema.type === 'integer' ? Number(value) : value), `${what} header ${name}: ${value}`).toBe(true);
      }
      const undocumented = Object.keys(res.headers).filter((name) => !TRANSPORT_HEADERS.has(name) && !(name in headers));
      expect(undocumented, `${what} sends headers the document does not list`).toEqual([]);
      // The body the request sent fits the documented request body, when the server took it.
      if (sent !== undefined && res.status < 300) {
        const validate = ajv.compile(op!.requestBody!.content['application/json']!.schema as object);
        expect(validate(sent), `${what} request: ${JSON.stringify(validate.errors)} in ${JSON.stringify(sent).slice(0, 500)}`).toBe(true);
      }
      const media = res.status >= 400 ? 'application/problem+json' : 'application/json';
      const schema = response.content?.[media]?.schema;
      if (schema === undefined) {
        expect(res.text, `${method} ${template} ${res.status} documents no body`).toBe('');
        return;
      }
      const validate = ajv.compile(schema as object);
      expect(validate(res.body), `${method} ${template} ${res.status}: ${JSON.stringify(validate.errors)} in ${res.text.slice(0, 500)}`).toBe(true);
    };
    const call = async (method: string, template: string, path: string, body?: unknown, options: { key?: string | null; headers?: Record<string, string>; raw?: string } = {}): Promise<TestResponse> => {
      const res = await api.request(method, path, { ...(body === undefined ? {} : { body }), ...options });
      checkAgainst(method, template, res, body);
      return res;
    };

    const source = await createConnector(api, { type: 'webhook', direction: 'source', config: {} });
    const pipeline = await createPipeline(api);
    const webhook = await createWebhook(api);
    const at = new Date(api.clock.now()).toISOString();
    const [event] = await insertEvents(api, pipeline.id, [{ occurred_at: at, status: 'dead_lettered' }, { occurred_at: at }]);
    const delivery = await insertDelivery(api, webhook.id, 'failed');

    await call('POST', '/v2/connectors', '/v2/connectors', { type: 'postgres', direction: 'source', config: { host: 'db.example.com', password: 'pw-openapi-1' } });
    await call('GET', '/v2/connectors', '/v2/connectors');
    await call('GET', '/v2/connectors/{id}', `/v2/connectors/${source.id}`);
    await call('PATCH', '/v2/connectors/{id}', `/v2/connectors/${source.id}`, { name: 'renamed' });
    await call('POST', '/v2/connectors/{id}/check', `/v2/connectors/${pipeline.source_connector_id}/check`, {});
    await call('POST', '/v2/connectors/{id}/rotate', `/v2/connectors/${source.id}/rotate`);
    await call('GET', '/v2/pipelines', '/v2/pipelines');
    await call('GET', '/v2/pipelines/{id}', `/v2/pipelines/${pipeline.id}`);
    await call('PATCH', '/v2/pipelines/{id}', `/v2/pipelines/${pipeline.id}`, { description: 'documented' });
    await call('POST', '/v2/pipelines/{id}/activate', `/v2/pipelines/${pipeline.id}/activate`, {});
    await call('GET', '/v2/pipelines/{id}/runs', `/v2/pipelines/${pipeline.id}/runs`);
    await call('GET', '/v2/pipelines/{id}/stats', `/v2/pipelines/${pipeline.id}/stats?minutes=5`);
    await call('GET', '/v2/pipelines/{id}/stats', `/v2/pipelines/${pipeline.id}/stats?minutes=0`);
    await call('POST', '/v2/pipelines/{id}/runs', `/v2/pipelines/${pipeline.id}/runs`);
    await call('POST', '/v2/pipelines/{id}/pause', `/v2/pipelines/${pipeline.id}/pause`);
    await call('GET', '/v2/pipelines/{id}/events', `/v2/pipelines/${pipeline.id}/events`);
    await call('POST', '/v2/events/{id}/replay', `/v2/events/${event!.id}/replay`, {});
    await call('POST', '/v2/pipelines/{id}/events/replay', `/v2/pipelines/${pipeline.id}/events/replay`, { status: 'dead_lettered' });
    await call('GET', '/v2/webhooks', '/v2/webhooks');
    await call('GET', '/v2/webhooks/{id}', `/v2/webhooks/${webhook.id}`);
    await call('PATCH', '/v2/webhooks/{id}', `/v2/webhooks/${webhook.id}`, { description: 'documented' });
    await call('GET', '/v2/webhooks/{id}/secret', `/v2/webhooks/${webhook.id}/secret`);
    await call('POST', '/v2/webhooks/{id}/rotate-secret', `/v2/webhooks/${webhook.id}/rotate-secret`);
    await call('GET', '/v2/webhooks/{id}/deliveries', `/v2/webhooks/${webhook.id}/deliveries`);
    await call('GET', '/v2/webhooks/{id}/deliveries/{delivery_id}', `/v2/webhooks/${webhook.id}/deliveries/${delivery.id}`);
    await call('POST', '/v2/webhooks/{id}/deliveries/{delivery_id}/redeliver', `/v2/webhooks/${webhook.id}/deliveries/${delivery.id}/redeliver`, {});
    await call('POST', '/v2/webhooks/{id}/recover', `/v2/webhooks/${webhook.id}/recover`, { since: at });
    // Errors are documented too, with the Problem schema.
    await call('GET', '/v2/pipelines/{id}', `/v2/pipelines/${ghostId('pip')}`);
    await call('POST', '/v2/pipelines', '/v2/pipelines', { name: 5 });
    // Answers with headers of their own: a challenge, a replay, a refused body, a rate limit.
    await call('GET', '/v2/connectors', '/v2/connectors', undefined, { key: null });
    const once = { 'idempotency-key': `openapi-${unique()}` };
    const hook = { url: 'https://hooks.example.com/openapi', events: ['pipeline.failed'] };
    await call('POST', '/v2/webhooks', '/v2/webhooks', hook, { headers: once });
    expect((await call('POST', '/v2/webhooks', '/v2/webhooks', hook, { headers: once })).headers['idempotent-replayed']).toBe('true');
    await call('POST', '/v2/webhooks', '/v2/webhooks', undefined, { raw: 'x'.repeat(1024 * 1024 + 1), headers: { 'content-type': 'application/json' } });
    await call('POST', '/v2/webhooks', '/v2/webhooks', undefined, { raw: 'hello', headers: { 'content-type': 'text/plain' } });
    const limited = await api.key(['write'], 'default', { requests: 1, per_seconds: 3600 });
    await call('GET', '/v2/pipelines', '/v2/pipelines', undefined, { key: limited });
    expect((await call('GET', '/v2/pipelines', '/v2/pipelines', undefined, { key: limited })).status).toBe(429);
    await call('DELETE', '/v2/webhooks/{id}', `/v2/webhooks/${webhook.id}`);
    await call('DELETE', '/v2/pipelines/{id}', `/v2/pipelines/${pipeline.id}`);
    await call('DELETE', '/v2/connectors/{id}', `/v2/connectors/${source.id}`);
  });

  it("declares each connector type's config and each step type's schema, as the engine registers them", () => {
    const { registry } = engineContext(api.engine);
    const schemas = doc.components.schemas;
    const create = doc.paths['/v2/connectors']!.post!.requestBody!.content['application/json']!.schema;
    expect(create).toEqual({ $ref: '#/components/schemas/ConnectorCreate' });
    expect(schemas.ConnectorCreate!.discriminator.propertyName).toBe('type');
    expect(Object.keys(schemas.ConnectorCreate!.discriminator.mapping)).toEqual(registry.connectorTypes());
    expect(Object.keys(schemas.Connector!.discriminator.mapping)).toEqual(registry.connectorTypes());
    expect(Object.keys(schemas.TransformStep!.discriminator.mapping)).toEqual(registry.transformTypes());
    // Per type: its own type and directions, its config schema.
    expect(schemas.PostgresConnectorCreate!.properties.type).toEqual({ type: 'string', const: 'postgres' });
    expect(schemas.PostgresConnectorCreate!.properties.direction).toEqual({ type: 'string', enum: ['source', 'destination'] });
    expect(Object.keys(schemas.PostgresConfig!.properties).sort()).toEqual(['database', 'host', 'password']);
    // Secrets: write-only in requests, "********" in answers (the readable one shown once).
    expect(schemas.PostgresConfig!.properties.password.writeOnly).toBe(true);
    expect(schemas.PostgresConfigRedacted!.properties.password.const).toBe('********');
    expect(schemas.WebhookConfig!.properties.signing_secret.writeOnly).toBe(true);
    expect(schemas.WebhookConfigRedacted!.properties.signing_secret).toMatchObject({ type: 'string' });
    // Steps: built-in ones with their schemas, in pipelines as written and as read.
    expect(schemas.MaskStep!.properties.type).toMatchObject({ const: 'mask' });
    const body = resolve(doc, doc.paths['/v2/pipelines']!.post!.requestBody!.content['application/json']!.schema as Schema);
    expect(body.properties.transforms.items).toEqual({ $ref: '#/components/schemas/TransformStep' });
    expect(schemas.Pipeline!.properties.transforms.items).toEqual({ $ref: '#/components/schemas/TransformStep' });
  });

  it('lists every error code the source raises in Problem.code', () => {
    const codes = doc.components.schemas.Problem!.properties.code.enum as string[];
    expect(new Set(codes).size).toBe(codes.length);
    expect(codes).toEqual(expect.arrayContaining([...ERROR_CODES]));
    const raised = raisedCodes();
    expect(raised.size).toBeGreaterThan(20);
    expect([...raised].filter((code) => !codes.includes(code))).toEqual([]);
    // Each error answer lists the codes of its status, all of them in the enum.
    for (const [name, response] of Object.entries(doc.components.responses)) {
      const listed = [...((response as { description: string }).description.split('Codes:')[1] ?? '').matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!);
      expect(listed.filter((code) => !codes.includes(code)), name).toEqual([]);
    }
  });

  it('declares the page size the server enforces', async () => {
    const limit = doc.paths['/v2/connectors']!.get!.parameters.find((p) => 'name' in p && p.name === 'limit') as Parameter;
    expect(limit.schema).toMatchObject({ type: 'integer', minimum: 1, default: 50 });
    const res = await api.request('GET', `/v2/connectors?limit=${MAX_LIMIT + 1}`);
    if (limit.schema.maximum !== undefined) {
      // Declared: refused above it.
      expect(limit.schema.maximum).toBe(MAX_LIMIT);
      expectProblem(res, 400, 'validation_failed');
    } else {
      // Not declared: served, at most MAX_LIMIT a page, and the description says so.
      expect(res.status, res.text).toBe(200);
      expect(res.body.data.length).toBeLessThanOrEqual(MAX_LIMIT);
      expect(limit.description).toContain(`at most ${MAX_LIMIT}`);
    }
    expectProblem(await api.request('GET', '/v2/connectors?limit=0'), 400, 'validation_failed');
  });

  it('is served at the root with the root as its server', () => {
    expect(doc.servers).toEqual([{ url: '/' }]);
  });
});

describe('the OpenAPI document of an engine with plugin types', () => {
  it('declares plugin steps, steps replacing built-in ones, and connector types of any name', async () => {
    const upper = defineTransform({
      type: 'upper',
      schema: Type.Object({ type: Type.Literal('upper'), path: Type.String({ maxLength: 256 }) }, { additionalProperties: false }),
      apply: (event) => event,
    });
    const mask = defineTransform({
      type: 'mask',
      schema: Type.Object({ type: Type.Literal('mask'), path: Type.String(), salt: Type.Optional(Type.String({ default: 'pepper' })) }, { additionalProperties: false }),
      apply: (event) => event,
    });
    const queue = defineConnector({
      type: 'acme-queue',
      version: '1.2.3',
      directions: ['destination'],
      configSchema: Type.Object(
        {
          endpoint: Type.String({ maxLength: 2048 }),
          auth: Type.Union([Type.Literal('none'), Type.Object({ user: Type.String(), password: Secret(Type.String()) }, { additionalProperties: false })]),
          headers: Type.Optional(Secret(Type.Record(Type.String(), Type.String()))),
          retries: Type.Optional(Type.Integer({ minimum: 0, default: 3 })),
        },
        { additionalProperties: false },
      ),
      destination: () => ({ write: async (events) => events.map(() => ({ ok: true as const })) }),
    });
    const engine = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }), plugins: [...testPlugins(), upper, mask, queue] });
    try {
      const doc = createHttpApi(engine).openapi() as unknown as Document;
      const result = await new Validator().validate(doc as unknown as Record<string, unknown>);
      expect(result.errors ?? [], JSON.stringify(result.errors)).toEqual([]);
      const schemas = doc.components.schemas;
      expect(schemas.TransformStep!.discriminator.mapping).toMatchObject({ upper: '#/components/schemas/UpperStep', mask: '#/components/schemas/MaskStep' });
      // The plugin's mask replaced the built-in one; a default is described, not declared.
      expect(Object.keys(schemas.MaskStep!.properties)).toEqual(['type', 'path', 'salt']);
      expect(schemas.MaskStep!.properties.salt).toEqual({ type: 'string', description: 'Default: `"pepper"`.' });
      // One direction: a constant. Secrets nested in a union, and a secret record.
      expect(schemas.AcmeQueueConnectorCreate!.properties.direction).toEqual({ type: 'string', const: 'destination' });
      expect(schemas.AcmeQueueConfig!.properties.auth.anyOf[1].properties.password.writeOnly).toBe(true);
      expect(schemas.AcmeQueueConfigRedacted!.properties.auth.anyOf[1].properties.password.const).toBe('********');
      expect(schemas.AcmeQueueConfigRedacted!.properties.headers).toMatchObject({ type: 'string', const: '********' });
      // A rotation takes the fields that hold secrets; an update any field, null to remove it.
      expect(Object.keys(schemas.AcmeQueueConfigSecrets!.properties)).toEqual(['auth', 'headers']);
      expect(schemas.AcmeQueueConfigPatch!.required).toBeUndefined();
      expect(schemas.AcmeQueueConfigPatch!.properties.retries.anyOf).toContainEqual({ type: 'null' });
    } finally {
      await engine.stop();
    }
  });

  it('keeps the generic schemas of an engine without connector types', async () => {
    const engine = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }) });
    try {
      const doc = createHttpApi(engine).openapi() as unknown as Document;
      expect((await new Validator().validate(doc as unknown as Record<string, unknown>)).valid).toBe(true);
      expect(doc.components.schemas.ConnectorCreate).toBeUndefined();
      expect(doc.components.schemas.Connector!.properties.type).toEqual({ type: 'string' });
      expect(doc.components.schemas.TransformStep).toBeDefined();
    } finally {
      await engine.stop();
    }
  });
});

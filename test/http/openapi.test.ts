/**
 * `GET /v2/openapi.json`: the document validates as OpenAPI 3.1 (an off-the-shelf validator),
 * names exactly the operations the adapters serve with the authentication it documents, and
 * describes the bodies actually sent: real answers are checked against the documented schemas.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpApi } from '@ferry/http';
import { ADAPTERS, PROBLEM_JSON, startApi, type TestApi, type TestResponse } from './harness.js';
import { createConnector, createPipeline, createWebhook, expectProblem, ghostId, insertDelivery, insertEvents } from './fixtures.js';

type Operation = {
  operationId: string;
  security: Array<Record<string, unknown>>;
  responses: Record<string, { content?: Record<string, { schema: unknown }> }>;
  requestBody?: unknown;
};
type Document = { openapi: string; paths: Record<string, Record<string, Operation>>; components: Record<string, unknown> };

const METHODS = ['GET', 'POST', 'PATCH', 'DELETE', 'PUT'] as const;
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
    const checkAgainst = (method: string, template: string, res: TestResponse): void => {
      const op = absolute.paths[template]?.[method.toLowerCase()];
      const documented = op?.responses[String(res.status)];
      expect(documented, `${method} ${template} documents ${res.status}: ${res.text.slice(0, 300)}`).toBeDefined();
      const media = res.status >= 400 ? 'application/problem+json' : 'application/json';
      const schema = documented!.content?.[media]?.schema;
      if (schema === undefined) {
        expect(res.text, `${method} ${template} ${res.status} documents no body`).toBe('');
        return;
      }
      const validate = ajv.compile(schema as object);
      expect(validate(res.body), `${method} ${template} ${res.status}: ${JSON.stringify(validate.errors)} in ${res.text.slice(0, 500)}`).toBe(true);
    };
    const call = async (method: string, template: string, path: string, body?: unknown): Promise<TestResponse> => {
      const res = await api.request(method, path, body === undefined ? {} : { body });
      checkAgainst(method, template, res);
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
    await call('POST', '/v2/connectors/{id}/check', `/v2/connectors/${pipeline.source_connector_id}/check`);
    await call('POST', '/v2/connectors/{id}/rotate', `/v2/connectors/${source.id}/rotate`);
    await call('GET', '/v2/pipelines', '/v2/pipelines');
    await call('GET', '/v2/pipelines/{id}', `/v2/pipelines/${pipeline.id}`);
    await call('PATCH', '/v2/pipelines/{id}', `/v2/pipelines/${pipeline.id}`, { description: 'documented' });
    await call('POST', '/v2/pipelines/{id}/activate', `/v2/pipelines/${pipeline.id}/activate`);
    await call('GET', '/v2/pipelines/{id}/runs', `/v2/pipelines/${pipeline.id}/runs`);
    await call('POST', '/v2/pipelines/{id}/runs', `/v2/pipelines/${pipeline.id}/runs`);
    await call('POST', '/v2/pipelines/{id}/pause', `/v2/pipelines/${pipeline.id}/pause`);
    await call('GET', '/v2/pipelines/{id}/events', `/v2/pipelines/${pipeline.id}/events`);
    await call('POST', '/v2/events/{id}/replay', `/v2/events/${event!.id}/replay`);
    await call('POST', '/v2/pipelines/{id}/events/replay', `/v2/pipelines/${pipeline.id}/events/replay`, { status: 'dead_lettered' });
    await call('GET', '/v2/webhooks', '/v2/webhooks');
    await call('GET', '/v2/webhooks/{id}', `/v2/webhooks/${webhook.id}`);
    await call('PATCH', '/v2/webhooks/{id}', `/v2/webhooks/${webhook.id}`, { description: 'documented' });
    await call('GET', '/v2/webhooks/{id}/secret', `/v2/webhooks/${webhook.id}/secret`);
    await call('POST', '/v2/webhooks/{id}/rotate-secret', `/v2/webhooks/${webhook.id}/rotate-secret`);
    await call('GET', '/v2/webhooks/{id}/deliveries', `/v2/webhooks/${webhook.id}/deliveries`);
    await call('GET', '/v2/webhooks/{id}/deliveries/{delivery_id}', `/v2/webhooks/${webhook.id}/deliveries/${delivery.id}`);
    await call('POST', '/v2/webhooks/{id}/deliveries/{delivery_id}/redeliver', `/v2/webhooks/${webhook.id}/deliveries/${delivery.id}/redeliver`);
    await call('POST', '/v2/webhooks/{id}/recover', `/v2/webhooks/${webhook.id}/recover`, { since: at });
    // Errors are documented too, with the Problem schema.
    await call('GET', '/v2/pipelines/{id}', `/v2/pipelines/${ghostId('pip')}`);
    await call('POST', '/v2/pipelines', '/v2/pipelines', { name: 5 });
    await call('DELETE', '/v2/webhooks/{id}', `/v2/webhooks/${webhook.id}`);
    await call('DELETE', '/v2/pipelines/{id}', `/v2/pipelines/${pipeline.id}`);
    await call('DELETE', '/v2/connectors/{id}', `/v2/connectors/${source.id}`);
  });
});

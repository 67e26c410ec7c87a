/**
 * Property-based robustness of the /v2 surface: thousands of generated requests (bodies, query
 * strings, path ids, content types, idempotency keys) at every route of the table, through real
 * loopback HTTP. Whatever comes in, the answer is never a 5xx, every error is a well-formed
 * problem+json and every success is JSON.
 *
 * Bodies are drawn from three families so the generator reaches past the first validation layer:
 * arbitrary text (mostly not JSON), arbitrary JSON values, and objects built from the API's own
 * field names with arbitrary values (deep nesting, NUL characters, huge numbers, lone
 * surrogates), which is where type confusion in the services would show. A success is held to
 * the engine's OpenAPI document, its body valid against the documented schema
 * (route-properties.test.ts sends valid requests, which succeed far more often). Paths and query
 * strings carry raw percent-escapes (NUL, lone surrogates in CESU-8, truncated and invalid escapes), and
 * now and then a header block over Node's limit arrives (431 before any route). Fastify on SQLite takes
 * the bulk; Express and Postgres run fewer cases, since they share the dispatch and differ in
 * what they translate (Express) and what the database refuses (Postgres: NUL in text).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpApi } from '@ferry/http';
import { startApi, type AdapterName, type StorageName, type TestApi } from './harness.js';
import { createConnector, createPipeline, createWebhook, ghostId, insertDelivery, insertEvents } from './fixtures.js';
import { answerChecker, documentOperations, expectWellFormed, findOperation, type DocumentOperation, type OpenApiDocument } from './openapi-answers.js';

const FIELDS = [
  'name', 'type', 'direction', 'config', 'bidirectional', 'source_connector_id', 'destination_connector_id', 'steps',
  'schedule', 'mode', 'state', 'url', 'events', 'description', 'enabled', 'secret', 'signing_secret', 'host', 'password',
  'event_ids', 'status', 'since', 'until', 'limit', 'id', 'created_at', 'workspace_id', 'kind', 'options', 'filter',
] as const;
const QUERY_NAMES = ['limit', 'cursor', 'type', 'since', 'until', 'status', 'state', 'name', 'starting_after', 'expand'] as const;
const CONTENT_TYPES = ['application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded', 'application/merge-patch+json', 'APPLICATION/JSON'] as const;

/** Any JSON value, with the awkward strings the services must survive. */
const awkwardString = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.constantFrom('', '\u0000', 'a\u0000b', '\ud800', '*/5 * * * *', '2026-13-45T99:99:99Z', 'https://127.0.0.1/x', 'whsec_', '********', 'x'.repeat(5000)),
);
const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  any: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    awkwardString,
    fc.integer(),
    fc.double(),
    fc.constantFrom(0, -1, 1e308, Number.MAX_SAFE_INTEGER + 2, true, false, null),
    fc.array(tie('any'), { maxLength: 4 }),
    fc.dictionary(fc.oneof(fc.constantFrom(...FIELDS), fc.string()), tie('any'), { maxKeys: 4 }),
  ),
})).any;
const apiObject = fc.dictionary(fc.constantFrom(...FIELDS), value, { maxKeys: 6 });

/** The raw body bytes of one request, or undefined for none. */
const bodyArb = fc.oneof(
  fc.constant(undefined),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.jsonValue().map((v) => JSON.stringify(v)),
  apiObject.map((v) => JSON.stringify(v)),
  apiObject.map((v) => JSON.stringify(v)),
  fc.nat({ max: 100 }).map((depth) => '['.repeat(depth + 10) + ']'.repeat(depth + 10)),
);

/** Percent-encodings as sent on the wire, not as encodeURIComponent would write them: NUL, a lone surrogate in CESU-8, truncated and invalid escapes. */
const RAW_ESCAPES = ['%00', 'a%00b', '%ED%A0%80', '%ED%BF%BF', '%E0%A4%A', '%', '%zz', '%C0%80', '%F4%90%80%80'] as const;
const queryArb = fc
  .array(
    fc.tuple(
      fc.oneof(fc.constantFrom(...QUERY_NAMES).map(encodeURIComponent), fc.string({ maxLength: 8 }).map(encodeURIComponent), fc.constantFrom(...RAW_ESCAPES)),
      fc.oneof(
        fc.string({ maxLength: 40 }).map(encodeURIComponent),
        fc.integer().map(String),
        fc.constantFrom('0', '-1', '1.5', '101', '1e3', 'null'),
        fc.constantFrom(...RAW_ESCAPES),
      ),
    ),
    { maxLength: 3 },
  )
  .map((pairs) => pairs.map(([k, v]) => `${k}=${v}`).join('&'));

interface Ids {
  readonly [param: string]: readonly string[];
}

const CELLS: Array<{ adapter: AdapterName; storage: StorageName; runs: number }> = [
  { adapter: 'fastify', storage: 'sqlite', runs: 3000 },
  { adapter: 'express', storage: 'sqlite', runs: 800 },
  { adapter: 'fastify', storage: 'postgres', runs: 600 },
];

describe.each(CELLS)('generated requests never get a 5xx [$adapter, $storage]', ({ adapter, storage, runs }) => {
  let api: TestApi;
  let ids: Ids;
  let routes: Array<{ method: string; path: string }>;
  let operations: DocumentOperation[];
  let check: ReturnType<typeof answerChecker>;

  beforeAll(async () => {
    // Auth failures and unmatched paths charge a per-address bucket; the limiter is tested on its
    // own, here it would only turn the bulk of the cases into 429s.
    api = await startApi({ adapter, storage, httpOptions: { rateLimit: false, ingestRateLimit: false } });
    const http = createHttpApi(api.engine);
    routes = http.routes.map((r) => ({ method: r.method, path: r.path }));
    const doc = http.openapi() as unknown as OpenApiDocument;
    operations = documentOperations(doc);
    check = answerChecker(doc);
    const pipeline = await createPipeline(api);
    const hookSource = await createConnector(api, { type: 'webhook', direction: 'source', config: {} });
    const webhook = await createWebhook(api);
    const at = new Date(api.clock.now()).toISOString();
    const events = await insertEvents(api, pipeline.id, [{ occurred_at: at, status: 'dead_lettered' }, { occurred_at: at }]);
    const delivery = await insertDelivery(api, webhook.id, 'failed');
    ids = {
      id: [pipeline.id, pipeline.source_connector_id, webhook.id, events[0]!.id, hookSource.id],
      connector_id: [hookSource.id, pipeline.source_connector_id],
      delivery_id: [delivery.id],
    };
  });
  afterAll(async () => {
    await api?.close();
  });

  it(`answers ${runs} generated requests over every route with problem+json or JSON`, async () => {
    const idArb = (param: string) =>
      fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom(...(ids[param] ?? ids.id!)) },
        { weight: 1, arbitrary: fc.constantFrom(ghostId('pip'), ghostId('con'), ghostId('whk'), ghostId('evt'), ghostId('dlv'), 'x', '..', 'pip_', ...RAW_ESCAPES) },
        { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 40 }).map(encodeURIComponent) },
      );
    const request = fc
      .record({
        route: fc.constantFrom(...routes),
        seed: fc.array(fc.nat(), { minLength: 2, maxLength: 2 }),
        query: fc.oneof(fc.constant(''), queryArb),
        body: bodyArb,
        contentType: fc.oneof(fc.constantFrom(...CONTENT_TYPES), fc.constant(undefined), fc.string({ maxLength: 30 })),
        idempotencyKey: fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.string({ minLength: 0, maxLength: 300 }) }),
        method: fc.oneof({ weight: 9, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom('GET', 'POST', 'PATCH', 'DELETE', 'PUT') }),
        // Now and then a header block over Node's 16 KiB limit: 431 from the parser, before any route.
        bigHeader: fc.oneof({ weight: 19, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 16 * 1024, max: 40 * 1024 }) }),
      })
      .chain((r) => {
        const params = [...r.route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
        return fc.tuple(fc.constant(r), fc.tuple(...params.map((p) => idArb(p).map((v) => [p, v] as const))));
      });

    let seen = 0;
    await fc.assert(
      fc.asyncProperty(request, async ([r, params]) => {
        let path = r.route.path;
        for (const [name, v] of params) path = path.replace(`{${name}}`, v);
        if (r.query) path += `?${r.query}`;
        const method = r.method ?? r.route.method;
        const headers: Record<string, string> = {};
        if (r.contentType !== undefined && r.body !== undefined) headers['content-type'] = r.contentType.replace(/[^\t\x20-\x7e]/g, '');
        if (r.idempotencyKey !== undefined) headers['idempotency-key'] = r.idempotencyKey.replace(/[^\t\x20-\x7e]/g, '');
        if (r.bigHeader > 0) headers['x-padding'] = 'p'.repeat(r.bigHeader);
        const res = await api.request(method, path, { ...(r.body !== undefined && method !== 'GET' ? { raw: r.body } : {}), headers });
        const what = `${method} ${path} ${r.body?.slice(0, 200) ?? ''}`;
        expectWellFormed(res, what);
        // A success answers as its operation documents: the one the path reached as sent, which
        // is not always the route drawn (an id of `..` is resolved away before it is sent).
        const reached = res.status < 300 ? findOperation(operations, method, path) : undefined;
        if (reached) check(reached, res, what);
        seen++;
      }),
      { numRuns: runs, endOnFailure: true },
    );
    expect(seen).toBe(runs);
  });
});

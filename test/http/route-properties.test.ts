/**
 * Properties of every route over real loopback HTTP, on both adapters, with requests the
 * engine's own OpenAPI document says are valid: bodies generated from each operation's request
 * schema, ids of resources that exist, query values of each parameter's schema. Whatever the
 * request, the answer is never a 5xx, its status is one the operation documents, an error is
 * problem+json with a `code`, and a success validates against the documented schema. A refusal
 * is never for the request's shape, which the document said was valid. Then the same valid
 * requests, each with one defect the documentation names (a lone surrogate in a query value,
 * bytes that are not UTF-8 in a body, a date no calendar has, nesting past 64 levels), must get
 * exactly the refusal the documentation gives it.
 *
 * fuzz.test.ts sends hostile requests to the same routes; this file reaches past the first
 * validation layer, where services run. What a schema cannot say is filled in from the
 * resources the test made: a pipeline's connectors are real ones of the right direction, a
 * connector's `config` a known-good one of its type (configs are plugin-specific), a schedule a
 * cron expression that fires, a webhook URL at a loopback receiver, a secret in the `whsec_`
 * form, ingest bodies signed with the connector's signing secret. A property that fails shrinks
 * its request to a small one; seeds are fixed, so it replays with the same requests.
 */
import fc from 'fast-check';
import { generateWebhookSecret } from '@ferry/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookReceiver, type WebhookReceiver } from '@ferry/testing';
import { ADAPTERS, signedHeaders, startApi, type AdapterName, type TestApi, type TestResponse } from './harness.js';
import { createConnector, createPipeline, createWebhook, ghostId, insertBackfill, insertDelivery, insertEvents } from './fixtures.js';
import { answerChecker, documentOperations, resolveRef, type DocumentOperation, type OpenApiDocument } from './openapi-answers.js';
import { arbitraryOf, dateTimeArbitrary, textArbitrary, type JsonSchema } from './schema-arbitrary.js';

/** Generated requests per adapter and property; fixed seeds, so a failure replays exactly. */
const VALID_RUNS = 500;
const SHAPE_RUNS = 300;
const DEFECT_RUNS = 50;
const SEED = 20_261_128;

/** A resource the test knows of, by its id's prefix: what a path parameter may name. */
interface Resource {
  id: string;
  /** A connector's type and direction, a delivery's subscription. */
  type?: string;
  direction?: string;
  subscription_id?: string;
}

/**
 * The resources that exist, by id prefix (requests that create or delete keep it current), and
 * the loopback receiver webhook URLs point at: deliveries end at once rather than wait on a
 * host outside.
 */
interface World {
  resources: Map<string, Resource[]>;
  hooks: string;
}

/** Values a schema cannot promise are valid, drawn with the request so it replays exactly. */
interface Extras {
  nat: number;
  cron: string;
  /** The path of a webhook URL under the test's receiver. */
  hookPath: string;
  secret: string;
  password: string;
  since: string;
  until: string;
}

/** One generated request before the world is consulted: the operation and what was drawn for it. */
interface Draw {
  /** The operation's id: counterexamples print it, not the whole operation. */
  operationId: string;
  /** One number per path parameter, choosing among the resources of its kind. */
  picks: number[];
  query: Array<[string, unknown]>;
  /** The body, or undefined for none. */
  body: unknown;
  extras: Extras;
}

/** A request ready to send. */
interface Built {
  path: string;
  query: Array<[string, string]>;
  /** JSON text, or undefined for no body. */
  body: string | undefined;
  /** The connector an ingest request is signed for. */
  ingest?: string;
  what: string;
}

const CRONS = ['*/5 * * * *', '0 * * * *', '30 2 * * 1-5', '0 0 1 * *', '*/10 * * * * *'] as const;
const bytesToSecret = (bytes: Uint8Array): string => `whsec_${Buffer.from(bytes).toString('base64')}`;
const extrasArbitrary: fc.Arbitrary<Extras> = fc.record({
  nat: fc.nat(),
  cron: fc.constantFrom(...CRONS),
  hookPath: textArbitrary(0, 30).map(encodeURIComponent),
  // `whsec_` and the standard base64 of 24 to 64 bytes (docs/api.md, Webhook secrets).
  secret: fc.uint8Array({ minLength: 24, maxLength: 64 }).map(bytesToSecret),
  password: textArbitrary(1, 40),
  since: dateTimeArbitrary,
  until: dateTimeArbitrary,
});

type Body = Record<string, unknown>;
const isObject = (value: unknown): value is Body => value !== null && typeof value === 'object' && !Array.isArray(value);

/** Known-good configs of the test plugins (harness.ts), by connector type: what `config` a create takes. */
const CONFIGS: Record<string, Array<(x: Extras) => Body>> = {
  postgres: [(x) => ({ host: 'db.example.com', password: x.password }), (x) => ({ host: 'replica.example.com', password: x.password, database: 'orders' })],
  webhook: [() => ({}), (x) => ({ signing_secret: x.secret }), (x) => ({ url: `https://hooks.example.com/${x.hookPath}` })],
};
/** Known-good config changes (`<Type>ConfigPatch`), by connector type. */
const PATCHES: Record<string, Array<(x: Extras) => Body>> = {
  postgres: [() => ({ host: 'db2.example.com' }), () => ({ password: '********', database: null }), (x) => ({ password: x.password })],
  webhook: [(x) => ({ url: `https://hooks.example.com/${x.hookPath}` }), () => ({ url: null })],
};
/** Connector types whose plugin generates new credentials for a rotation without a body (harness.ts). */
const GENERATES_CREDENTIALS = new Set(['webhook']);
/** New secrets for a rotation (`<Type>ConfigSecrets`), by connector type. */
const ROTATIONS: Record<string, (x: Extras) => Body> = {
  postgres: (x) => ({ password: x.password }),
  webhook: (x) => ({ signing_secret: x.secret }),
};

const chosen = <T>(list: readonly T[], n: number): T => list[n % list.length]!;

/**
 * A `filter` step's value as its operator needs it: a list for `in`, a pattern for `matches`, a
 * number or string to order by. The step's schema leaves `value` open (`exists` takes none) and
 * checks these in code (docs/api.md, Field error codes: `required`).
 */
function filterValue(step: Body, x: Extras): Body {
  if (step.type !== 'filter' || step.op === 'exists') return step;
  const value = step.value;
  if (step.op === 'in') return { ...step, value: Array.isArray(value) ? value : [value ?? x.nat] };
  if (step.op === 'matches') return { ...step, value: typeof value === 'string' ? value.replace(/[^\w ]/g, '') : '^order\\.' };
  if (['gt', 'gte', 'lt', 'lte'].includes(String(step.op))) return { ...step, value: typeof value === 'number' || typeof value === 'string' ? value : x.nat };
  return { ...step, value: value ?? null };
}

/**
 * What a body schema cannot say, filled in per operation: references to real connectors,
 * configs of the connector's type, cron expressions, URLs, secrets and timestamps. A field the
 * generator left out stays out.
 */
function fillIn(operationId: string, body: unknown, x: Extras, params: Record<string, Resource>, world: World): unknown {
  // A type whose plugin cannot generate credentials must be sent them (docs/api.md, Connector rotation).
  const type = params.id?.type ?? 'postgres';
  if (operationId === 'rotateConnector' && !GENERATES_CREDENTIALS.has(type)) return { ...(isObject(body) ? body : {}), config: ROTATIONS[type]!(x) };
  if (!isObject(body)) return body;
  const out: Body = { ...body };
  const set = (key: string, value: (current: unknown) => unknown): void => {
    if (Object.hasOwn(out, key)) out[key] = value(out[key]);
  };
  switch (operationId) {
    case 'createConnector':
      set('config', () => chosen(CONFIGS[String(out.type)]!, x.nat)(x));
      break;
    case 'updateConnector':
      set('config', () => chosen(PATCHES[type]!, x.nat)(x));
      break;
    case 'rotateConnector':
      set('config', () => ROTATIONS[type]!(x));
      break;
    case 'createPipeline': {
      const connectors = world.resources.get('con') ?? [];
      const sources = connectors.filter((c) => c.direction !== 'destination');
      const destinations = connectors.filter((c) => c.direction !== 'source');
      set('source_connector_id', () => chosen(sources, x.nat).id);
      set('destination_connector_id', () => chosen(destinations, x.nat >> 3).id);
      set('schedule', (s) => (s === null ? null : x.cron));
      set('transforms', (steps) => (steps as Body[]).map((step) => filterValue(step, x)));
      break;
    }
    case 'updatePipeline':
      set('schedule', (s) => (s === null ? null : x.cron));
      set('transforms', (steps) => (steps as Body[]).map((step) => filterValue(step, x)));
      break;
    case 'createWebhook':
    case 'updateWebhook':
      set('url', () => `${world.hooks}/${x.hookPath}`);
      set('secret', () => x.secret);
      break;
    case 'rotateWebhookSecret':
      set('secret', () => x.secret);
      break;
    case 'recoverDeliveries':
    case 'replayEvents':
      set('since', () => x.since);
      set('until', () => x.until);
      break;
  }
  return out;
}

/** The prefix of the ids a path parameter takes, read from its documented pattern (`^con_...`). */
const prefixOf = (schema: JsonSchema): string | undefined => /^\^(\w+)_/.exec(String(schema.pattern))?.[1];

/**
 * The resources a path parameter of `op` may name. Those that would only ever answer 404 (an
 * ingest to a connector that is not a webhook source) are left out, so the generator reaches the
 * service; a well-formed id of nothing stays possible through the ghost ids.
 */
function candidates(op: DocumentOperation, prefix: string, world: World): Resource[] {
  const all = world.resources.get(prefix) ?? [];
  if (op.operationId === 'ingestEvents') return all.filter((c) => c.type === 'webhook' && c.direction !== 'destination');
  if (op.operationId === 'getConnectorSigningSecret') return all.filter((c) => c.type === 'webhook');
  return all;
}

/**
 * The path of a draw: a delivery's path names its own subscription. With `ghosts`, one pick in
 * twelve is a well-formed id of nothing (valid, answered 404).
 */
function resolveParams(op: DocumentOperation, draw: Draw, world: World, ghosts: boolean): Record<string, Resource> | undefined {
  const params: Record<string, Resource> = {};
  const pathParams = op.parameters.filter((p) => p.in === 'path');
  for (const [i, p] of pathParams.entries()) {
    const prefix = prefixOf(p.schema);
    if (prefix === undefined) return undefined;
    const pick = draw.picks[i] ?? 0;
    const pool = candidates(op, prefix, world);
    params[p.name] = (ghosts && pick % 12 === 11) || pool.length === 0 ? { id: ghostId(prefix) } : chosen(pool, pick);
  }
  if (params.delivery_id?.subscription_id !== undefined) params.id = { id: params.delivery_id.subscription_id };
  return params;
}

/**
 * Builds the request of a draw against the world as it is now. Without `ghosts`, every id names
 * a resource: a request that must fail for one defect names nothing missing.
 */
function build(op: DocumentOperation, draw: Draw, world: World, ghosts = true): Built {
  const params = resolveParams(op, draw, world, ghosts);
  if (!params) throw new Error(`${op.template}: a path parameter without an id pattern`);
  const path = op.template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name]!.id));
  const body = fillIn(op.operationId, draw.body, draw.extras, params, world);
  const query = draw.query.map(([name, value]) => [name, String(value)] as [string, string]);
  const text = body === undefined ? undefined : JSON.stringify(body);
  const built: Built = { path, query, body: text, what: '' };
  if (op.operationId === 'ingestEvents') built.ingest = params.connector_id!.id;
  built.what = describeRequest(op, built);
  return built;
}

/** A request as a failure shows it: method, path, query and the start of the body. */
const describeRequest = (op: DocumentOperation, built: Built, body: string | Buffer | undefined = built.body): string =>
  `${op.method} ${built.path}${queryString(built.query)} ${body === undefined ? '(no body)' : typeof body === 'string' ? body.slice(0, 300) : `bytes ${body.subarray(0, 300).toString('hex')}`}`;

const queryString = (query: ReadonlyArray<[string, string]>): string => (query.length === 0 ? '' : `?${query.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&')}`);

/**
 * Draws valid requests for `ops` from the document's schemas. `fullLength: false` keeps strings
 * short of their `maxLength`, for properties about something else than lengths.
 */
function drawArbitrary(doc: OpenApiDocument, ops: readonly DocumentOperation[], fullLength = true): fc.Arbitrary<Draw> {
  const options = { resolve: (ref: string) => resolveRef(doc, ref), fullLength };
  return fc.oneof(
    ...ops.map((op) => {
      const schema = op.requestBody?.content['application/json']?.schema;
      const body = schema === undefined ? fc.constant(undefined) : arbitraryOf(schema, options);
      // No cursor: a valid one only comes from an earlier page.
      const queryParams = op.parameters.filter((p) => p.in === 'query' && p.name !== 'cursor');
      const query = fc
        .tuple(...queryParams.map((p) => fc.option(arbitraryOf(p.schema, options), { nil: undefined }).map((v) => [p.name, v] as [string, unknown])))
        .map((pairs) => pairs.filter(([, v]) => v !== undefined));
      const pathCount = op.parameters.filter((p) => p.in === 'path').length;
      return fc.record({
        operationId: fc.constant(op.operationId),
        picks: fc.array(fc.nat(), { minLength: pathCount, maxLength: pathCount }),
        query,
        body: op.requestBody?.required ? body : fc.option(body, { nil: undefined }),
        extras: extrasArbitrary,
      });
    }),
  );
}

/** Keeps the world current from an answer: what a create made, what a delete removed. */
function learn(world: World, op: DocumentOperation, built: Built, res: TestResponse): void {
  const { resources } = world;
  if (res.status === 201 && typeof res.body?.id === 'string') {
    const id: string = res.body.id;
    const prefix = id.slice(0, id.indexOf('_'));
    const resource: Resource = { id, ...(typeof res.body.type === 'string' ? { type: res.body.type, direction: res.body.direction } : {}) };
    resources.set(prefix, [...(resources.get(prefix) ?? []), resource]);
  }
  if (op.method === 'DELETE' && res.status < 300) {
    const id = decodeURIComponent(built.path.split('/')[3]!);
    const prefix = id.slice(0, id.indexOf('_'));
    resources.set(prefix, (resources.get(prefix) ?? []).filter((r) => r.id !== id));
    if (prefix === 'whk') resources.set('dlv', (resources.get('dlv') ?? []).filter((d) => d.subscription_id !== id));
  }
}

/**
 * Field error codes that say a body does not fit its schema. A body the document accepts must
 * never be refused with one of them: that would be the document and the server disagreeing.
 */
const SHAPE_CODES = new Set(['required', 'unknown_field', 'read_only', 'type', 'enum', 'invalid', 'too_short', 'too_long', 'pattern', 'format', 'out_of_range', 'duplicate']);

describe.each(ADAPTERS)('every route, generated from the OpenAPI document [%s]', (adapter: AdapterName) => {
  let api: TestApi;
  let doc: OpenApiDocument;
  let ops: DocumentOperation[];
  let byId: Map<string, DocumentOperation>;
  let check: ReturnType<typeof answerChecker>;
  let receiver: WebhookReceiver;
  let world: World;
  let messages = 0;

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    world = { resources: new Map(), hooks: receiver.url };
    // The limiter is tested on its own; here it would only turn the bulk of the cases into 429s.
    // Webhooks go to the loopback receiver, which the outbound policy lets through.
    api = await startApi({ adapter, storage: 'sqlite', httpOptions: { rateLimit: false, ingestRateLimit: false }, outboundAllow: ['127.0.0.1'] });
    // Read as a client reads it: over HTTP.
    doc = (await api.request('GET', '/v2/openapi.json', { key: null })).body as OpenApiDocument;
    ops = documentOperations(doc);
    byId = new Map(ops.map((op) => [op.operationId, op]));
    check = answerChecker(doc);
    const add = (prefix: string, resource: Resource) => world.resources.set(prefix, [...(world.resources.get(prefix) ?? []), resource]);
    for (const [type, direction, config] of [
      ['postgres', 'source', { host: 'db.example.com', password: 'pw-source' }],
      ['postgres', 'destination', { host: 'db.example.com', password: 'pw-destination' }],
      ['webhook', 'source', {}],
      ['webhook', 'bidirectional', {}],
      ['webhook', 'destination', { url: 'https://hooks.example.com/out' }],
    ] as const) {
      const connector = await createConnector(api, { type, direction, config });
      add('con', { id: connector.id, type, direction });
    }
    const at = new Date(api.clock.now()).toISOString();
    // A draft streaming pipeline, an active scheduled one (it takes manual runs) and a draft scheduled one.
    for (const extra of [{}, { schedule: '*/5 * * * *', activate: true }, { schedule: '0 * * * *' }]) {
      const pipeline = await createPipeline(api, extra);
      add('pip', { id: pipeline.id });
      add('con', { id: pipeline.source_connector_id, type: 'postgres', direction: 'source' });
      add('con', { id: pipeline.destination_connector_id, type: 'postgres', direction: 'destination' });
      const events = await insertEvents(api, pipeline.id, [{ occurred_at: at, status: 'dead_lettered' }, { occurred_at: at, status: 'dead_lettered' }, { occurred_at: at }]);
      for (const event of events) add('evt', { id: event.id });
      // Backfills to read and cancel (the suite's sources cannot be asked for one: those answer 422).
      for (const state of ['queued', 'running', 'succeeded'] as const) add('bfl', { id: (await insertBackfill(api, pipeline.id, state)).id });
    }
    // Four subscriptions: drawn deletes must not leave the delivery routes nothing to name.
    for (let i = 0; i < 4; i++) {
      const webhook = await createWebhook(api, { url: `${receiver.url}/seed-${i}`, events: ['pipeline.created', 'pipeline.failed'] });
      add('whk', { id: webhook.id });
      for (const status of ['failed', 'failed', 'delivered'] as const) {
        const delivery = await insertDelivery(api, webhook.id, status);
        add('dlv', { id: delivery.id, subscription_id: webhook.id });
      }
    }
  });
  afterAll(async () => {
    await api?.close();
    await receiver?.close();
  });

  const opOf = (draw: Draw): DocumentOperation => byId.get(draw.operationId)!;

  /** Sends a built request: JSON with its content type, an ingest signed for its connector over the bytes sent. */
  async function send(op: DocumentOperation, built: Built, body: string | Buffer | undefined = built.body): Promise<TestResponse> {
    const headers: Record<string, string> = {};
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (built.ingest !== undefined) {
      // A connector that does not exist has no secret: any will do, the answer is 404 before the signature.
      const secret = await api.engine.connectors.signingSecret('default', built.ingest).then((s) => s.signing_secret, () => generateWebhookSecret());
      Object.assign(headers, signedHeaders(secret, body ?? '', Math.floor(api.clock.now() / 1000), `msg_${++messages}`));
    }
    return api.request(op.method, built.path + queryString(built.query), { ...(body !== undefined ? { raw: body } : {}), headers });
  }

  /** Sends one drawn request, checks its answer against the document, and learns the ids it made. */
  async function exchange(draw: Parameters<typeof opOf>[0]) {
    const op = opOf(draw);
    const built = build(op, draw, world);
    const res = await send(op, built);
    check(op, res, built.what);
    learn(world, op, built, res);
    return { op, built, res };
  }

  it(`answers ${VALID_RUNS} valid requests over every route as the document says`, async () => {
    const statuses = new Map<string, Set<number>>();
    await fc.assert(
      fc.asyncProperty(drawArbitrary(doc, ops), async (draw) => {
        const { op, res } = await exchange(draw);
        statuses.set(op.operationId, (statuses.get(op.operationId) ?? new Set()).add(res.status));
      }),
      { numRuns: VALID_RUNS, seed: SEED },
    );
    // Every operation was reached, and nearly all answered a success: valid requests reach the services.
    const seen = JSON.stringify(Object.fromEntries([...statuses].map(([id, s]) => [id, [...s].sort()])));
    expect([...statuses.keys()].sort(), seen).toEqual(ops.map((op) => op.operationId).sort());
    const succeeded = [...statuses.entries()].filter(([, s]) => [...s].some((status) => status < 300));
    expect(succeeded.length, seen).toBeGreaterThanOrEqual(ops.length - 2);
  });

  /**
   * What the document accepts, the server accepts: a refusal of a valid request is for a rule
   * the schema cannot state (a reference, a state, a pattern that does not compile), never for
   * the body's or the query's shape.
   */
  it('never refuses a valid request for its shape', async () => {
    await fc.assert(
      fc.asyncProperty(drawArbitrary(doc, ops), async (draw) => {
        const { built, res } = await exchange(draw);
        const shape = ((res.body?.errors ?? []) as Array<{ pointer: string; code: string }>).filter((e) => SHAPE_CODES.has(e.code));
        expect(shape, `${built.what} -> ${res.status} ${res.text.slice(0, 400)}`).toEqual([]);
      }),
      { numRuns: SHAPE_RUNS, seed: SEED + 5 },
    );
  });

  describe('a valid request with one documented defect gets the documented refusal', () => {
    /** Sends a defective request and checks it got `status` and `code`, with a field error of `fieldCode` when given. */
    async function expectRefusal(op: DocumentOperation, built: Built, body: string | Buffer | undefined, code: string, fieldCode?: string): Promise<void> {
      const what = describeRequest(op, built, body);
      const res = await send(op, built, body);
      check(op, res, what);
      expect({ status: res.status, code: res.body?.code }, `${what} -> ${res.status} ${res.text.slice(0, 400)}`).toEqual({ status: 400, code });
      if (fieldCode !== undefined) expect(res.body.errors.map((e: { code: string }) => e.code), `${what} -> ${res.text.slice(0, 400)}`).toContain(fieldCode);
    }

    /**
     * The CESU-8 bytes of a lone surrogate in a query value: 400 `invalid_character` at the
     * parameter's pointer, whatever the route (docs/api.md, Characters no storage keeps).
     */
    it('a lone surrogate in a query value', async () => {
      const hex = (n: number) => n.toString(16).toUpperCase();
      const surrogate = fc
        .tuple(fc.integer({ min: 0xa0, max: 0xbf }), fc.integer({ min: 0x80, max: 0xbf }), textArbitrary(0, 3), textArbitrary(0, 3))
        .map(([b2, b3, before, after]) => `${encodeURIComponent(before)}%ED%${hex(b2)}%${hex(b3)}${encodeURIComponent(after)}`);
      await fc.assert(
        fc.asyncProperty(drawArbitrary(doc, ops, false), surrogate, fc.nat(), async (draw, raw, n) => {
          const op = opOf(draw);
          const built = build(op, draw, world, false);
          const names = op.parameters.filter((p) => p.in === 'query').map((p) => p.name);
          const name = names.length > 0 ? chosen(names, n) : 'type';
          // The defect replaces the parameter's value, so it is the query's only problem; it goes
          // on the path as is, escapes and all.
          const rest = built.query.filter(([k]) => k !== name);
          const defective: Built = { ...built, query: [], path: `${built.path}${queryString(rest)}${rest.length > 0 ? '&' : '?'}${name}=${raw}` };
          await expectRefusal(op, defective, built.body, 'invalid_character', 'invalid_character');
        }),
        { numRuns: DEFECT_RUNS, seed: SEED + 1 },
      );
    });

    /**
     * Bytes that are not UTF-8 inside a string of the body: 400 `invalid_encoding`, or
     * `invalid_character` for a surrogate's bytes; never decoded with replacement characters
     * (docs/api.md, Bodies). Ingest bodies are signed as sent, so the signature holds and the
     * rule is reached there too.
     */
    it('bytes that are not UTF-8 in the body', async () => {
      const bad = fc.constantFrom(
        { bytes: [0xff], code: 'invalid_encoding' },
        { bytes: [0xc0, 0xaf], code: 'invalid_encoding' },
        { bytes: [0xe2, 0x82], code: 'invalid_encoding' },
        { bytes: [0x80], code: 'invalid_encoding' },
        { bytes: [0xf4, 0x90, 0x80, 0x80], code: 'invalid_encoding' },
        { bytes: [0xed, 0xa0, 0x80], code: 'invalid_character' },
      );
      const readers = ops.filter((op) => op.requestBody !== undefined);
      await fc.assert(
        fc.asyncProperty(drawArbitrary(doc, readers, false), bad, async (draw, defect) => {
          const op = opOf(draw);
          const built = build(op, draw, world, false);
          // Inside the first string of the body (a key or a value), or in a key of its own.
          const text = built.body !== undefined && built.body.includes('"') ? built.body : '{"note":1}';
          const at = text.indexOf('"') + 1;
          const body = Buffer.concat([Buffer.from(text.slice(0, at)), Buffer.from(defect.bytes), Buffer.from(text.slice(at))]);
          await expectRefusal(op, built, body, defect.code);
        }),
        { numRuns: DEFECT_RUNS, seed: SEED + 2 },
      );
    });

    /**
     * A timestamp on a day the calendar does not have (`2026-02-30`), in a filter or a body:
     * 400 `validation_failed` with the field error `format` (docs/api.md, Lists; Ingest).
     */
    it('a date the calendar does not have', async () => {
      const impossible = fc
        .record({
          year: fc.integer({ min: 1970, max: 2100 }),
          day: fc.constantFrom('02-30', '02-31', '04-31', '06-31', '09-31', '11-31', '13-01', '00-10', '01-32', '01-00'),
          time: fc.constantFrom('T00:00:00Z', 'T12:30:00.000Z', 'T23:59:59+02:00'),
        })
        .map(({ year, day, time }) => `${year}-${day}${time}`);
      const nonLeap = fc.integer({ min: 1970, max: 2100 }).filter((y) => y % 4 !== 0 || (y % 100 === 0 && y % 400 !== 0)).map((y) => `${y}-02-29T00:00:00Z`);
      const timed = new Set(['listEvents', 'listDeliveries', 'recoverDeliveries', 'replayEvents', 'ingestEvents']);
      await fc.assert(
        fc.asyncProperty(drawArbitrary(doc, ops.filter((op) => timed.has(op.operationId)), false), fc.oneof(impossible, nonLeap), fc.nat(), async (draw, date, n) => {
          const op = opOf(draw);
          const built = build(op, draw, world, false);
          const body = built.body === undefined ? {} : (JSON.parse(built.body) as Body);
          let defective: Built;
          if (op.method === 'GET') {
            const name = chosen(op.parameters.filter((p) => p.in === 'query' && p.schema.format === 'date-time').map((p) => p.name), n);
            defective = { ...built, query: [...built.query.filter(([k]) => k !== name), [name, date]] };
          } else if (op.operationId === 'ingestEvents') {
            chosen(Array.isArray(body.events) ? (body.events as Body[]) : [body], n).occurred_at = date;
            defective = { ...built, body: JSON.stringify(body) };
          } else {
            defective = { ...built, body: JSON.stringify({ ...body, [n % 2 === 0 || !('until' in body) ? 'since' : 'until']: date }) };
          }
          await expectRefusal(op, defective, defective.body, 'validation_failed', 'format');
        }),
        { numRuns: DEFECT_RUNS, seed: SEED + 3 },
      );
    });

    /**
     * A body nested deeper than 64 levels, up to thousands: 400 `validation_failed` with the
     * field code `too_deep`, counted on the text before anything parses it, ingest included
     * (docs/api.md, Bodies).
     */
    it('a body nested deeper than 64 levels', async () => {
      const depth = fc.oneof(fc.integer({ min: 64, max: 100 }), fc.integer({ min: 1000, max: 20_000 }));
      const readers = ops.filter((op) => op.requestBody !== undefined);
      await fc.assert(
        fc.asyncProperty(drawArbitrary(doc, readers, false), depth, fc.boolean(), async (draw, levels, arrays) => {
          const op = opOf(draw);
          const built = build(op, draw, world, false);
          const nested = arrays ? `${'['.repeat(levels)}1${']'.repeat(levels)}` : `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
          const body = built.body === undefined ? {} : (JSON.parse(built.body) as Body);
          // Ingest: in an event's payload, where a sender's data goes; elsewhere in a field of the body.
          // The marker is a string no generated text holds (a control character).
          if (op.operationId === 'ingestEvents') (Array.isArray(body.events) ? (body.events as Body[]) : [body])[0]!.payload = { deep: '\u0001' };
          else body.deep = '\u0001';
          const text = JSON.stringify(body).replace('"\\u0001"', nested);
          await expectRefusal(op, built, text, 'validation_failed', 'too_deep');
        }),
        { numRuns: DEFECT_RUNS, seed: SEED + 4 },
      );
    });
  });
});

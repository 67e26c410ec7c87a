/**
 * Adapter parity: one scripted sequence of requests (successes and errors) against Express and
 * against Fastify, each on a fresh engine with the same virtual clock start. Status, the headers
 * that matter and bodies must be equal once generated values (ids, timestamps, cursors, secrets,
 * generated request ids) are replaced by placeholders in order of appearance.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { VirtualClock } from '@ferry/testing';
import { CLOCK_START_MS, signedHeaders, startApi, type AdapterName, type StorageName, type TestApi } from './harness.js';

const HEADERS = ['content-type', 'x-request-id', 'ratelimit-policy', 'ratelimit', 'retry-after', 'www-authenticate', 'allow', 'location', 'cache-control', 'idempotent-replayed'];
const INGEST_SECRET = `whsec_${Buffer.alloc(32, 5).toString('base64')}`;

interface Exchange {
  step: string;
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Replaces generated values by `<kind:n>`, numbered by first appearance across the transcript. */
class Normalizer {
  private readonly seen = new Map<string, string>();
  private readonly counts = new Map<string, number>();
  private readonly patterns: Array<[string, RegExp]> = [
    ['id', /\b(?:con|pip|evt|run|whk|dlv|key|att)_[0-9A-HJKMNP-TV-Z]{26}\b/g],
    ['time', /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z/g],
    ['secret', /whsec_[A-Za-z0-9+/]+={0,2}/g],
    ['uuid', /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi],
  ];

  private placeholder(kind: string, value: string): string {
    const known = this.seen.get(value);
    if (known) return known;
    const n = (this.counts.get(kind) ?? 0) + 1;
    this.counts.set(kind, n);
    const p = `<${kind}:${n}>`;
    this.seen.set(value, p);
    return p;
  }

  text(input: string): string {
    // Cursors first: they are opaque strings only recognisable by where they sit.
    let out = input.replace(/"next_cursor":"([^"]+)"/g, (_m, c: string) => `"next_cursor":"${this.placeholder('cursor', c)}"`);
    for (const [kind, re] of this.patterns) out = out.replace(re, (m) => this.placeholder(kind, m));
    return out;
  }
}

async function script(api: TestApi, clock: VirtualClock): Promise<Exchange[]> {
  const norm = new Normalizer();
  const out: Exchange[] = [];
  const state: Record<string, string> = {};
  const step = async (name: string, method: string, path: string, opts: Parameters<TestApi['request']>[2] = {}) => {
    const res = await api.request(method, path, opts);
    const headers: Record<string, string> = {};
    for (const h of HEADERS) if (res.headers[h] !== undefined) headers[h] = norm.text(res.headers[h]!);
    out.push({ step: name, status: res.status, headers, body: norm.text(res.text) });
    return res;
  };
  const readKey = await api.key(['read']);
  const smallKey = await api.key(['write'], 'default', { requests: 3, per_seconds: 60 });
  const pg = (host: string) => ({ type: 'postgres', direction: 'source', config: { host, password: 'pw-parity-1234' } });

  state.src = (await step('create source', 'POST', '/v2/connectors', { body: { name: 'src', ...pg('a.example.com') }, headers: { 'idempotency-key': 'parity-1' } })).body.id;
  await step('replay create', 'POST', '/v2/connectors', { body: { name: 'src', ...pg('a.example.com') }, headers: { 'idempotency-key': 'parity-1' } });
  await step('reuse idempotency key', 'POST', '/v2/connectors', { body: pg('b.example.com'), headers: { 'idempotency-key': 'parity-1' } });
  state.dst = (await step('create destination', 'POST', '/v2/connectors', { body: { type: 'postgres', direction: 'destination', config: { host: 'c.example.com', password: 'pw-parity-5678' } } })).body.id;
  await step('bidirectional postgres', 'POST', '/v2/connectors', { body: { ...pg('d'), direction: 'bidirectional' } });
  await step('malformed json', 'POST', '/v2/connectors', { raw: '{"type":', headers: { 'content-type': 'application/json' } });
  await step('wrong content type', 'POST', '/v2/connectors', { raw: JSON.stringify(pg('e')), headers: { 'content-type': 'text/plain' } });
  await step('oversized body', 'POST', '/v2/connectors', { raw: JSON.stringify({ name: 'x'.repeat(1024 * 1024 + 10) }), headers: { 'content-type': 'application/json' } });
  await step('unknown and read-only fields', 'POST', '/v2/connectors', { body: { ...pg('f'), id: 'con_x', bogus: true } });
  const page = await step('list page 1', 'GET', '/v2/connectors?limit=1');
  await step('list page 2', 'GET', `/v2/connectors?limit=1&cursor=${encodeURIComponent(page.body.next_cursor)}`);
  await step('bad limit', 'GET', '/v2/connectors?limit=0');
  await step('tampered cursor', 'GET', '/v2/connectors?cursor=not-a-cursor');
  await step('get connector', 'GET', `/v2/connectors/${state.src}`, { headers: { 'x-request-id': 'parity-req-1' } });
  await step('patch connector', 'PATCH', `/v2/connectors/${state.src}`, { body: { name: 'renamed', config: { database: 'db' } } });
  await step('check connector', 'POST', `/v2/connectors/${state.src}/check`);
  state.pip = (await step('create pipeline', 'POST', '/v2/pipelines', { body: { name: 'orders', source_connector_id: state.src, destination_connector_id: state.dst, transforms: [{ type: 'mask', path: 'email' }] } })).body.id;
  await step('name taken', 'POST', '/v2/pipelines', { body: { name: 'orders', source_connector_id: state.src, destination_connector_id: state.dst } });
  await step('invalid reference', 'POST', '/v2/pipelines', { body: { name: 'x', source_connector_id: 'con_01JZZZZZZZZZZZZZZZZZZZZZZZ', destination_connector_id: state.dst } });
  await step('invalid schedule', 'POST', '/v2/pipelines', { body: { name: 'y', source_connector_id: state.src, destination_connector_id: state.dst, schedule: 'often' } });
  await step('list pipelines', 'GET', '/v2/pipelines?state=draft');
  await step('activate', 'POST', `/v2/pipelines/${state.pip}/activate`);
  await step('activate again', 'POST', `/v2/pipelines/${state.pip}/activate`);
  await step('run streaming', 'POST', `/v2/pipelines/${state.pip}/runs`);
  await step('set schedule', 'PATCH', `/v2/pipelines/${state.pip}`, { body: { schedule: '0 * * * *' } });
  await step('run now', 'POST', `/v2/pipelines/${state.pip}/runs`);
  await step('list runs', 'GET', `/v2/pipelines/${state.pip}/runs`);
  await step('pause', 'POST', `/v2/pipelines/${state.pip}/pause`);
  await step('list events', 'GET', `/v2/pipelines/${state.pip}/events?since=2026-01-01T00:00:00Z`);
  await step('bulk replay', 'POST', `/v2/pipelines/${state.pip}/events/replay`, { body: {} });
  await step('replay unknown event', 'POST', '/v2/events/evt_01JZZZZZZZZZZZZZZZZZZZZZZZ/replay');
  state.whk = (await step('create webhook', 'POST', '/v2/webhooks', { body: { url: 'https://hooks.example.com/x', events: ['pipeline.failed'], secret: INGEST_SECRET } })).body.id;
  await step('get webhook', 'GET', `/v2/webhooks/${state.whk}`);
  await step('get webhook secret', 'GET', `/v2/webhooks/${state.whk}/secret`);
  await step('http webhook url', 'POST', '/v2/webhooks', { body: { url: 'http://hooks.example.com/x', events: ['pipeline.failed'] } });
  await step('patch webhook', 'PATCH', `/v2/webhooks/${state.whk}`, { body: { enabled: false } });
  await step('list deliveries', 'GET', `/v2/webhooks/${state.whk}/deliveries`);
  await step('unknown delivery', 'GET', `/v2/webhooks/${state.whk}/deliveries/dlv_01JZZZZZZZZZZZZZZZZZZZZZZZ`);
  await step('recover', 'POST', `/v2/webhooks/${state.whk}/recover`, { body: { since: '2026-11-01T00:00:00.000Z' } });
  await step('unknown route', 'GET', '/v2/nothing-here');
  await step('wrong method', 'DELETE', '/v2/connectors');
  await step('no key', 'GET', '/v2/connectors', { key: null });
  await step('garbled key', 'GET', '/v2/connectors', { key: 'fry_garbage' });
  await step('read key writes', 'POST', '/v2/connectors', { key: readKey, body: pg('g') });
  for (let i = 1; i <= 4; i++) await step(`small key ${i}`, 'GET', '/v2/webhooks', { key: smallKey });
  await clock.advance(20_000);
  await step('small key refilled', 'GET', '/v2/webhooks', { key: smallKey });
  state.hook = (await step('webhook source', 'POST', '/v2/connectors', { body: { type: 'webhook', direction: 'source', config: { signing_secret: INGEST_SECRET } } })).body.id;
  const raw = JSON.stringify({ type: 'order.created', occurred_at: '2026-11-22T09:00:00.000Z', payload: { n: 1 } });
  const ts = Math.floor(api.clock.now() / 1000);
  await step('ingest', 'POST', `/v2/ingest/${state.hook}`, { key: null, raw, headers: { 'content-type': 'application/json', ...signedHeaders(INGEST_SECRET, raw, ts, 'msg_parity') } });
  await step('ingest unsigned', 'POST', `/v2/ingest/${state.hook}`, { key: null, raw, headers: { 'content-type': 'application/json' } });
  await step('delete pipeline', 'DELETE', `/v2/pipelines/${state.pip}`);
  await step('delete connector', 'DELETE', `/v2/connectors/${state.dst}`);
  await step('get deleted', 'GET', `/v2/connectors/${state.dst}`);
  return out;
}

const storages: StorageName[] = (process.env.FERRY_HTTP_MATRIX ?? '').includes('postgres') ? ['sqlite', 'postgres'] : ['sqlite'];

describe.each(storages)('adapter parity [%s]', (storage) => {
  const apis: TestApi[] = [];
  afterAll(async () => {
    await Promise.all(apis.map((a) => a.close()));
  });

  it('express and fastify answer a scripted sequence identically', async () => {
    const transcripts: Partial<Record<AdapterName, Exchange[]>> = {};
    for (const adapter of ['express', 'fastify'] as const) {
      const clock = new VirtualClock(CLOCK_START_MS);
      const api = await startApi({ adapter, storage, clock });
      apis.push(api);
      transcripts[adapter] = await script(api, clock);
    }
    const [e, f] = [transcripts.express!, transcripts.fastify!];
    expect(e.length).toBeGreaterThanOrEqual(40);
    // Compare step by step so a failure names the first step that differs.
    for (let i = 0; i < e.length; i++) expect({ fastify: f[i] }, e[i]!.step).toEqual({ fastify: e[i] });
    // The script exercised both successes and errors.
    expect([...new Set(e.map((x) => x.status))].sort()).toEqual(expect.arrayContaining([200, 201, 202, 204, 400, 401, 403, 404, 405, 409, 413, 415, 422, 429]));
  });
});

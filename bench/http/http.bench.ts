/**
 * The /v2 API is what hosts put in front of their users, so its per-request overhead on top of
 * the framework it is mounted on matters. This measures requests/s with autocannon (10
 * connections, a 1 s warm-up run discarded, then 5 s measured) of:
 *  - `GET /v2/pipelines/{id}` (API key lookup, route match, one pipeline read, JSON answer) and
 *  - `POST /v2/connectors` (API key lookup, body read and validation, a webhook source connector
 *    with a generated, encrypted signing secret written per request)
 * through the Fastify adapter and the Express adapter, each on its own engine on a SQLite file
 * (WAL) with the per-key rate limit off, against bare routes of the same framework that answer
 * the same JSON (captured once from the API) with no engine behind them: the GET baseline just
 * serializes the pipeline, the POST baseline lets the framework parse the JSON body and answers
 * the captured connector with 201. The goal is each Ferry case at >= 60% of bare Fastify, hence
 * the extra "vs bare fastify" lines.
 *
 * The load generator runs in a worker thread of this process, so client and server share the
 * machine's cores (2 in CI): absolute numbers are low and noisy, the ratios are what to compare.
 * Any non-2xx answer or connection error fails the run, since a benchmark of error answers
 * measures nothing. Bounded: 8 runs of 6 s, under a minute and a half in all.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import express from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import { createEngine, generateSecretKey, sqliteStorage, type Engine } from '@ferry/core';
import { ferryRouter } from '@ferry/express';
import { ferryPlugin } from '@ferry/fastify';
import type { HttpApiOptions } from '@ferry/http';
import { listenLoopback } from '@ferry/testing';
import { webhook } from '@ferry/webhook';
import { emit } from '../emit.js';

const CONNECTIONS = 10;
const WARMUP_SECONDS = 1;
const MEASURE_SECONDS = 5;
/** The throttle would turn most of a saturating run into 429s; the benchmark is about the API's own cost. */
const HTTP_OPTIONS: HttpApiOptions = { rateLimit: false };
const SOURCE_CONNECTOR = JSON.stringify({ type: 'webhook', direction: 'source', config: {} });

/** A server listening on 127.0.0.1 and a free port. */
interface Listening {
  url: string;
  close(): Promise<void>;
}

/** One load: what autocannon sends. */
interface Load {
  method: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

async function listenFastify(app: FastifyInstance): Promise<Listening> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, close: () => app.close() };
}

/**
 * Runs autocannon once for `seconds` and returns its mean requests/s. Throws on any non-2xx
 * answer, connection error or timeout, so error answers are never reported as throughput.
 */
async function cannon(label: string, base: string, load: Load, seconds: number): Promise<number> {
  const result = await autocannon({
    url: base + load.path,
    method: load.method,
    headers: load.headers ?? {},
    ...(load.body !== undefined ? { body: load.body } : {}),
    connections: CONNECTIONS,
    duration: seconds,
    // The client in its own thread, so it does not share the server's event loop: sharing it
    // would add the client's fixed cost to both sides and flatten every ratio toward 1.
    workers: 1,
  });
  if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0 || result['2xx'] === 0) {
    throw new Error(
      `${label}: ${result['2xx']} 2xx, ${result.non2xx} non-2xx (4xx ${result['4xx']}, 5xx ${result['5xx']}), ` +
        `${result.errors} errors, ${result.timeouts} timeouts: a benchmark of failures is worthless`,
    );
  }
  return result.requests.average;
}

/** A discarded warm-up run (JIT, caches, SQLite pages), then the measured one. */
async function measure(label: string, base: string, load: Load): Promise<number> {
  await cannon(`${label} (warm-up)`, base, load, WARMUP_SECONDS);
  globalThis.gc?.();
  return cannon(label, base, load, MEASURE_SECONDS);
}

/** Sends one request to set up or capture data; fails unless the status is the expected one. */
async function call(base: string, key: string, method: 'GET' | 'POST', path: string, body: string | undefined, expected: number): Promise<Record<string, unknown>> {
  const res = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body } : {}),
  });
  const text = await res.text();
  if (res.status !== expected) throw new Error(`${method} ${path}: expected ${expected}, got ${res.status}: ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/** One engine behind one adapter, with a key, and a pipeline created through the API. */
interface FerryTarget {
  engine: Engine;
  server: Listening;
  key: string;
  pipelineId: string;
  pipeline: Record<string, unknown>;
  connector: Record<string, unknown>;
}

async function startFerry(adapter: 'fastify' | 'express', dir: string): Promise<FerryTarget> {
  const engine = await createEngine({
    storage: sqliteStorage({ filename: join(dir, `${adapter}.db`) }),
    secretKey: generateSecretKey(),
    plugins: [webhook()],
  });
  await engine.start();
  let server: Listening;
  try {
    if (adapter === 'fastify') {
      const app = Fastify({ logger: false });
      await app.register(ferryPlugin, { engine, ...HTTP_OPTIONS });
      server = await listenFastify(app);
    } else {
      const app = express();
      app.use(ferryRouter(engine, HTTP_OPTIONS));
      server = await listenLoopback(app);
    }
  } catch (error) {
    await engine.stop();
    throw error;
  }
  // No rate_limit of its own: the API's default applies, which HTTP_OPTIONS turned off.
  const { key } = await engine.apiKeys.create({ scopes: ['write'] });
  const connector = await call(server.url, key, 'POST', '/v2/connectors', SOURCE_CONNECTOR, 201);
  const destination = await call(
    server.url, key, 'POST', '/v2/connectors',
    JSON.stringify({ type: 'webhook', direction: 'destination', config: { url: 'https://hooks.example.com/ferry-bench' } }), 201,
  );
  const created = await call(
    server.url, key, 'POST', '/v2/pipelines',
    JSON.stringify({ name: `bench-${adapter}`, source_connector_id: connector.id, destination_connector_id: destination.id }), 201,
  );
  const pipelineId = String(created.id);
  const pipeline = await call(server.url, key, 'GET', `/v2/pipelines/${pipelineId}`, undefined, 200);
  return { engine, server, key, pipelineId, pipeline, connector };
}

/** Bare Fastify: the same answers, from memory, through Fastify's own JSON parsing and serializing. */
async function startBareFastify(pipeline: unknown, connector: unknown): Promise<Listening> {
  const app = Fastify({ logger: false });
  app.get('/pipeline', async () => pipeline);
  app.post('/connectors', async (request, reply) => {
    // Touch the parsed body, as any real handler would; a wrong body fails the run as a 400.
    if ((request.body as { type?: unknown } | undefined)?.type !== 'webhook') return reply.code(400).send({ error: 'bad body' });
    return reply.code(201).send(connector);
  });
  return listenFastify(app);
}

/** Bare Express: the same answers, from memory, through `express.json()` and `res.json`. */
async function startBareExpress(pipeline: unknown, connector: unknown): Promise<Listening> {
  const app = express();
  app.get('/pipeline', (_req, res) => void res.json(pipeline));
  app.post('/connectors', express.json(), (req, res) => {
    if ((req.body as { type?: unknown } | undefined)?.type !== 'webhook') return void res.status(400).json({ error: 'bad body' });
    res.status(201).json(connector);
  });
  return listenLoopback(app);
}

const dir = mkdtempSync(join(tmpdir(), 'ferry-bench-http-'));
const fastifyFerry = await startFerry('fastify', dir);
const expressFerry = await startFerry('express', dir);
// Captured once through the API, so the baselines answer byte-for-byte comparable JSON.
const bareFastify = await startBareFastify(fastifyFerry.pipeline, fastifyFerry.connector);
const bareExpress = await startBareExpress(fastifyFerry.pipeline, fastifyFerry.connector);

try {
  const jsonPost = { 'content-type': 'application/json' };
  const bearer = (target: FerryTarget) => ({ authorization: `Bearer ${target.key}` });

  const bareFastifyGet = await measure('bare fastify GET', bareFastify.url, { method: 'GET', path: '/pipeline' });
  const bareExpressGet = await measure('bare express GET', bareExpress.url, { method: 'GET', path: '/pipeline' });
  const fastifyGet = await measure('fastify GET', fastifyFerry.server.url, { method: 'GET', path: `/v2/pipelines/${fastifyFerry.pipelineId}`, headers: bearer(fastifyFerry) });
  const expressGet = await measure('express GET', expressFerry.server.url, { method: 'GET', path: `/v2/pipelines/${expressFerry.pipelineId}`, headers: bearer(expressFerry) });

  const bareFastifyPost = await measure('bare fastify POST', bareFastify.url, { method: 'POST', path: '/connectors', headers: jsonPost, body: SOURCE_CONNECTOR });
  const bareExpressPost = await measure('bare express POST', bareExpress.url, { method: 'POST', path: '/connectors', headers: jsonPost, body: SOURCE_CONNECTOR });
  const fastifyPost = await measure('fastify POST', fastifyFerry.server.url, { method: 'POST', path: '/v2/connectors', headers: { ...jsonPost, ...bearer(fastifyFerry) }, body: SOURCE_CONNECTOR });
  const expressPost = await measure('express POST', expressFerry.server.url, { method: 'POST', path: '/v2/connectors', headers: { ...jsonPost, ...bearer(expressFerry) }, body: SOURCE_CONNECTOR });

  for (const [what, bareF, bareE, ferryF, ferryE] of [
    ['GET (pipeline JSON)', bareFastifyGet, bareExpressGet, fastifyGet, expressGet],
    ['POST (parse JSON, 201 connector JSON)', bareFastifyPost, bareExpressPost, fastifyPost, expressPost],
  ] as const) {
    const route = what.startsWith('GET') ? 'GET /v2/pipelines/{id}' : 'POST /v2/connectors';
    emit('http', `bare fastify ${what}`, bareF, 'req/s');
    emit('http', `bare express ${what}`, bareE, 'req/s');
    emit('http', `fastify ${route}`, ferryF, 'req/s', bareF);
    emit('http', `express ${route}`, ferryE, 'req/s', bareE);
    emit('http', `fastify ${route} vs bare fastify`, ferryF, 'req/s', bareF);
    emit('http', `express ${route} vs bare fastify`, ferryE, 'req/s', bareF);
  }
} finally {
  await bareFastify.close();
  await bareExpress.close();
  for (const target of [fastifyFerry, expressFerry]) {
    await target.server.close();
    await target.engine.stop();
  }
  rmSync(dir, { recursive: true, force: true });
}

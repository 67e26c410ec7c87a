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
 * A third baseline does the same work as the API with none of it: Fastify and better-sqlite3
 * on the same database file, checking the key the same way (the token's shape, the key row by
 * its key id, SHA-256 of the secret compared in constant time) and then, for the GET, reading
 * the pipeline and its newest run; for the POST, validating the body's fields, generating a
 * signing secret, sealing it with AES-256-GCM and inserting the connector row. The goal
 * is the API at >= 0.8 of it: the "vs bare fastify + sqlite" lines.
 *
 * The load generator runs in a worker thread of this process, so client and server share the
 * machine's cores (2 in CI): absolute numbers are low and noisy, the ratios are what to compare.
 * Any non-2xx answer or connection error fails the run, since a benchmark of error answers
 * measures nothing. Bounded: 10 runs of 6 s, about a minute and a half in all.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCipheriv, createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import autocannon from 'autocannon';
import Database from 'better-sqlite3';
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

const TOKEN = /^fry_([0-9A-Za-z]{8})_([0-9A-Za-z]{32})([0-9A-Za-z]{6})$/;

/**
 * Bare Fastify doing the API's work on the same SQLite file (see the header): the key check, then
 * the pipeline and its newest run, or a connector with a sealed generated secret written.
 */
async function startBareSqlite(filename: string): Promise<Listening> {
  const db = new Database(filename);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  db.pragma('foreign_keys = ON');
  // The connectors table's twin, with its primary key and indexes: the same pages change per insert.
  for (const { sql } of db.prepare("select sql from sqlite_master where tbl_name = 'connectors' and sql is not null").all() as { sql: string }[]) {
    db.exec(sql.replaceAll('`connectors', '`bare_connectors').replace(/\bconnectors\b/g, 'bare_connectors'));
  }
  const keyRow = db.prepare('select * from api_keys where key_id = ?');
  const pipelineRow = db.prepare('select * from pipelines where workspace_id = ? and id = ? and deleted_at is null');
  const newestRun = db.prepare('select * from runs where pipeline_id = ? order by id desc limit 1');
  const insertConnector = db.prepare(
    'insert into bare_connectors (id, workspace_id, name, type, direction, config, secrets, health, created_at, updated_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const sealKey = randomBytes(32);
  const authorize = (authorization: string | undefined): { workspace_id: string } | undefined => {
    const match = TOKEN.exec(/^Bearer +(\S+) *$/i.exec(authorization ?? '')?.[1] ?? '');
    if (!match) return undefined;
    const key = keyRow.get(match[1]) as { secret_hash: string; workspace_id: string; revoked_at: string | null } | undefined;
    const actual = createHash('sha256').update(match[2]!).digest();
    const same = key !== undefined && timingSafeEqual(actual, Buffer.from(key.secret_hash, 'hex'));
    return same && key.revoked_at === null ? key : undefined;
  };
  const app = Fastify({ logger: false });
  app.get('/v2/pipelines/:id', async (request, reply) => {
    const key = authorize(request.headers.authorization);
    if (!key) return reply.code(401).send({ code: 'unauthenticated' });
    const row = pipelineRow.get(key.workspace_id, (request.params as { id: string }).id) as Record<string, unknown> | undefined;
    if (!row) return reply.code(404).send({ code: 'not_found' });
    return { ...row, transforms: JSON.parse(String(row.transforms)), last_run: newestRun.get(row.id) ?? null };
  });
  app.post('/v2/connectors', async (request, reply) => {
    const key = authorize(request.headers.authorization);
    if (!key) return reply.code(401).send({ code: 'unauthenticated' });
    const body = request.body as { type?: unknown; direction?: unknown; config?: unknown } | undefined;
    if (body?.type !== 'webhook' || body.direction !== 'source' || typeof body.config !== 'object') return reply.code(400).send({ code: 'validation_failed' });
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', sealKey, iv);
    const sealed = Buffer.concat([iv, cipher.update(randomBytes(32)), cipher.final(), cipher.getAuthTag()]).toString('base64');
    const now = new Date().toISOString();
    const id = `con_${randomUUID()}`;
    insertConnector.run(id, key.workspace_id, null, 'webhook', 'source', '{}', JSON.stringify({ signing_secret: sealed }), 'healthy', now, now);
    return reply.code(201).send({ id, name: null, type: 'webhook', direction: 'source', config: { signing_secret: '********' }, health: 'healthy', pipeline_count: 0, created_at: now, updated_at: now });
  });
  const listening = await listenFastify(app);
  return {
    url: listening.url,
    close: async () => {
      await listening.close();
      db.close();
    },
  };
}

const dir = mkdtempSync(join(tmpdir(), 'ferry-bench-http-'));
const fastifyFerry = await startFerry('fastify', dir);
const expressFerry = await startFerry('express', dir);
// Captured once through the API, so the baselines answer byte-for-byte comparable JSON.
const bareFastify = await startBareFastify(fastifyFerry.pipeline, fastifyFerry.connector);
const bareExpress = await startBareExpress(fastifyFerry.pipeline, fastifyFerry.connector);
const bareSqlite = await startBareSqlite(join(dir, 'fastify.db'));

try {
  const jsonPost = { 'content-type': 'application/json' };
  const bearer = (target: FerryTarget) => ({ authorization: `Bearer ${target.key}` });

  const bareFastifyGet = await measure('bare fastify GET', bareFastify.url, { method: 'GET', path: '/pipeline' });
  const bareExpressGet = await measure('bare express GET', bareExpress.url, { method: 'GET', path: '/pipeline' });
  const fastifyGet = await measure('fastify GET', fastifyFerry.server.url, { method: 'GET', path: `/v2/pipelines/${fastifyFerry.pipelineId}`, headers: bearer(fastifyFerry) });
  const expressGet = await measure('express GET', expressFerry.server.url, { method: 'GET', path: `/v2/pipelines/${expressFerry.pipelineId}`, headers: bearer(expressFerry) });
  const bareSqliteGet = await measure('bare fastify + sqlite GET', bareSqlite.url, { method: 'GET', path: `/v2/pipelines/${fastifyFerry.pipelineId}`, headers: bearer(fastifyFerry) });

  const bareFastifyPost = await measure('bare fastify POST', bareFastify.url, { method: 'POST', path: '/connectors', headers: jsonPost, body: SOURCE_CONNECTOR });
  const bareExpressPost = await measure('bare express POST', bareExpress.url, { method: 'POST', path: '/connectors', headers: jsonPost, body: SOURCE_CONNECTOR });
  const fastifyPost = await measure('fastify POST', fastifyFerry.server.url, { method: 'POST', path: '/v2/connectors', headers: { ...jsonPost, ...bearer(fastifyFerry) }, body: SOURCE_CONNECTOR });
  const expressPost = await measure('express POST', expressFerry.server.url, { method: 'POST', path: '/v2/connectors', headers: { ...jsonPost, ...bearer(expressFerry) }, body: SOURCE_CONNECTOR });
  const bareSqlitePost = await measure('bare fastify + sqlite POST', bareSqlite.url, { method: 'POST', path: '/v2/connectors', headers: { ...jsonPost, ...bearer(fastifyFerry) }, body: SOURCE_CONNECTOR });

  for (const [what, bareF, bareE, ferryF, ferryE, bareS] of [
    ['GET (pipeline JSON)', bareFastifyGet, bareExpressGet, fastifyGet, expressGet, bareSqliteGet],
    ['POST (parse JSON, 201 connector JSON)', bareFastifyPost, bareExpressPost, fastifyPost, expressPost, bareSqlitePost],
  ] as const) {
    const route = what.startsWith('GET') ? 'GET /v2/pipelines/{id}' : 'POST /v2/connectors';
    emit('http', `bare fastify ${what}`, bareF, 'req/s');
    emit('http', `bare express ${what}`, bareE, 'req/s');
    emit('http', `fastify ${route}`, ferryF, 'req/s', bareF);
    emit('http', `express ${route}`, ferryE, 'req/s', bareE);
    emit('http', `fastify ${route} vs bare fastify`, ferryF, 'req/s', bareF);
    emit('http', `express ${route} vs bare fastify`, ferryE, 'req/s', bareF);
    emit('http', `bare fastify + sqlite ${what}`, bareS, 'req/s');
    emit('http', `fastify ${route} vs bare fastify + sqlite`, ferryF, 'req/s', bareS);
  }
} finally {
  await bareFastify.close();
  await bareExpress.close();
  await bareSqlite.close();
  for (const target of [fastifyFerry, expressFerry]) {
    await target.server.close();
    await target.engine.stop();
  }
  rmSync(dir, { recursive: true, force: true });
}

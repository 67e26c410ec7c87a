/**
 * Signed ingest (`POST /v2/ingest/{connector_id}`, what a webhook source receives): batches of
 * BENCH_INGEST_EVENTS events (default 100) signed the Standard Webhooks way, sent by
 * BENCH_INGEST_CONCURRENCY loops (default 10) in a process of their own (./ingest-load.ts),
 * each request with a webhook-id of its own, for 5 s after a 1 s warm-up; events/s accepted.
 *
 *  - `sqlite: ingest`: Ferry on Fastify (`ferryPlugin`, the ingest rate limit off) with the
 *    webhook plugin, on a SQLite file (in /dev/shm on Linux, like the other benchmarks):
 *    signature checked, body validated, the events stored durably in the inbox before the 202.
 *    Its baseline: bare Fastify doing the same work with better-sqlite3 on a file of its own:
 *    the HMAC-SHA256 signature checked in constant time, the JSON parsed, and one row per event
 *    inserted in one transaction into a twin of the inbox table (same keys and indexes), then
 *    202 with the count.
 *  - `postgres: ingest`: the same engine on a database of an embedded Postgres (or
 *    DATABASE_URL), the pool at its default (10). Its baseline: bare Fastify with a `pg` pool of
 *    the same size on another database of the same server: the same signature check and parse,
 *    then every row in one multi-row INSERT (autocommit, so one round trip; `ON CONFLICT DO
 *    NOTHING` on the message id, the inbox's dedupe) into a twin of the inbox table, then 202.
 *
 * BENCH_INGEST_CASES (default `sqlite,postgres`) picks the storages. BENCH_INGEST_ROUNDS
 * (default 1) measures bare and Ferry that many times each, alternating, and reports the
 * medians: the machine's speed drifts while a case runs.
 *
 * Goal on the project's 2-core machine (issue 21): at least 50,000 events/s on SQLite and 30,000
 * on Postgres. Client, server (and Postgres) share the two cores, so the figures are low in
 * absolute terms; read the ratio.
 */
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import pg from 'pg';
import { createEngine, generateSecretKey, generateWebhookSecret, postgresStorage, sqliteStorage, webhookSecretBytes, type StorageConfig } from '@ferry/core';
import { ferryPlugin } from '@ferry/fastify';
import { startTestPostgres, type TestPostgres } from '@ferry/test-servers';
import { webhook } from '@ferry/webhook';
import { emit } from '../emit.js';

const EVENTS = Number(process.env.BENCH_INGEST_EVENTS ?? 100);
const CONCURRENCY = Number(process.env.BENCH_INGEST_CONCURRENCY ?? 10);
const CASES = (process.env.BENCH_INGEST_CASES ?? 'sqlite,postgres').split(',').map((c) => c.trim());
const ROUNDS = Math.max(1, Number(process.env.BENCH_INGEST_ROUNDS ?? 1));
const WARMUP_MS = 1_000;
const MEASURE_MS = 5_000;

/** The inbox's twin, the same on both storages but for the sequence's type. */
const twinTable = (seq: string) => `create table webhook_inbox (seq ${seq}, id text not null unique, workspace_id text not null, connector_id text not null,
  message_id text not null, type text not null, occurred_at text not null, payload text not null, received_at text not null, unique (connector_id, message_id))`;
const TWIN_INDEX = 'create index webhook_inbox_connector_id_seq_index on webhook_inbox (connector_id, seq)';

type Ingested = { type: string; payload: unknown; occurred_at?: string };

interface Server {
  url: string;
  close(): Promise<void>;
}

async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

/** Runs the load process once; events/s accepted. */
function load(url: string, secret: string, durationMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(new URL('ingest-load.ts', import.meta.url)), { execArgv: process.execArgv.filter((a) => a !== '--expose-gc') });
    child.once('message', (answer: { perSecond?: number; error?: string }) => (answer.error ? reject(new Error(answer.error)) : resolve(answer.perSecond! * EVENTS)));
    child.once('exit', (code) => code !== 0 && reject(new Error(`the load process exited with ${code}`)));
    child.send({ url, secret, events: EVENTS, concurrency: CONCURRENCY, durationMs });
  });
}

/**
 * events/s of one server; stderr also shows the CPU this process spent per event meanwhile (the
 * server measured is the only one loaded): steadier than events/s when other work shares the
 * machine, and the whole cost on SQLite (on Postgres, the server's processes are not counted).
 */
async function measure(label: string, url: string, secret: string): Promise<number> {
  await load(url, secret, WARMUP_MS);
  const before = process.cpuUsage();
  const perSecond = await load(url, secret, MEASURE_MS);
  const cpu = process.cpuUsage(before);
  const cpuPerEvent = (cpu.user + cpu.system) / (perSecond * (MEASURE_MS / 1000));
  console.error(`${label}: ${Math.round(perSecond)} events/s, ${cpuPerEvent.toFixed(1)} µs of CPU an event`);
  return perSecond;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * A bare Fastify ingest route: the signature checked as Ferry checks it, the body parsed, then
 * `store` with the rows of the inbox (id, workspace, connector, message id, type, occurred_at,
 * payload text, received_at).
 */
async function bareServer(secret: string, store: (rows: unknown[][]) => Promise<void> | void, close: () => Promise<void> | void): Promise<Server> {
  const key = webhookSecretBytes(secret)!;
  const app = Fastify({ logger: false, bodyLimit: 10 * 1024 * 1024 });
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => done(null, body));
  app.post('/v2/ingest/:connector_id', async (request: FastifyRequest, reply: FastifyReply) => {
    const body = request.body as string;
    const id = String(request.headers['webhook-id']);
    const timestamp = String(request.headers['webhook-timestamp']);
    const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
    const given = Buffer.from(String(request.headers['webhook-signature']).split(' ')[0]!.slice(3), 'base64');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return reply.code(401).send({ code: 'unauthenticated' });
    const { events } = JSON.parse(body) as { events: Ingested[] };
    const now = new Date().toISOString();
    const connector = (request.params as { connector_id: string }).connector_id;
    await store(events.map((e, i) => [`evt_${randomUUID()}`, 'default', connector, `${id}:${i}`, e.type, e.occurred_at ?? now, JSON.stringify(e.payload), now]));
    return reply.code(202).send({ count: events.length });
  });
  const url = await listen(app);
  return {
    url,
    close: async () => {
      await app.close();
      await close();
    },
  };
}

/** Bare Fastify + better-sqlite3: one prepared insert per row, in one transaction. */
function startBareSqlite(filename: string, secret: string): Promise<Server> {
  const db = new Database(filename);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(twinTable('integer primary key autoincrement'));
  db.exec(TWIN_INDEX);
  const insert = db.prepare('insert into webhook_inbox (id, workspace_id, connector_id, message_id, type, occurred_at, payload, received_at) values (?, ?, ?, ?, ?, ?, ?, ?)');
  const store = db.transaction((rows: unknown[][]) => {
    for (const row of rows) insert.run(...row);
  });
  return bareServer(secret, store, () => {
    db.close();
  });
}

/** Bare Fastify + pg: every row in one multi-row INSERT, autocommitted. */
async function startBarePostgres(connectionString: string, secret: string): Promise<Server> {
  const pool = new pg.Pool({ connectionString, max: 10 });
  await pool.query(twinTable('bigserial primary key'));
  await pool.query(TWIN_INDEX);
  const store = async (rows: unknown[][]) => {
    const values = rows.map((_, r) => `(${Array.from({ length: 8 }, (_, c) => `$${r * 8 + c + 1}`).join(', ')})`);
    await pool.query(
      `insert into webhook_inbox (id, workspace_id, connector_id, message_id, type, occurred_at, payload, received_at) values ${values.join(', ')} on conflict (connector_id, message_id) do nothing`,
      rows.flat(),
    );
  };
  return bareServer(secret, store, () => pool.end());
}

/** Ferry on Fastify, on `storage`, with a webhook source connector; its ingest URL and secret. */
async function startFerry(storage: StorageConfig): Promise<Server & { secret: string; path: string }> {
  const engine = await createEngine({ storage, secretKey: generateSecretKey(), plugins: [webhook()] });
  await engine.start();
  const app = Fastify({ logger: false });
  await app.register(ferryPlugin, { engine, rateLimit: false, ingestRateLimit: false });
  const url = await listen(app);
  const secret = generateWebhookSecret();
  const connector = await engine.connectors.create('default', { type: 'webhook', direction: 'source', config: { signing_secret: secret } });
  return {
    url,
    secret,
    path: `/v2/ingest/${connector.id}`,
    close: async () => {
      await app.close();
      await engine.stop();
    },
  };
}

/** One storage's case: bare and Ferry, alternating for ROUNDS rounds; emits the medians. */
async function runCase(name: string, ferry: Server & { secret: string; path: string }, bare: Server): Promise<void> {
  const bareRates: number[] = [];
  const ferryRates: number[] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      bareRates.push(await measure(`bare fastify + ${name}`, `${bare.url}${ferry.path}`, ferry.secret));
      ferryRates.push(await measure(`ferry ${name}`, `${ferry.url}${ferry.path}`, ferry.secret));
    }
    emit('ingest', `${name}: ingest, ${EVENTS} events a request`, median(ferryRates), 'events/s', median(bareRates));
  } finally {
    await bare.close();
    await ferry.close();
  }
}

const dir = mkdtempSync(join(process.platform === 'linux' ? '/dev/shm' : tmpdir(), 'ferry-bench-ingest-'));
let server: TestPostgres | undefined;
try {
  if (CASES.includes('sqlite')) {
    const ferry = await startFerry(sqliteStorage({ filename: join(dir, 'ferry.db') }));
    await runCase('sqlite', ferry, await startBareSqlite(join(dir, 'bare.db'), ferry.secret));
  }
  if (CASES.includes('postgres')) {
    server = await startTestPostgres();
    const ferry = await startFerry(postgresStorage({ connectionString: await server.createDatabase('ingest') }));
    await runCase('postgres', ferry, await startBarePostgres(await server.createDatabase('bare'), ferry.secret));
  }
} finally {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
}

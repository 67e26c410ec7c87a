/**
 * Signed ingest (`POST /v2/ingest/{connector_id}`, what a webhook source receives): batches of
 * BENCH_INGEST_EVENTS events (default 100) signed the Standard Webhooks way, sent by
 * BENCH_INGEST_CONCURRENCY loops (default 10) in a process of their own (./ingest-load.ts),
 * each request with a webhook-id of its own, for 5 s after a 1 s warm-up; events/s accepted.
 *
 *  - `sqlite: ingest`: Ferry on Fastify (`ferryPlugin`, the ingest rate limit off) with the
 *    webhook plugin, on a SQLite file: signature checked, body validated, the events stored
 *    durably in the inbox before the 202.
 *  - the baseline: bare Fastify doing the same work with better-sqlite3 on a file of its own:
 *    the HMAC-SHA256 signature checked in constant time, the JSON parsed, and one row per event
 *    inserted in one transaction into a twin of the inbox table (same keys and indexes), then
 *    202 with the count.
 *
 * Goal on the project's 2-core machine (issue 21): at least 50,000 events/s on SQLite. Client
 * and server share the two cores, so the figures are low in absolute terms; read the ratio.
 */
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import Fastify, { type FastifyInstance } from 'fastify';
import { createEngine, generateSecretKey, generateWebhookSecret, sqliteStorage, webhookSecretBytes } from '@ferry/core';
import { ferryPlugin } from '@ferry/fastify';
import { webhook } from '@ferry/webhook';
import { emit } from '../emit.js';

const EVENTS = Number(process.env.BENCH_INGEST_EVENTS ?? 100);
const CONCURRENCY = Number(process.env.BENCH_INGEST_CONCURRENCY ?? 10);
const WARMUP_MS = 1_000;
const MEASURE_MS = 5_000;

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

async function measure(label: string, url: string, secret: string): Promise<number> {
  await load(url, secret, WARMUP_MS);
  const perSecond = await load(url, secret, MEASURE_MS);
  console.error(`${label}: ${Math.round(perSecond)} events/s`);
  return perSecond;
}

/** Bare Fastify doing the same work (see the header). */
async function startBare(filename: string, secret: string): Promise<{ url: string; close(): Promise<void> }> {
  const db = new Database(filename);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(`create table webhook_inbox (seq integer primary key autoincrement, id text not null unique, workspace_id text not null, connector_id text not null,
    message_id text not null, type text not null, occurred_at text not null, payload text not null, received_at text not null, unique (connector_id, message_id))`);
  db.exec('create index webhook_inbox_connector_id_seq_index on webhook_inbox (connector_id, seq)');
  const insert = db.prepare('insert into webhook_inbox (id, workspace_id, connector_id, message_id, type, occurred_at, payload, received_at) values (?, ?, ?, ?, ?, ?, ?, ?)');
  const store = db.transaction((rows: unknown[][]) => {
    for (const row of rows) insert.run(...row);
  });
  const key = webhookSecretBytes(secret)!;
  const app = Fastify({ logger: false, bodyLimit: 10 * 1024 * 1024 });
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => done(null, body));
  app.post('/v2/ingest/:connector_id', async (request, reply) => {
    const body = request.body as string;
    const id = String(request.headers['webhook-id']);
    const timestamp = String(request.headers['webhook-timestamp']);
    const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
    const given = Buffer.from(String(request.headers['webhook-signature']).split(' ')[0]!.slice(3), 'base64');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return reply.code(401).send({ code: 'unauthenticated' });
    const { events } = JSON.parse(body) as { events: { type: string; payload: unknown; occurred_at?: string }[] };
    const now = new Date().toISOString();
    const connector = (request.params as { connector_id: string }).connector_id;
    store(events.map((e, i) => [`evt_${randomUUID()}`, 'default', connector, `${id}:${i}`, e.type, e.occurred_at ?? now, JSON.stringify(e.payload), now]));
    return reply.code(202).send({ count: events.length });
  });
  const url = await listen(app);
  return {
    url,
    close: async () => {
      await app.close();
      db.close();
    },
  };
}

const dir = mkdtempSync(join(tmpdir(), 'ferry-bench-ingest-'));
const engine = await createEngine({ storage: sqliteStorage({ filename: join(dir, 'ferry.db') }), secretKey: generateSecretKey(), plugins: [webhook()] });
await engine.start();
const app = Fastify({ logger: false });
await app.register(ferryPlugin, { engine, rateLimit: false, ingestRateLimit: false });
const ferryUrl = await listen(app);
const secret = generateWebhookSecret();
const connector = await engine.connectors.create('default', { type: 'webhook', direction: 'source', config: { signing_secret: secret } });
const bare = await startBare(join(dir, 'bare.db'), secret);
try {
  const bareRate = await measure('bare fastify + sqlite', `${bare.url}/v2/ingest/${connector.id}`, secret);
  const ferryRate = await measure('ferry sqlite', `${ferryUrl}/v2/ingest/${connector.id}`, secret);
  emit('ingest', `sqlite: ingest, ${EVENTS} events a request`, ferryRate, 'events/s', bareRate);
} finally {
  await bare.close();
  await app.close();
  await engine.stop();
  rmSync(dir, { recursive: true, force: true });
}

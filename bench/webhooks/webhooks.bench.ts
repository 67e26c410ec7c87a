/**
 * Webhook delivery against a bare loop of signed POSTs, to a receiver in its own process on
 * 127.0.0.1 that answers 204 (receiver-child.ts):
 *  - `bare: deliveries`: BENCH_WEBHOOKS_EVENTS (default 20,000) POSTs, each signed with the
 *    Standard Webhooks headers (`webhookHeaders`), sent with undici's `request` by
 *    BENCH_WEBHOOKS_CONCURRENCY (default 16) loops at once, nothing stored. Measured again
 *    before each engine case; each engine case's ratio is against the bare loop just before it.
 *  - `<dialect>: deliveries`: deliveries/s of an engine draining the same number of platform
 *    events already in its outbox (written by an engine that sends nothing): fan-out, claims,
 *    signing, the POSTs through the outbound client, and every attempt's outcome committed before
 *    its slot is reused; timed until the database shows every delivery `delivered`. The engine
 *    runs `perSubscription` = the bare loop's concurrency.
 *  - `<dialect>: event_to_delivery p50|p99`: ms from a platform event's `occurred_at` to its
 *    arrival at the receiver, for 500 `pipeline.created` events recorded through the service at
 *    about 250/s while the engine runs (fan-out is triggered by the commit, no polling).
 *  - `bare: request p50|p99`: ms per POST of the bare loop, for scale.
 * SQLite files go to /dev/shm; Postgres is the embedded one. BENCH_WEBHOOKS_DIALECTS (default
 * `sqlite,postgres`) picks the engine cases; BENCH_WEBHOOKS_QUERIES=1 prints the engine's statements
 * of each drain by kind (on stderr, like the engine's CPU time per delivery). Target: deliveries/s at least 25 %
 * of the bare loop on each dialect.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { createEngine, generateSecretKey, generateWebhookSecret, postgresStorage, sqliteStorage, webhookHeaders, type Engine, type StorageConfig } from '@ferry/core';
import { engineContext } from '@ferry/core/internal';
import { MemoryHub, memoryConnector } from '@ferry/testing';
import { startTestPostgres } from '@ferry/test-servers';
import { emit } from '../emit.js';

const EVENTS = Number(process.env.BENCH_WEBHOOKS_EVENTS ?? 20_000);
const CONCURRENCY = Number(process.env.BENCH_WEBHOOKS_CONCURRENCY ?? 16);
const LATENCY_EVENTS = 500;
const DIALECTS = (process.env.BENCH_WEBHOOKS_DIALECTS ?? 'sqlite,postgres').split(',');
const WS = 'bench';
const SECRET = generateWebhookSecret();

interface Stats {
  count: number;
  badSignatures: number;
  p50: number;
  p99: number;
}

function startReceiver(): Promise<{ child: ChildProcess; url: string; ask: <T>(cmd: string) => Promise<T> }> {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(new URL('./receiver-child.ts', import.meta.url)), [], {
      execArgv: ['--import', 'tsx', '--conditions=ferry-source'],
      env: { ...process.env, BENCH_WEBHOOKS_SECRET: SECRET },
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    child.once('error', reject);
    child.once('message', (m: { port: number }) => {
      const ask = <T>(cmd: string) =>
        new Promise<T>((res) => {
          child.once('message', (reply) => res(reply as T));
          child.send({ cmd });
        });
      resolve({ child, url: `http://127.0.0.1:${m.port}/hooks`, ask });
    });
  });
}

function eventBody(i: number): { id: string; body: string } {
  const id = `evt_bare${String(i).padStart(20, '0')}`;
  return { id, body: JSON.stringify({ id, type: 'pipeline.failed', occurred_at: new Date().toISOString(), data: { pipeline_id: `pip_${i}`, error: 'destination_unavailable' } }) };
}

/** The bare loop: signed POSTs, `CONCURRENCY` at a time; deliveries/s and per-request ms. */
async function bare(url: string): Promise<{ rate: number; p50: number; p99: number }> {
  const agent = new Agent({ connections: CONCURRENCY });
  let next = 0;
  const durations: number[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let i = next++; i < EVENTS; i = next++) {
        const { id, body } = eventBody(i);
        const headers = { 'content-type': 'application/json', ...webhookHeaders({ id, timestamp: Math.floor(Date.now() / 1000), body }, [SECRET]) };
        const t = performance.now();
        const response = await request(url, { method: 'POST', headers, body, dispatcher: agent });
        await response.body.dump();
        if (response.statusCode !== 204) throw new Error(`bare loop: HTTP ${response.statusCode}`);
        durations.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  await agent.close();
  durations.sort((a, b) => a - b);
  return { rate: EVENTS / seconds, p50: durations[Math.floor(durations.length / 2)]!, p99: durations[Math.floor(durations.length * 0.99)]! };
}

async function engineOf(storage: StorageConfig, secretKey: string, deliver: boolean): Promise<Engine> {
  const engine = await createEngine({
    storage,
    secretKey,
    runtime: false,
    outboundAllow: ['127.0.0.1'],
    plugins: [memoryConnector(new MemoryHub())],
    webhookDelivery: deliver ? { perSubscription: CONCURRENCY, maxInFlight: 4 * CONCURRENCY } : false,
  });
  await engine.start();
  return engine;
}

async function count(engine: Engine, status: string): Promise<number> {
  return Number(((await engineContext(engine).storage.knex('deliveries').where({ status }).count({ n: '*' })) as Array<{ n: unknown }>)[0]!.n);
}

/** One dialect: the drain of a full outbox, then the latency of events recorded one by one. */
async function engineCase(dialect: string, storage: StorageConfig, receiver: Awaited<ReturnType<typeof startReceiver>>, baseline: number): Promise<void> {
  const secretKey = generateSecretKey();
  const writer = await engineOf(storage, secretKey, false);
  await writer.webhooks.create(WS, { url: receiver.url, events: ['pipeline.failed', 'pipeline.created'], secret: SECRET });
  const occurredAt = new Date().toISOString();
  for (let i = 0; i < EVENTS; i += 1000) {
    const events = Array.from({ length: Math.min(1000, EVENTS - i) }, (_, k) => ({
      id: `evt_bench${String(i + k).padStart(20, '0')}`,
      workspace_id: WS,
      type: 'pipeline.failed' as const,
      data: { pipeline_id: `pip_${i + k}`, error: 'destination_unavailable' },
      occurred_at: occurredAt,
    }));
    await engineContext(writer).storage.transaction((repos) => repos.outbox.appendMany(events));
  }
  await writer.stop();

  await receiver.ask('reset');
  const started = performance.now();
  const cpu = process.cpuUsage();
  const engine = await engineOf(storage, secretKey, true);
  const kinds = new Map<string, number>();
  if (process.env.BENCH_WEBHOOKS_QUERIES) engineContext(engine).storage.knex.on('query', (q: { sql: string }) => { const k = q.sql.replace(/\s+/g, ' ').slice(0, 60); kinds.set(k, (kinds.get(k) ?? 0) + 1); });
  const deadline = started + 600_000;
  // The receiver's count first (cheap, another process), then the database's: durable state is what counts.
  while ((await receiver.ask<Stats>('stats')).count < EVENTS || (await count(engine, 'delivered')) < EVENTS) {
    if (performance.now() > deadline) throw new Error(`${dialect}: the drain did not finish in 10 minutes`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  if (process.env.BENCH_WEBHOOKS_QUERIES) console.error([...kinds].sort((a, b) => b[1] - a[1]).slice(0, 15).map(([k, n]) => `${n}\t${k}`).join('\n'));
  const drained = await receiver.ask<Stats>('stats');
  if (drained.badSignatures > 0) throw new Error(`${dialect}: ${drained.badSignatures} deliveries failed verification`);
  const cpuUs = (used.user + used.system) / EVENTS;
  console.error(`webhooks ${dialect}: ${EVENTS} deliveries in ${seconds.toFixed(1)} s (the receiver saw ${drained.count} requests); engine CPU ${cpuUs.toFixed(0)} µs per delivery, ${((used.user + used.system) / 1e4 / seconds).toFixed(0)} % of a core`);
  emit('webhooks', `${dialect}: deliveries`, EVENTS / seconds, 'deliveries/s', baseline);

  // Latency: events recorded one by one through the service while the engine runs.
  await receiver.ask('reset');
  const source = await engine.connectors.create(WS, { type: 'memory', direction: 'source', config: { name: 'in' } });
  const destination = await engine.connectors.create(WS, { type: 'memory', direction: 'destination', config: { name: 'out' } });
  await receiver.ask('reset');
  for (let i = 0; i < LATENCY_EVENTS; i++) {
    await engine.pipelines.create(WS, { name: `p${i}`, source_connector_id: source.id, destination_connector_id: destination.id });
    await new Promise((resolve) => setTimeout(resolve, 4));
  }
  while ((await count(engine, 'delivered')) < EVENTS + LATENCY_EVENTS) await new Promise((resolve) => setTimeout(resolve, 20));
  const latency = await receiver.ask<Stats>('stats');
  emit('webhooks', `${dialect}: event_to_delivery p50`, latency.p50, 'ms');
  emit('webhooks', `${dialect}: event_to_delivery p99`, latency.p99, 'ms');
  await engine.stop();
}

const receiver = await startReceiver();
let pg: Awaited<ReturnType<typeof startTestPostgres>> | undefined;
try {
  // Warm-up: connections, JIT.
  await bare(receiver.url);
  let b = await bare(receiver.url);
  emit('webhooks', 'bare: deliveries', b.rate, 'deliveries/s');
  emit('webhooks', 'bare: request p50', b.p50, 'ms');
  emit('webhooks', 'bare: request p99', b.p99, 'ms');
  if (DIALECTS.includes('sqlite')) {
    await engineCase('sqlite', sqliteStorage({ filename: join(mkdtempSync('/dev/shm/ferry-bench-webhooks-'), 'ferry.db') }), receiver, b.rate);
  }
  if (DIALECTS.includes('postgres')) {
    pg = await startTestPostgres();
    b = await bare(receiver.url);
    emit('webhooks', 'bare: deliveries', b.rate, 'deliveries/s');
    await engineCase('postgres', postgresStorage({ connectionString: await pg.createDatabase('bench_webhooks') }), receiver, b.rate);
  }
} finally {
  await pg?.stop();
  receiver.child.disconnect();
}

/**
 * The webhook plugin as a destination, against a bare loop doing the same work, measured in the
 * same run (the workload and engine: ./harness.ts; the engine's storage is SQLite in /dev/shm).
 * Both post to one receiver on 127.0.0.1, a bare `node:http` server in a process of its own (so
 * it does not share the sender's event loop) that reads each body, counts the events in it,
 * checks the signature of one request in 100 (the senders must really sign) and answers 200
 * (or, in the transient cases, 500 to some), after BENCH_WEBHOOK_DELAY_MS (default 0: set it
 * to see what concurrency buys against a receiver across a network).
 *
 *  - `webhook: destination raw`: events/s of a bare loop that serializes the very batches the
 *    plugin sends (`{ "events": [...] }` of the wire form, BENCH_WEBHOOK_BATCH events a request,
 *    default 100), derives the batch id, signs each the Standard Webhooks way (HMAC-SHA256 of
 *    `<id>.<timestamp>.<body>`, base64) and POSTs it with undici on keep-alive connections,
 *    as many requests in flight as the destination allows (BENCH_WEBHOOK_CONCURRENCY, default
 *    the plugin's default `concurrency`). The events are built before the clock starts, as the
 *    engine has them in memory when it writes. After an untimed warm-up over the same events
 *    (cold, it runs at half its speed or less), it runs just before and just after the engine
 *    case (the second is often faster still, for reasons not found); the figure is the mean of
 *    the two.
 *  - `webhook: destination`: events/s of a streaming pipeline (batches of BENCH_CONNECTORS_BATCH)
 *    from a memory source to the webhook destination, timed from the pipeline's creation until
 *    its checkpoint holds the last event; the receiver must have counted every event once.
 *    Before it, untimed, another pipeline to the same destination drains a quarter as many
 *    events, so the engine is as warm as the bare loop. Its ratio is against the raw figure.
 *  - `webhook: destination, 5 % transient 500s`: events/s of the same streaming pipeline while
 *    the receiver answers 500 (without counting the events) to 5 % of the requests, drawn by a
 *    generator seeded with BENCH_WEBHOOK_SEED (default 1) plus the round, so a run's failures
 *    fall the same way each time; the destination retries them within its writes. On one engine,
 *    warmed up as above, BENCH_WEBHOOK_ROUNDS rounds (default 3) each drain the events without
 *    failures then with them, and a last run drains them without; each run is a pipeline of its
 *    own. The figure is the median of the runs with failures, its ratio against the median of
 *    those without (the goal is at least 0.9): medians, as the rates of single runs moved by half
 *    on a busy machine. The receiver keeps the first copy of each `webhook-id` it accepted and
 *    counts the events of that copy only, as a receiver that deduplicates does: a batch the
 *    engine sends again after a failed write lands once. Every event must have landed; stderr
 *    says how many requests failed, how many copies were dropped, and how many times the engine
 *    held the flow.
 *  - `webhook: destination, 5 % transient 500s, retries 0` (not run unless asked): the same with
 *    the connector's `retries` at 0, every failed request failing its write and holding the
 *    flow, as before the destination retried. It runs at a fraction of the others' speed: give it
 *    fewer events (BENCH_CONNECTORS_EVENTS=20000 takes about a minute).
 * BENCH_WEBHOOK_CASES picks the cases, comma-separated: `destination` (the raw loop and the
 * destination), `transient` and `transient-no-retries`; default `destination,transient`.
 * BENCH_CONNECTORS_EVENTS sets the number of events of each case. Progress on stderr gives each
 * sender's CPU time per event, which drifts less than the rates on a shared machine.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'undici';
import { generateWebhookSecret, silentLogger, webhookSecretBytes, type Engine, type Logger } from '@ferry/core';
import { engineContext } from '@ferry/core/internal';
import { MemoryHub } from '@ferry/testing';
import { DEFAULT_CONCURRENCY, webhook } from '@ferry/webhook';
import { emit } from '../emit.js';
import { BATCH, EVENTS, WS, log, prebuiltRecords, record, startEngine, until } from './harness.js';

/** Events per request, for the destination and the bare loop alike. */
const REQUEST_BATCH = Number(process.env.BENCH_WEBHOOK_BATCH ?? 100);
/**
 * Requests in flight, for the destination (its `concurrency`, when set) and the bare loop alike;
 * default the destination's own default.
 */
const CONCURRENCY = Number(process.env.BENCH_WEBHOOK_CONCURRENCY ?? DEFAULT_CONCURRENCY);
/** Events of the engine's untimed warm-up: a quarter of the timed ones (more changed nothing). */
const WARMUP = Math.ceil(EVENTS / 4);
/** Milliseconds the receiver waits before each answer, as a receiver across a network would (default 0). */
const DELAY_MS = Number(process.env.BENCH_WEBHOOK_DELAY_MS ?? 0);
const SECRET = generateWebhookSecret();
/** Share of the requests the receiver answers 500 in the transient cases. */
const FAIL_RATE = 0.05;
/** Seed of the receiver's draws of which requests fail. */
const SEED = Number(process.env.BENCH_WEBHOOK_SEED ?? 1);
/** Runs with failures in the transient cases, each after one without (default 3). */
const ROUNDS = Number(process.env.BENCH_WEBHOOK_ROUNDS ?? 3);
const CASES = (process.env.BENCH_WEBHOOK_CASES ?? 'destination,transient').split(',').map((c) => c.trim()).filter(Boolean);

/**
 * The receiver, plain JavaScript run by `node -e` so it starts in a blink: counts requests, the
 * events in the bodies it accepts (one `"occurred_at":` each, found without parsing) for the first
 * copy of each `webhook-id`, copies it dropped, requests it failed, connections opened, and
 * signatures that did not verify. Asked `stats` over IPC, it answers the counts; `reset` answers
 * them too, then zeroes them and stops failing; `{ failRate, seed }` answers them and from then
 * on answers 500 to that share of the requests, drawn by a generator seeded with `seed`.
 */
const RECEIVER = `
import { createServer } from 'node:http';
import { createHmac } from 'node:crypto';
const key = Buffer.from(process.env.BENCH_WEBHOOK_SECRET.slice('whsec_'.length), 'base64');
const marker = Buffer.from('"occurred_at":');
const delay = Number(process.env.BENCH_WEBHOOK_DELAY_MS);
const fresh = () => ({ requests: 0, events: 0, badSignatures: 0, connections: 0, failed: 0, duplicates: 0 });
let stats = fresh();
let accepted = new Set();
let failRate = 0;
let draw = Math.random;
// mulberry32: a small seeded generator, so the same requests of a run fail each time.
const seeded = (seed) => () => {
  seed = (seed + 0x6d2b79f5) >>> 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    if (stats.requests++ % 100 === 0) {
      const mac = createHmac('sha256', key).update(req.headers['webhook-id'] + '.' + req.headers['webhook-timestamp'] + '.').update(body).digest('base64');
      if (req.headers['webhook-signature'] !== 'v1,' + mac) stats.badSignatures++;
    }
    const fail = failRate > 0 && draw() < failRate;
    if (fail) stats.failed++;
    else if (accepted.has(req.headers['webhook-id'])) stats.duplicates++;
    else {
      accepted.add(req.headers['webhook-id']);
      for (let at = body.indexOf(marker); at !== -1; at = body.indexOf(marker, at + marker.length)) stats.events++;
    }
    const status = fail ? 500 : 200;
    if (delay > 0) setTimeout(() => res.writeHead(status, { 'content-length': '0' }).end(), delay);
    else res.writeHead(status, { 'content-length': '0' }).end();
  });
});
server.on('connection', () => stats.connections++);
server.keepAliveTimeout = 30_000;
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
process.on('message', (cmd) => {
  process.send({ stats });
  if (cmd === 'reset') {
    stats = fresh();
    accepted = new Set();
    failRate = 0;
  } else if (typeof cmd === 'object') {
    failRate = cmd.failRate;
    draw = seeded(cmd.seed);
  }
});
process.on('disconnect', () => process.exit(0));
`;

interface ReceiverStats {
  requests: number;
  /** Events of the first accepted copy of each `webhook-id`. */
  events: number;
  badSignatures: number;
  /** Connections opened: about the senders' concurrency when they keep them alive. */
  connections: number;
  /** Requests answered 500. */
  failed: number;
  /** Accepted requests whose `webhook-id` had been accepted already: not counted in `events`. */
  duplicates: number;
}

/** What the receiver is asked over IPC (see {@link RECEIVER}). */
type ReceiverCommand = 'stats' | 'reset' | { failRate: number; seed: number };

interface Receiver {
  url: string;
  ask(cmd: ReceiverCommand): Promise<ReceiverStats>;
  stop(): void;
}

function startReceiver(): Promise<Receiver> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(process.execPath, ['--input-type=module', '-e', RECEIVER], {
      env: { ...process.env, BENCH_WEBHOOK_SECRET: SECRET, BENCH_WEBHOOK_DELAY_MS: String(DELAY_MS) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the receiver exited (${code})`)));
    child.once('message', (m) => {
      const { port } = m as { port: number };
      resolve({
        url: `http://127.0.0.1:${port}/hook`,
        ask: (cmd) =>
          new Promise((res) => {
            child.once('message', (reply) => res((reply as { stats: ReceiverStats }).stats));
            child.send(cmd);
          }),
        stop: () => child.kill(),
      });
    });
  });
}

/** An event as the destination gets it. */
interface BenchEvent {
  id: string;
  type: string;
  occurredAt: string;
  payload: ReturnType<typeof record>;
}

/** The bare loop: `events` in batches serialized, signed and POSTed, CONCURRENCY at a time. Seconds and CPU used. */
async function bare(url: string, events: readonly BenchEvent[]): Promise<{ seconds: number; cpu: NodeJS.CpuUsage }> {
  const key = webhookSecretBytes(SECRET)!;
  const agent = new Agent({ connections: CONCURRENCY });
  let next = 0;
  const started = performance.now();
  const cpu = process.cpuUsage();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let start = next; start < events.length; start = next) {
        next += REQUEST_BATCH;
        const chunk = events.slice(start, start + REQUEST_BATCH);
        const body = JSON.stringify({ events: chunk.map((e) => ({ id: e.id, type: e.type, occurred_at: e.occurredAt, payload: e.payload })) });
        const id = 'bat_' + createHash('sha256').update(chunk.map((e) => e.id).join('\n')).digest('hex').slice(0, 26);
        const timestamp = String(Math.floor(Date.now() / 1000));
        const signature = `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
        const response = await request(url, {
          method: 'POST',
          dispatcher: agent,
          headers: { 'content-type': 'application/json', 'user-agent': 'bench', 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signature, 'x-service-signature': signature },
          body,
        });
        await response.body.dump();
        if (response.statusCode !== 200) throw new Error(`the receiver answered ${response.statusCode}`);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  await agent.close();
  return { seconds, cpu: used };
}

/**
 * Fails the bench when the receiver did not get every event exactly once, correctly signed
 * (with `copies`, once after dropping the copies of requests it had accepted already: a batch
 * sent again after a failed write). Logs the sender's CPU time per event (all its threads): on a
 * busy machine it shows where the time went when the rates drift.
 */
function checkReceived(stats: ReceiverStats, what: string, expected: number, cpu?: NodeJS.CpuUsage, seconds?: number, copies = false): void {
  const cpuUs = cpu ? cpu.user + cpu.system : 0;
  const usage = cpu && seconds ? `; sender CPU ${(cpuUs / expected).toFixed(1)} µs per event, ${(cpuUs / 1e4 / seconds).toFixed(0)} % of a core` : '';
  const failures = stats.failed > 0 || stats.duplicates > 0 ? `, ${stats.failed} answered 500, ${stats.duplicates} copies dropped` : '';
  log(`${what}: ${stats.requests} requests, ${stats.events} events${failures}, ${stats.connections} new connections${usage}`);
  if (stats.events !== expected || stats.badSignatures !== 0) throw new Error(`${what}: the receiver counted ${stats.events} events for ${expected}, ${stats.badSignatures} bad signatures`);
  if (stats.duplicates !== 0 && !copies) throw new Error(`${what}: the receiver got ${stats.duplicates} requests twice`);
}

/**
 * The streaming pipelines of an engine to one webhook destination: `drain` runs a pipeline from
 * the hub's stream `name` until its checkpoint holds `count` events, then pauses it, and
 * resolves with the seconds it took from the pipeline's creation.
 */
function pipelines(engine: Engine, destinationId: string) {
  return async (name: string, count: number): Promise<number> => {
    const source = await engine.connectors.create(WS, { type: 'memory', direction: 'source', config: { name } });
    const started = performance.now();
    const pipeline = await engine.pipelines.create(WS, { name: `to-webhook-${name}`, source_connector_id: source.id, destination_connector_id: destinationId, batch_size: BATCH, activate: true });
    await until(async () => (await engineContext(engine).storage.repos.checkpoints.get(pipeline.id)) === count, 'the webhook destination to take every event');
    const seconds = (performance.now() - started) / 1000;
    await engine.pipelines.pause(WS, pipeline.id);
    return seconds;
  };
}

/** A logger that drops everything but counts the engine's flows held (one warning per hold). */
function holdCounter(): { logger: Logger; holds: () => number } {
  let holds = 0;
  const logger: Logger = {
    ...silentLogger,
    warn: (obj: object | string, msg?: string) => {
      if (typeof obj === 'object' && msg?.startsWith('pipeline flow held')) holds++;
    },
    child: () => logger,
  };
  return { logger, holds: () => holds };
}

async function benchWebhook(dir: string): Promise<void> {
  const receiver = await startReceiver();
  try {
    const occurredAt = new Date(Date.UTC(2026, 0, 1)).toISOString();
    const events = Array.from({ length: EVENTS }, (_, i) => ({ id: `evt_${String(i).padStart(26, '0')}`, type: 'bench.event', occurredAt, payload: record(i) }));
    // Untimed first, over every event: cold, the loop and the receiver run at half their warm
    // speed or less, and a shorter warm-up left the first timed run that slow still.
    await bare(receiver.url, events);
    checkReceived(await receiver.ask('reset'), 'destination raw, warm-up', EVENTS);
    const rawRun = async (what: string) => {
      const { seconds, cpu } = await bare(receiver.url, events);
      checkReceived(await receiver.ask('reset'), what, EVENTS, cpu, seconds);
      return EVENTS / seconds;
    };
    const rawBefore = await rawRun('destination raw, before');

    const hub = new MemoryHub();
    hub.stream('warm').generate(WARMUP, (i) => ({ type: 'bench.event', payload: record(i) }));
    const records = prebuiltRecords(EVENTS);
    hub.stream('in').generate(EVENTS, (i) => records[i]!);
    const engine = await startEngine(hub, dir, [webhook()]);
    let rate: number;
    try {
      const destination = await engine.connectors.create(WS, {
        type: 'webhook',
        direction: 'destination',
        // Left to its default unless set, so the bench measures the destination as it comes.
        config: { url: receiver.url, signing_secret: SECRET, batch_size: REQUEST_BATCH, ...(process.env.BENCH_WEBHOOK_CONCURRENCY ? { concurrency: CONCURRENCY } : {}) },
      });
      const sources = {
        warm: await engine.connectors.create(WS, { type: 'memory', direction: 'source', config: { name: 'warm' } }),
        in: await engine.connectors.create(WS, { type: 'memory', direction: 'source', config: { name: 'in' } }),
      };
      const drain = async (name: keyof typeof sources, count: number) => {
        const source = sources[name];
        const pipeline = await engine.pipelines.create(WS, { name: `to-webhook-${name}`, source_connector_id: source.id, destination_connector_id: destination.id, batch_size: BATCH, activate: true });
        await until(async () => (await engineContext(engine).storage.repos.checkpoints.get(pipeline.id)) === count, 'the webhook destination to take every event');
        await engine.pipelines.pause(WS, pipeline.id);
      };
      // The engine warms up the same way, on a stream of its own.
      await drain('warm', WARMUP);
      checkReceived(await receiver.ask('reset'), 'destination, warm-up', WARMUP);
      const started = performance.now();
      const cpu = process.cpuUsage();
      await drain('in', EVENTS);
      const seconds = (performance.now() - started) / 1000;
      const used = process.cpuUsage(cpu);
      checkReceived(await receiver.ask('reset'), 'destination', EVENTS, used, seconds);
      rate = EVENTS / seconds;
    } finally {
      await engine.stop();
    }

    const rawAfter = await rawRun('destination raw, after');
    log(`destination raw: ${Math.round(rawBefore)} events/s before the engine case, ${Math.round(rawAfter)} after`);
    const raw = (rawBefore + rawAfter) / 2;
    emit('connectors', 'webhook: destination raw', raw, 'events/s');
    emit('connectors', 'webhook: destination', rate, 'events/s', raw);
  } finally {
    receiver.stop();
  }
}

/** The median of `values`. */
function median(values: readonly number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/**
 * The destination while the receiver fails 5 % of the requests, against the same destination
 * without failures, on one engine: ROUNDS rounds of a run without failures then one with them,
 * and a last run without, each a pipeline of its own; the figures are the medians (see the
 * header). `retries` sets the connector's `retries` (default: the connector's own default).
 */
async function benchTransient(dir: string, kase: string, retries?: number): Promise<void> {
  const receiver = await startReceiver();
  const counter = holdCounter();
  try {
    const hub = new MemoryHub();
    hub.stream('warm').generate(WARMUP, (i) => ({ type: 'bench.event', payload: record(i) }));
    // One array for every run: each stream makes its records from it as they are read.
    const records = prebuiltRecords(EVENTS);
    const engine = await startEngine(hub, dir, [webhook()], counter.logger);
    try {
      const destination = await engine.connectors.create(WS, {
        type: 'webhook',
        direction: 'destination',
        config: {
          url: receiver.url,
          signing_secret: SECRET,
          batch_size: REQUEST_BATCH,
          ...(process.env.BENCH_WEBHOOK_CONCURRENCY ? { concurrency: CONCURRENCY } : {}),
          ...(retries === undefined ? {} : { retries }),
        },
      });
      const drain = pipelines(engine, destination.id);
      await drain('warm', WARMUP);
      checkReceived(await receiver.ask('reset'), `${kase}, warm-up`, WARMUP);
      const run = async (name: string, what: string, copies = false) => {
        hub.stream(name).generate(EVENTS, (i) => records[i]!);
        const cpu = process.cpuUsage();
        const held = counter.holds();
        const seconds = await drain(name, EVENTS);
        const used = process.cpuUsage(cpu);
        checkReceived(await receiver.ask('reset'), what, EVENTS, used, seconds, copies);
        log(`${what}: ${Math.round(EVENTS / seconds)} events/s, the flow held ${counter.holds() - held} times`);
        return EVENTS / seconds;
      };
      const clean: number[] = [];
      const failing: number[] = [];
      for (let round = 1; round <= ROUNDS; round++) {
        clean.push(await run(`clean-${round}`, `${kase}: without failures, round ${round}`));
        // Another seed each round, the same ones each run.
        await receiver.ask({ failRate: FAIL_RATE, seed: SEED + round });
        failing.push(await run(`failing-${round}`, `${kase}: round ${round}`, true));
      }
      clean.push(await run('clean-last', `${kase}: without failures, last`));
      log(`${kase}: medians ${Math.round(median(failing))} events/s, ${Math.round(median(clean))} without failures; the flow held ${counter.holds()} times in all`);
      emit('connectors', kase, median(failing), 'events/s', median(clean));
    } finally {
      await engine.stop();
    }
  } finally {
    receiver.stop();
  }
}

const dir = mkdtempSync('/dev/shm/ferry-bench-webhook-');
try {
  log(`webhook: ${EVENTS} events, pipeline batches of ${BATCH}, ${REQUEST_BATCH} events a request, ${CONCURRENCY} in flight, answers after ${DELAY_MS} ms; cases ${CASES.join(', ')}`);
  for (const kase of CASES) {
    if (kase === 'destination') await benchWebhook(dir);
    else if (kase === 'transient') await benchTransient(dir, 'webhook: destination, 5 % transient 500s');
    else if (kase === 'transient-no-retries') await benchTransient(dir, 'webhook: destination, 5 % transient 500s, retries 0', 0);
    else throw new Error(`unknown case ${kase}: known are destination, transient, transient-no-retries`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

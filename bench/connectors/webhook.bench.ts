/**
 * The webhook plugin as a destination, against a bare loop doing the same work, measured in the
 * same run (the workload and engine: ./harness.ts; the engine's storage is SQLite in /dev/shm).
 * Both post to one receiver on 127.0.0.1, a bare `node:http` server in a process of its own (so
 * it does not share the sender's event loop) that reads each body, counts the events in it,
 * checks the signature of one request in 100 (the senders must really sign) and answers 200,
 * after BENCH_WEBHOOK_DELAY_MS (default 0: set it to see what concurrency buys against a
 * receiver across a network).
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
 * BENCH_CONNECTORS_EVENTS sets the number of events of each case. Progress on stderr gives each
 * sender's CPU time per event, which drifts less than the rates on a shared machine.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'undici';
import { generateWebhookSecret, webhookSecretBytes } from '@ferry/core';
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

/**
 * The receiver, plain JavaScript run by `node -e` so it starts in a blink: counts requests and
 * the events in their bodies (one `"occurred_at":` each, found without parsing), connections
 * opened, and signatures that did not verify. Asked `stats` over IPC, it answers
 * the counts; `reset` answers them too, then zeroes them.
 */
const RECEIVER = `
import { createServer } from 'node:http';
import { createHmac } from 'node:crypto';
const key = Buffer.from(process.env.BENCH_WEBHOOK_SECRET.slice('whsec_'.length), 'base64');
const marker = Buffer.from('"occurred_at":');
const delay = Number(process.env.BENCH_WEBHOOK_DELAY_MS);
let stats = { requests: 0, events: 0, badSignatures: 0, connections: 0 };
const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    for (let at = body.indexOf(marker); at !== -1; at = body.indexOf(marker, at + marker.length)) stats.events++;
    if (stats.requests++ % 100 === 0) {
      const mac = createHmac('sha256', key).update(req.headers['webhook-id'] + '.' + req.headers['webhook-timestamp'] + '.').update(body).digest('base64');
      if (req.headers['webhook-signature'] !== 'v1,' + mac) stats.badSignatures++;
    }
    if (delay > 0) setTimeout(() => res.writeHead(200, { 'content-length': '0' }).end(), delay);
    else res.writeHead(200, { 'content-length': '0' }).end();
  });
});
server.on('connection', () => stats.connections++);
server.keepAliveTimeout = 30_000;
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
process.on('message', (cmd) => {
  process.send({ stats });
  if (cmd === 'reset') stats = { requests: 0, events: 0, badSignatures: 0, connections: 0 };
});
process.on('disconnect', () => process.exit(0));
`;

interface ReceiverStats {
  requests: number;
  events: number;
  badSignatures: number;
  /** Connections opened: about the senders' concurrency when they keep them alive. */
  connections: number;
}

interface Receiver {
  url: string;
  ask(cmd: 'stats' | 'reset'): Promise<ReceiverStats>;
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
 * Fails the bench when the receiver did not get every event exactly once, correctly signed. Logs
 * the sender's CPU time per event (all its threads): on a busy machine it shows where the time
 * went when the rates drift.
 */
function checkReceived(stats: ReceiverStats, what: string, expected: number, cpu?: NodeJS.CpuUsage, seconds?: number): void {
  const cpuUs = cpu ? cpu.user + cpu.system : 0;
  const usage = cpu && seconds ? `; sender CPU ${(cpuUs / expected).toFixed(1)} µs per event, ${(cpuUs / 1e4 / seconds).toFixed(0)} % of a core` : '';
  log(`${what}: ${stats.requests} requests, ${stats.events} events, ${stats.connections} new connections${usage}`);
  if (stats.events !== expected || stats.badSignatures !== 0) throw new Error(`${what}: the receiver counted ${stats.events} events for ${expected}, ${stats.badSignatures} bad signatures`);
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

const dir = mkdtempSync('/dev/shm/ferry-bench-webhook-');
try {
  log(`webhook: ${EVENTS} events, pipeline batches of ${BATCH}, ${REQUEST_BATCH} events a request, ${CONCURRENCY} in flight, answers after ${DELAY_MS} ms`);
  await benchWebhook(dir);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

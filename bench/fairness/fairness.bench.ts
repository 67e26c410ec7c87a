/**
 * Fairness: the API and the pipelines of one process must not starve each other. One engine on a
 * SQLite file (in /dev/shm) serves the /v2 API on Fastify and runs a pass-through streaming
 * pipeline (memory source and destination, event log on):
 *  - `<storage>: pipeline unloaded`: events/s of draining BENCH_FAIRNESS_EVENTS (default 200,000)
 *    with no API traffic;
 *  - `<storage>: pipeline under 40 API clients`: events/s of the same drain while autocannon (in a
 *    worker thread) keeps BENCH_FAIRNESS_CLIENTS (default 40) connections busy with
 *    `GET /v2/pipelines/{id}`; its ratio is against the unloaded drain;
 *  - `<storage>: API p99 under load` (and p50, and requests/s): the latency autocannon saw meanwhile.
 * Two storages: the default (batches committed on the SQLite writer thread) and `writerThread:
 * false` (committed on the event loop), to show what the thread does for fairness.
 * Goals (issue): under load, pipeline throughput at least half of unloaded, API p99 under 250 ms.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import autocannon from 'autocannon';
import Fastify from 'fastify';
import { sqliteStorage } from '@ferry/core';
import { ferryPlugin } from '@ferry/fastify';
import { emit } from '../emit.js';
import { drainThroughEngine, envCount, sqliteTempDir, startBenchEngine, WORKSPACE } from '../pipeline/drain.js';

const EVENTS = envCount('BENCH_FAIRNESS_EVENTS', 200_000);
const CLIENTS = envCount('BENCH_FAIRNESS_CLIENTS', 40);

async function run(label: string, writerThread: boolean): Promise<void> {
  const dir = sqliteTempDir();
  const bench = await startBenchEngine(sqliteStorage({ filename: join(dir, 'ferry.db'), writerThread }));
  const app = Fastify({ logger: false });
  await app.register(ferryPlugin, { engine: bench.engine, rateLimit: false });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const { key } = await bench.engine.apiKeys.create({ workspace: WORKSPACE, scopes: ['write'] });
    // Warm-up, and a pipeline for the API to read.
    const warm = await drainThroughEngine(bench, 'warm', 10_000);
    const unloaded = await drainThroughEngine(bench, 'unloaded', EVENTS);
    const unloadedRate = unloaded.events / unloaded.seconds;
    emit('fairness', `${label}: pipeline unloaded`, unloadedRate, 'events/s');

    // The load runs for a fixed time, about twice the unloaded drain (autocannon's client thread
    // cannot be stopped early); the drain starts once the clients are connected, and the time it
    // takes is the figure. A drain slower than the load would end unloaded: that is reported.
    const seconds = Math.ceil(unloaded.seconds * 2) + 3;
    const load = autocannon({ url: `${url}/v2/pipelines/${warm.pipelineId}`, headers: { authorization: `Bearer ${key}` }, connections: CLIENTS, duration: seconds, workers: 1 });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const started = performance.now();
    const loaded = await drainThroughEngine(bench, 'loaded', EVENTS);
    const overran = (performance.now() - started) / 1000 > seconds - 1;
    if (overran) console.error(`fairness ${label}: the drain outlasted the ${seconds} s of load; its rate is partly unloaded`);
    const result = await load;
    const loadedRate = loaded.events / loaded.seconds;
    emit('fairness', `${label}: pipeline under ${CLIENTS} API clients`, loadedRate, 'events/s', unloadedRate);
    emit('fairness', `${label}: API p50 under load`, result.latency.p50, 'ms');
    emit('fairness', `${label}: API p99 under load`, result.latency.p99, 'ms');
    emit('fairness', `${label}: API requests under load`, result.requests.average, 'req/s');
    if (result.non2xx > 0 || result.errors > 0) throw new Error(`${label}: ${result.non2xx} non-2xx answers, ${result.errors} errors under load`);
  } finally {
    await app.close();
    await bench.engine.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await run('sqlite, writer thread', true);
await run('sqlite, commits on the event loop', false);

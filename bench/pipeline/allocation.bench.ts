/**
 * What the engine allocates per event: the bytes a pass-through streaming pipeline (memory source
 * to memory destination, event log on, batches of BENCH_PIPELINE_BATCH) allocates on the V8 heap
 * while it drains BENCH_ALLOCATION_EVENTS small orders (default 200,000), after a drain of 50,000
 * to warm up, on SQLite (a file in /dev/shm, its writer thread not counted) and on Postgres. A
 * garbage collection costs time in proportion to what was allocated, and unlike a rate this
 * figure hardly moves between runs or machines: it is what to compare when a change is meant to
 * spare the engine work that a run's timing cannot resolve.
 *
 * Measured with V8's sampling heap profiler (the inspector's `HeapProfiler.startSampling`, one
 * sample per BENCH_ALLOCATION_INTERVAL bytes, default 4,096), objects collected since counted:
 * an estimate, within a few percent at this interval.
 *
 *  - `<dialect>: bytes allocated per event`. Baseline: the bytes per event that reading the same
 *    backlog from the memory source allocates without an engine (the records themselves), so the
 *    ratio is the whole pipeline's allocation per byte the source's records cost.
 *
 * The ten functions that allocate the most, with their bytes per event, go to stderr.
 */
import { rmSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { postgresStorage, sqliteStorage, type StorageConfig } from '@ferry/core';
import { MemoryHub } from '@ferry/testing';
import { startTestPostgres, type TestPostgres } from '@ferry/test-servers';
import { emit } from '../emit.js';
import { BATCH_SIZE, benchRecord, drainThroughEngine, envCount, sqliteTempDir, startBenchEngine } from './drain.js';

const EVENTS = envCount('BENCH_ALLOCATION_EVENTS', 200_000);
const INTERVAL = envCount('BENCH_ALLOCATION_INTERVAL', 4096);

/** A node of the sampling heap profile. */
interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

/** Runs `work` under the sampling heap profiler; resolves with the bytes allocated, in all and by function. */
async function allocated(session: Session, work: () => Promise<unknown>): Promise<{ total: number; sites: Map<string, number> }> {
  // Both flags: a profile of what is still alive at the end would miss nearly all of a pipeline's garbage.
  await session.post('HeapProfiler.startSampling', { samplingInterval: INTERVAL, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true } as never);
  await work();
  const { profile } = (await session.post('HeapProfiler.stopSampling')) as unknown as { profile: { head: ProfileNode } };
  const sites = new Map<string, number>();
  let total = 0;
  const walk = (node: ProfileNode) => {
    if (node.selfSize > 0) {
      const f = node.callFrame;
      const site = `${f.functionName || '(anonymous)'} ${f.url.split('/').slice(-2).join('/')}`;
      sites.set(site, (sites.get(site) ?? 0) + node.selfSize);
      total += node.selfSize;
    }
    for (const child of node.children) walk(child);
  };
  walk(profile.head);
  return { total, sites };
}

/** The bytes reading the backlog from the memory source allocates, batch by batch, with no engine. */
async function sourceAlone(session: Session): Promise<number> {
  const stream = new MemoryHub().stream('alone').generate(EVENTS, benchRecord);
  const signal = new AbortController().signal;
  const { total } = await allocated(session, async () => {
    for (let from = 0; from < EVENTS; from += BATCH_SIZE) await stream.read(from, BATCH_SIZE, signal);
  });
  return total / EVENTS;
}

async function measure(session: Session, dialect: 'sqlite' | 'postgres', storage: StorageConfig, baseline: number): Promise<void> {
  const bench = await startBenchEngine(storage);
  try {
    await drainThroughEngine(bench, 'warm', 50_000);
    const { total, sites } = await allocated(session, () => drainThroughEngine(bench, 'measured', EVENTS));
    const top = [...sites].sort((a, b) => b[1] - a[1]).slice(0, 10).map(([site, bytes]) => `${(bytes / EVENTS).toFixed(0)} B ${site}`);
    console.error(`allocation ${dialect}: ${(total / EVENTS).toFixed(0)} B per event; the source alone ${baseline.toFixed(0)} B; most:\n  ${top.join('\n  ')}`);
    emit('pipeline', `${dialect}: bytes allocated per event`, Math.round(total / EVENTS), 'B', Math.round(baseline));
  } finally {
    await bench.engine.stop();
  }
}

const session = new Session();
session.connect();
const dir = sqliteTempDir();
let server: TestPostgres | undefined;
try {
  const baseline = await sourceAlone(session);
  await measure(session, 'sqlite', sqliteStorage({ filename: join(dir, 'allocation.db') }), baseline);
  server = await startTestPostgres();
  await measure(session, 'postgres', postgresStorage({ connectionString: await server.createDatabase('allocation') }), baseline);
} finally {
  session.disconnect();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
}

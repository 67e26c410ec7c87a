/**
 * One case of the pipeline benchmark, in a process of its own (started by pipeline.bench.ts,
 * which prints the results): its RSS holds this case only, nothing left over from the ones
 * before, and the parent bounds its time from outside, which an in-process timer cannot do
 * against a flow that never yields to the event loop (on SQLite every query completes
 * synchronously, see drain.ts).
 *
 * Input (env): BENCH_PIPELINE_CASE (`throughput` | `drain`), BENCH_PIPELINE_DIALECT (`sqlite` |
 * `postgres`), BENCH_PIPELINE_COUNT, BENCH_PIPELINE_WARMUP (throughput), and for postgres
 * BENCH_PIPELINE_URL (the engine's fresh database) and BENCH_PIPELINE_DIRECT_URL (throughput:
 * the baseline's); BENCH_PIPELINE_BATCH and BENCH_PIPELINE_TMPDIR as for the parent. The result
 * goes back over IPC as a {@link CaseReport}.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { postgresStorage, sqliteStorage, type StorageConfig } from '@ferry/core';
import { engineContext, openStorage } from '@ferry/core/internal';
import { directWrite, drainThroughEngine, envCount, kernelPeakMb, loggedRows, mb, sqliteTempDir, startBenchEngine, THROUGHPUT_ROUNDS, type DrainResult } from './drain.js';

/** What a `throughput` case process reports. */
export interface ThroughputReport {
  case: 'throughput';
  /** Events each side wrote, warm-up excluded. */
  events: number;
  /** Seconds the pipeline's drains took, all rounds together. */
  pipelineSeconds: number;
  /** Seconds the direct writes took, all rounds together. */
  directSeconds: number;
  /** Each round's events/s, pipeline and direct, in round order: the spread behind the totals. */
  rounds: { pipeline: number; direct: number }[];
}

/** What a `drain` case process reports. */
export interface DrainReport {
  case: 'drain';
  drain: DrainResult;
  /** The kernel's high-water mark of this process's RSS (getrusage), in MB: a check on the parent's sampling. */
  kernelPeakMb: number;
  /** RSS once the engine had started, before the drain, in MB. */
  startRssMb: number;
}

/** What a case process sends its parent when it is done. */
export type CaseReport = ThroughputReport | DrainReport;

const kase = process.env.BENCH_PIPELINE_CASE;
const dialect = process.env.BENCH_PIPELINE_DIALECT;
const count = envCount('BENCH_PIPELINE_COUNT', 200_000);
if (typeof process.send !== 'function') throw new Error('case-child.ts runs as a child of pipeline.bench.ts (with an IPC channel)');
if (dialect !== 'sqlite' && dialect !== 'postgres') throw new Error(`BENCH_PIPELINE_DIALECT must be sqlite or postgres, got ${JSON.stringify(dialect)}`);

const dir = dialect === 'sqlite' ? sqliteTempDir() : undefined;

/** The case's storage named `name`: a file in this process's directory, or the database the parent made. */
function storageFor(name: 'engine' | 'direct'): StorageConfig {
  if (dir) return sqliteStorage({ filename: join(dir, `${name}.db`) });
  const variable = name === 'engine' ? 'BENCH_PIPELINE_URL' : 'BENCH_PIPELINE_DIRECT_URL';
  const url = process.env[variable];
  if (!url) throw new Error(`${variable} is required for postgres`);
  return postgresStorage({ connectionString: url });
}

/**
 * The pipeline's drains on one fresh database and the direct writes of the same rows on another,
 * in alternating rounds of an equal share of the events: the two tables grow alike, and a slow
 * stretch of the machine (on the project's VMs the same work varied by a third from one run to
 * the next) falls on both sides instead of on whichever ran second. Each round's direct side
 * writes the rows its pipeline side just wrote (read back untimed, see `loggedRows`), so it runs
 * second; a gc() before each side keeps one's garbage off the other's clock. Both first move a
 * discarded warm-up (JIT, statement caches, the first pages of each index).
 */
async function throughput(): Promise<ThroughputReport> {
  const warmup = envCount('BENCH_PIPELINE_WARMUP', 10_000);
  const roundCount = Math.min(THROUGHPUT_ROUNDS, count);
  const bench = await startBenchEngine(storageFor('engine'));
  try {
    const storage = await openStorage(storageFor('direct'));
    try {
      // The same work in the same order as a measured round, with nothing measured.
      const warm = await drainThroughEngine(bench, 'warmup', warmup);
      await directWrite(storage, warm.pipelineId, await loggedRows(engineContext(bench.engine).storage, warm.pipelineId));
      let pipelineSeconds = 0;
      let directSeconds = 0;
      const rounds: ThroughputReport['rounds'] = [];
      for (let r = 0; r < roundCount; r++) {
        const events = Math.floor(count / roundCount) + (r < count % roundCount ? 1 : 0);
        globalThis.gc?.();
        const drained = await drainThroughEngine(bench, `round-${r}`, events);
        const rows = await loggedRows(engineContext(bench.engine).storage, drained.pipelineId);
        globalThis.gc?.();
        const seconds = await directWrite(storage, drained.pipelineId, rows);
        pipelineSeconds += drained.seconds;
        directSeconds += seconds;
        rounds.push({ pipeline: events / drained.seconds, direct: events / seconds });
      }
      return { case: 'throughput', events: count, pipelineSeconds, directSeconds, rounds };
    } finally {
      await storage.close();
    }
  } finally {
    await bench.engine.stop();
  }
}

/** One drain through one engine, for the parent to watch the RSS of. */
async function drain(): Promise<DrainReport> {
  const bench = await startBenchEngine(storageFor('engine'));
  try {
    globalThis.gc?.();
    const startRssMb = mb(process.memoryUsage.rss());
    const result = await drainThroughEngine(bench, 'backlog', count);
    return { case: 'drain', drain: result, kernelPeakMb: kernelPeakMb(), startRssMb };
  } finally {
    await bench.engine.stop();
  }
}

try {
  let report: CaseReport;
  if (kase === 'throughput') report = await throughput();
  else if (kase === 'drain') report = await drain();
  else throw new Error(`BENCH_PIPELINE_CASE must be throughput or drain, got ${JSON.stringify(kase)}`);
  await new Promise<void>((resolve, reject) => process.send!(report, (error: Error | null) => (error ? reject(error) : resolve())));
} finally {
  if (dir) rmSync(dir, { recursive: true, force: true });
  process.disconnect?.();
}

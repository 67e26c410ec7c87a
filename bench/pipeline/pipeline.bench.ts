/**
 * What a pipeline costs on top of the storage work it cannot avoid. A pass-through streaming
 * pipeline (memory source to memory destination, no transforms, event log on) drains a
 * generated backlog of small orders (about 100 bytes of JSON each), in batches of
 * BENCH_PIPELINE_BATCH (default 1,000), on SQLite (a file, WAL) and Postgres (embedded, or
 * DATABASE_URL), each case on fresh databases:
 *  - `<dialect>: throughput`: events/s through the pipeline for BENCH_PIPELINE_EVENTS events
 *    (default 200,000), against the direct write of the same event-log rows (read back from the
 *    pipeline's log) into a fresh log, batch by batch, with `events.append` +
 *    `checkpoints.put` in one `storage.transaction` and no engine around them: the ratio is what
 *    the engine keeps of the storage's speed. The sides take turns in five rounds of a fifth of
 *    the events, after a discarded warm-up of 10,000 events; the rounds' rates go to stderr.
 *  - `<dialect>: peak_rss_1m`: the peak RSS, in MB, of a process draining BENCH_PIPELINE_BACKLOG
 *    events (default 1,000,000) through one engine, sampled every 50 ms; `<dialect>: peak_rss_1m
 *    drain` is the events/s of that drain. The process runs plain Node on the packages' builds,
 *    as `ferry serve` does (built first when missing or stale; this directory's two files are
 *    transpiled for it); its RSS before the first event is printed on stderr. BENCH_PIPELINE_CASES (`throughput,rss`) picks the cases.
 *
 * Every case runs in a process of its own (case-child.ts, with the flags `npm run bench` gives
 * this one): the RSS is the case's alone, and its time is bounded from here, by a kill past the
 * drain deadlines of drain.ts (the time of 5,000 events/s, at least a minute each). This process
 * starts the Postgres server, makes the databases, samples the RSS and prints every line.
 * SQLite files go to memory-backed /dev/shm like the embedded Postgres's data (on the disk the
 * SQLite figures varied by a third from run to run; BENCH_PIPELINE_TMPDIR=/tmp measures there).
 *
 * Targets on the project's 2-core machine: >= 80,000 events/s on each dialect, a peak RSS under
 * 300 MB for 1,000,000 events. A run takes about three minutes, mostly the two 1,000,000 drains.
 * On a SQLite file the engine commits on its writer thread (a second core) while the direct
 * writes run on the main thread, as an embedder's own code would: the ratio can pass 1.
 */
import { fork, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { clearInterval, setInterval } from 'node:timers';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { startTestPostgres, type TestPostgres } from '@ferry/test-servers';
import { emit } from '../emit.js';
import type { CaseReport, DrainReport, ThroughputReport } from './case-child.js';
import { BATCH_SIZE, drainDeadlineMs, envCount, mb, THROUGHPUT_ROUNDS } from './drain.js';

const EVENTS = envCount('BENCH_PIPELINE_EVENTS', 200_000);
const BACKLOG = envCount('BENCH_PIPELINE_BACKLOG', 1_000_000);
/** Enough batches for the JIT, the statement caches and the first index pages to settle; discarded. */
const WARMUP = 10_000;
/** The flags `npm run bench` gives every benchmark, spelled out so a case gets them however this file was started. */
const NODE_FLAGS = ['--import', 'tsx', '--conditions=ferry-source', '--expose-gc'];
/**
 * The peak-RSS case runs the engine as it ships: plain Node on the packages' builds (dist), as
 * `ferry serve` does. tsx alone held 70 to 100 MB more (its loader thread, the sources it
 * compiled in memory), so the case's two files are transpiled once, without it (see {@link builtChild}).
 */
const BUILT_FLAGS = ['--expose-gc'];
/** Which cases run: `throughput`, `rss` (BENCH_PIPELINE_CASES, default both). */
const CASES = (process.env.BENCH_PIPELINE_CASES ?? 'throughput,rss').split(',').filter(Boolean);
const CASE_CHILD = fileURLToPath(new URL('./case-child.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Start-up, migrations and shutdown of a case process, on top of its drains. */
const CASE_OVERHEAD_MS = 60_000;

type Dialect = 'sqlite' | 'postgres';

/**
 * The RSS of process `pid` in bytes, read from /proc (Linux): from outside, so the sampling does
 * not depend on the case's event loop running timers while it drains (see drain.ts) and adds
 * nothing to the RSS it measures. Undefined once the process is gone or where there is no /proc.
 */
function rssOf(pid: number): number | undefined {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** A finished case process: its report, and the highest RSS sampled from here (bytes; 0 without /proc). */
interface CaseRun<R extends CaseReport> {
  report: R;
  sampledPeak: number;
}

/** Runs one case in its own process, killed past `budgetMs`, sampling its RSS every 50 ms. */
/**
 * case-child.ts and drain.ts as plain JavaScript, for Node without tsx, in a directory under
 * node_modules (where `@ferry/*` resolve to their builds, which are made first when missing or
 * stale). Returns the case child's path.
 */
function builtChild(): string {
  const built = spawnSync('npx', ['turbo', 'run', 'build', '--filter=@ferry/testing...', '--output-logs=errors-only'], {
    cwd: ROOT,
    stdio: ['ignore', 2, 2],
    // ESM without declarations: what running needs (tsup.base.ts).
    env: { ...process.env, FERRY_BUILD: 'run', TURBO_TELEMETRY_DISABLED: '1', TURBO_NO_UPDATE_NOTIFIER: '1', DO_NOT_TRACK: '1' },
  });
  if (built.status !== 0) throw new Error('building @ferry/testing and what it needs failed');
  const out = join(ROOT, 'node_modules/.cache/ferry-bench-pipeline');
  mkdirSync(out, { recursive: true });
  for (const name of ['case-child', 'drain']) {
    const source = readFileSync(fileURLToPath(new URL(`./${name}.ts`, import.meta.url)), 'utf8');
    const { outputText } = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: false } });
    writeFileSync(join(out, `${name}.js`), outputText);
  }
  writeFileSync(join(out, 'package.json'), '{ "type": "module" }\n');
  return join(out, 'case-child.js');
}

function runCase<R extends CaseReport>(label: string, env: Record<string, string>, budgetMs: number, execArgv = NODE_FLAGS, childPath = CASE_CHILD): Promise<CaseRun<R>> {
  return new Promise((resolve, reject) => {
    const child = fork(childPath, [], {
      execArgv,
      env: { ...process.env, BENCH_PIPELINE_BATCH: String(BATCH_SIZE), ...env },
      // stdout stays this process's: only it prints result lines. stderr shows a case's failure.
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    let report: R | undefined;
    let sampledPeak = 0;
    const sampler = setInterval(() => {
      const rss = child.pid === undefined ? undefined : rssOf(child.pid);
      if (rss !== undefined && rss > sampledPeak) sampledPeak = rss;
    }, 50);
    let killed = false;
    const killer = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, budgetMs);
    child.on('message', (message) => {
      report = message as R;
    });
    child.on('error', (error) => {
      clearInterval(sampler);
      clearTimeout(killer);
      reject(error);
    });
    child.on('exit', (code, signal) => {
      clearInterval(sampler);
      clearTimeout(killer);
      if (code === 0 && report) resolve({ report, sampledPeak });
      else if (killed) reject(new Error(`${label}: killed after ${Math.round(budgetMs / 1000)} s, past its deadline`));
      else reject(new Error(`${label}: the case process exited with ${code ?? signal}${report ? '' : ' without a report'}`));
    });
  });
}

/** The throughput case of one dialect; `urls` are the fresh Postgres databases of the engine and the baseline. */
async function throughput(dialect: Dialect, urls?: { engine: string; direct: string }): Promise<void> {
  // Every round of each side has a deadline of its own, and so has each warm-up.
  const budget = 2 * (THROUGHPUT_ROUNDS * drainDeadlineMs(EVENTS / THROUGHPUT_ROUNDS) + drainDeadlineMs(WARMUP)) + CASE_OVERHEAD_MS;
  const { report } = await runCase<ThroughputReport>(`${dialect}: throughput`, {
    BENCH_PIPELINE_CASE: 'throughput',
    BENCH_PIPELINE_DIALECT: dialect,
    BENCH_PIPELINE_COUNT: String(EVENTS),
    BENCH_PIPELINE_WARMUP: String(WARMUP),
    ...(urls ? { BENCH_PIPELINE_URL: urls.engine, BENCH_PIPELINE_DIRECT_URL: urls.direct } : {}),
  }, budget);
  const spread = report.rounds.map((r) => `${Math.round(r.pipeline)}/${Math.round(r.direct)}`).join(', ');
  console.error(`pipeline ${dialect}: throughput rounds, pipeline/direct events/s: ${spread}`);
  emit('pipeline', `${dialect}: throughput`, report.events / report.pipelineSeconds, 'events/s', report.events / report.directSeconds);
}

/** The peak-RSS case of one dialect, run by `child` (see {@link builtChild}); `url` is its fresh Postgres database. */
async function peakRss(dialect: Dialect, child: string, url?: string): Promise<void> {
  const { report, sampledPeak } = await runCase<DrainReport>(`${dialect}: peak_rss_1m`, {
    BENCH_PIPELINE_CASE: 'drain',
    BENCH_PIPELINE_DIALECT: dialect,
    BENCH_PIPELINE_COUNT: String(BACKLOG),
    ...(url ? { BENCH_PIPELINE_URL: url } : {}),
  }, drainDeadlineMs(BACKLOG) + CASE_OVERHEAD_MS, BUILT_FLAGS, child);
  // Without /proc there are no samples: the kernel's own high-water mark stands in for them.
  const peakMb = sampledPeak > 0 ? mb(sampledPeak) : report.kernelPeakMb;
  const { drain } = report;
  console.error(
    `pipeline ${dialect}: peak_rss_1m sampled ${peakMb.toFixed(1)} MB (kernel high-water mark ${report.kernelPeakMb.toFixed(1)} MB, ` +
      `${report.startRssMb.toFixed(1)} MB before the drain); ${drain.events} events in ${drain.seconds.toFixed(1)} s, ` +
      `${drain.delivered} deliveries over ${drain.runs} run(s)`,
  );
  emit('pipeline', `${dialect}: peak_rss_1m`, peakMb, 'MB');
  emit('pipeline', `${dialect}: peak_rss_1m drain`, drain.events / drain.seconds, 'events/s');
}

let server: TestPostgres | undefined;
try {
  console.error(`pipeline: ${EVENTS} events per throughput case, ${BACKLOG} for peak_rss_1m, batches of ${BATCH_SIZE}`);
  server = await startTestPostgres();
  if (CASES.includes('throughput')) {
    await throughput('sqlite');
    await throughput('postgres', { engine: await server.createDatabase('pipeline'), direct: await server.createDatabase('direct') });
  }
  if (CASES.includes('rss')) {
    const child = builtChild();
    await peakRss('sqlite', child);
    await peakRss('postgres', child, await server.createDatabase('backlog'));
  }
} finally {
  await server?.stop();
}

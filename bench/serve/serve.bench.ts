/**
 * What `ferry serve` costs before it does any work: the time from launching the built server
 * (`node packages/server/dist/main.js serve`, what `npm start` runs) to its first 200 on
 * `GET /healthz`, and its resident memory once idle (VmRSS two seconds after that answer), on a
 * SQLite file. The baseline is the least a server of this kind does (./bare-server.mjs: Fastify
 * and better-sqlite3, one table, `/healthz` after `select 1`), launched and measured the same way.
 *
 * Each side is started BENCH_SERVE_ROUNDS times (default 5), taking turns, on a database created
 * by a first, discarded start; the medians are reported. Lower is better here: a ratio above 1 is
 * what Ferry costs more than the bare server. Goals on the project's 2-core machine: under 1 s
 * to `/healthz` and under 120 MB idle. The server is built first when its build is missing or
 * stale (scripts/ensure-built.mjs). Bounded: each start has 30 s to answer.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { emit } from '../emit.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ROUNDS = Number(process.env.BENCH_SERVE_ROUNDS ?? 5);
const START_LIMIT_MS = 30_000;
const IDLE_MS = 2_000;

interface Sample {
  startMs: number;
  rssMb: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Launches `args`, waits for its first 200 on /healthz, then for it to idle, and stops it. */
async function sample(label: string, args: string[]): Promise<Sample> {
  const started = performance.now();
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, FERRY_LOG_LEVEL: 'warn' } });
  try {
    let output = '';
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${label}: no address within ${START_LIMIT_MS} ms: ${output}`)), START_LIMIT_MS);
      const read = (chunk: Buffer) => {
        output += chunk;
        const match = /serving on (http:\/\/\S+?)["\s]/.exec(output);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]!);
        }
      };
      child.stdout.on('data', read);
      child.stderr.on('data', read);
      child.on('exit', (code) => reject(new Error(`${label} exited (${code}): ${output}`)));
    });
    for (;;) {
      const ok = await fetch(`${url}/healthz`).then((r) => r.status === 200, () => false);
      if (ok) break;
      if (performance.now() - started > START_LIMIT_MS) throw new Error(`${label}: /healthz did not answer 200`);
      await sleep(5);
    }
    const startMs = performance.now() - started;
    await sleep(IDLE_MS);
    const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
    const rssMb = Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
    return { startMs, rssMb };
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await Promise.race([exited, sleep(10_000)]);
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const built = spawnSync(process.execPath, [join(ROOT, 'scripts/ensure-built.mjs')], { stdio: 'inherit' });
if (built.status !== 0) throw new Error('building the server failed');

const dir = mkdtempSync(join(tmpdir(), 'ferry-bench-serve-'));
try {
  const ferryArgs = [join(ROOT, 'packages/server/dist/main.js'), 'serve', '--port', '0', '--database', join(dir, 'ferry.db')];
  const bareArgs = [fileURLToPath(new URL('bare-server.mjs', import.meta.url)), join(dir, 'bare.db')];
  // The first starts create the databases (and Ferry's secret key file): not what is measured.
  await sample('ferry serve (setup)', ferryArgs);
  await sample('bare server (setup)', bareArgs);
  const ferry: Sample[] = [];
  const bare: Sample[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    ferry.push(await sample('ferry serve', ferryArgs));
    bare.push(await sample('bare server', bareArgs));
    console.error(`round ${round + 1}: ferry ${ferry.at(-1)!.startMs.toFixed(0)} ms ${ferry.at(-1)!.rssMb.toFixed(0)} MB; bare ${bare.at(-1)!.startMs.toFixed(0)} ms ${bare.at(-1)!.rssMb.toFixed(0)} MB`);
  }
  emit('serve', 'start to /healthz', median(ferry.map((s) => s.startMs)), 'ms', median(bare.map((s) => s.startMs)));
  emit('serve', 'idle RSS', median(ferry.map((s) => s.rssMb)), 'MB', median(bare.map((s) => s.rssMb)));
} finally {
  rmSync(dir, { recursive: true, force: true });
}

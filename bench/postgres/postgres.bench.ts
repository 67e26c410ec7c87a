/**
 * Postgres to Postgres through the engine, against a bare COPY of the same rows in the same run.
 * One embedded Postgres (or DATABASE_URL); a data database holds `source_rows (id bigint primary
 * key, note text, amount int, created_at timestamptz)` with BENCH_POSTGRES_ROWS rows (default
 * 1,000,000, made by generate_series, about 60 bytes of row each):
 *  - `bare: copy`: rows/s of `COPY (SELECT ...) TO STDOUT` on one connection piped (pg-copy-streams,
 *    `stream.pipeline`, so backpressure bounds the memory) into `COPY landed FROM STDIN` on
 *    another, into a table of the destination's default layout `(id text primary key, type text,
 *    occurred_at timestamptz, payload jsonb)`. The SELECT builds the rows the pipeline writes: an
 *    id as long as the engine's (`evt_` and 26 characters), the type `row.copied`, `created_at`
 *    as occurred_at and the row as a jsonb object (with the source connector's text forms: int8
 *    as a string, timestamptz as ISO; stderr shows one row of each case). Timed to the
 *    COPY FROM's end, i.e. committed.
 *  - `pipeline (engine on postgres|sqlite)`: events/s of a streaming pipeline (@ferry/postgres
 *    source on `source_rows`, cursor `id`, `occurred_at_column` created_at, batches of
 *    BENCH_POSTGRES_BATCH, default 1,000; @ferry/postgres destination into an empty `landed`),
 *    with the engine's storage (and so its event log) on another database of the same Postgres,
 *    or on a SQLite file in /dev/shm. Timed from the activation of the pipeline until its run
 *    counts every row written and committed (heard from `engine.runs$`, a snapshot per committed
 *    batch, so exact to the last commit: a poll would be up to its interval late, and a
 *    `count(*)` of `landed` would scan the growing table on the server being measured), then
 *    `SELECT count(*) FROM landed` must show every row; a case that has not finished in
 *    BENCH_POSTGRES_DEADLINE_S seconds (default 900) fails. stderr shows the CPU the engine's
 *    process and the Postgres server's processes used per row, and how busy the engine's event loop
 *    was (per row, and as a share of the time: near 100 % it is the engine's main thread that sets the pace).
 * After an untimed copy and an untimed engine run (warm-up), each engine case runs in
 * BENCH_POSTGRES_REPEAT turns (default 3), each turn a bare copy then the engine, on an engine
 * storage of its own: the machine's speed drifts by a third within minutes, and a ratio against
 * one copy measured once moved by a fifth from run to run. Each case emits the median of its
 * copies (`bare: copy (before <case>), median of N`) and the median of its turns, with the
 * copies' median as its baseline; stderr has every turn's figures and ratio.
 * Each turn starts from an empty `landed`, truncated and vacuumed in between. The engine runs in
 * this process on the system clock; the data and the copy are in the Postgres server's processes.
 * `transforms` is the engine on SQLite again, with three steps (a filter every row passes, a
 * rename, a hash of the renamed field). `batch<N>` is the engine on SQLite with batches of N
 * (source reads, pipeline batches and so destination COPYs and event-log commits), against the
 * `sqlite` case's BENCH_POSTGRES_BATCH. BENCH_POSTGRES_CASES (default
 * `postgres,sqlite,transforms,batch100,batch5000`) picks the engine cases. The issue's targets: the pass-through at least 0.8 of the bare copy's
 * rows/s, with three steps at least 0.6.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pipeline as streamPipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';
import { createEngine, generateSecretKey, postgresStorage, sqliteStorage, type StorageConfig, type TransformStep } from '@ferry/core';
import { postgres } from '@ferry/postgres';
import { startTestPostgres, type TestPostgres } from '@ferry/test-servers';
import { emit } from '../emit.js';
import { serverCpuSeconds } from '../server-cpu.js';

const ROWS = Number(process.env.BENCH_POSTGRES_ROWS ?? 1_000_000);
const BATCH = Number(process.env.BENCH_POSTGRES_BATCH ?? 1000);
const DEADLINE_MS = Number(process.env.BENCH_POSTGRES_DEADLINE_S ?? 900) * 1000;
const REPEAT = Math.max(1, Number(process.env.BENCH_POSTGRES_REPEAT ?? 3));
const CASES = (process.env.BENCH_POSTGRES_CASES ?? 'postgres,sqlite,transforms,batch100,batch5000').split(',').filter(Boolean);
/** The `transforms` case's steps: a filter every row passes, a rename, and a hash of the renamed field. */
const TRANSFORMS: TransformStep[] = [
  { type: 'filter', path: 'amount', op: 'gte', value: 0 },
  { type: 'rename', from: 'note', to: 'memo' },
  { type: 'mask', path: 'memo' },
];
const WS = 'bench';

const log = (message: string) => console.error(`postgres bench: ${message}`);

const LANDED = 'CREATE TABLE landed (id text PRIMARY KEY, type text NOT NULL, occurred_at timestamptz NOT NULL, payload jsonb)';

/** The rows the pipeline writes, built by the server: the payload has the source's text forms. */
const COPY_SELECT = `SELECT 'evt_' || lpad(id::text, 26, '0') AS id, 'row.copied' AS type, created_at AS occurred_at,
  json_build_object('id', id::text, 'note', note, 'amount', amount,
    'created_at', to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::jsonb AS payload
  FROM source_rows ORDER BY id`;

async function landedCount(admin: pg.Pool): Promise<number> {
  return Number((await admin.query('SELECT count(*) AS n FROM landed')).rows[0].n);
}

/** One landed row on stderr, to compare what the copy and the pipeline wrote. */
async function sample(admin: pg.Pool, what: string): Promise<void> {
  const row = (await admin.query("SELECT id, type, occurred_at, payload::text AS payload FROM landed WHERE payload->>'id' = '2'")).rows[0];
  log(`${what}: row 2 landed as ${JSON.stringify(row)}`);
}

async function emptyLanded(admin: pg.Pool): Promise<void> {
  await admin.query('DROP TABLE IF EXISTS landed');
  await admin.query(LANDED);
  await admin.query('CHECKPOINT');
}

/** The bare copy: COPY TO STDOUT on one connection, piped into COPY FROM STDIN on another. */
async function bareCopy(dataUrl: string, admin: pg.Pool): Promise<number> {
  await emptyLanded(admin);
  const reader = new pg.Client({ connectionString: dataUrl });
  const writer = new pg.Client({ connectionString: dataUrl });
  await reader.connect();
  await writer.connect();
  try {
    const serverCpu = serverCpuSeconds();
    const started = performance.now();
    await streamPipeline(reader.query(copyTo(`COPY (${COPY_SELECT}) TO STDOUT`)), writer.query(copyFrom('COPY landed (id, type, occurred_at, payload) FROM STDIN')));
    const seconds = (performance.now() - started) / 1000;
    const n = await landedCount(admin);
    if (n !== ROWS) throw new Error(`bare copy: ${n} rows landed, expected ${ROWS}`);
    log(`bare copy: ${ROWS} rows in ${seconds.toFixed(1)} s; Postgres server CPU ${(((serverCpuSeconds() - serverCpu) * 1e6) / ROWS).toFixed(0)} µs per row`);
    await sample(admin, 'bare copy');
    return ROWS / seconds;
  } finally {
    await reader.end();
    await writer.end();
  }
}

/** One turn of an engine case: a streaming pipeline source_rows -> landed, timed until every row is there; resolves with its rows/s. */
async function engineCase(name: string, storage: StorageConfig, dataUrl: string, admin: pg.Pool, transforms: TransformStep[] = [], batch = BATCH): Promise<number> {
  await emptyLanded(admin);
  const engine = await createEngine({ storage, secretKey: generateSecretKey(), plugins: [postgres()], webhookDelivery: false, outboundAllow: ['127.0.0.1', 'localhost'] });
  await engine.start();
  try {
    const source = await engine.connectors.create(WS, {
      type: 'postgres',
      direction: 'source',
      config: { connection_string: dataUrl, table: 'source_rows', cursor_column: 'id', occurred_at_column: 'created_at', type: 'row.copied', batch_size: batch },
    });
    const destination = await engine.connectors.create(WS, { type: 'postgres', direction: 'destination', config: { connection_string: dataUrl, table: 'landed' } });
    const pipeline = await engine.pipelines.create(WS, { name: 'copy', source_connector_id: source.id, destination_connector_id: destination.id, batch_size: batch, transforms });
    // Done when the run's counters (engine.runs$, a snapshot per committed batch) count every
    // row written: exact to the commit, where polling would add up to a poll's interval.
    const written = new Map<string, number>();
    let reported = 0;
    let n = 0;
    const done = new Promise<void>((resolve, reject) => {
      const subscription = engine.runs$(WS, pipeline.id).subscribe({
        next: (run) => {
          written.set(run.id, run.events_written);
          n = [...written.values()].reduce((sum, w) => sum + w, 0);
          if (n >= ROWS) {
            subscription.unsubscribe();
            resolve();
          }
        },
        error: reject,
      });
    });
    const cpu = process.cpuUsage();
    const serverCpu = serverCpuSeconds();
    const loop = performance.eventLoopUtilization();
    const started = performance.now();
    await engine.pipelines.activate(WS, pipeline.id);
    const progress = setInterval(() => {
      reported += 10;
      log(`${name}: ${n} rows after ${reported} s, rss ${(process.memoryUsage().rss / 1e6).toFixed(0)} MB`);
    }, 10_000);
    let deadline: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        done,
        new Promise((_, reject) => (deadline = setTimeout(() => reject(new Error(`${name}: only ${n} of ${ROWS} rows landed after ${DEADLINE_MS / 1000} s`)), DEADLINE_MS))),
      ]);
    } finally {
      clearInterval(progress);
      clearTimeout(deadline);
    }
    const seconds = (performance.now() - started) / 1000;
    const used = process.cpuUsage(cpu);
    const busy = performance.eventLoopUtilization(loop);
    const server = serverCpuSeconds() - serverCpu;
    n = await landedCount(admin);
    if (n !== ROWS) throw new Error(`${name}: ${n} rows landed, expected ${ROWS}`);
    log(
      `${name}: ${ROWS} rows in ${seconds.toFixed(1)} s; engine process CPU ${((used.user + used.system) / ROWS).toFixed(0)} µs per row, ` +
        `${((used.user + used.system) / 1e4 / seconds).toFixed(0)} % of a core; its event loop busy ${((busy.active * 1000) / ROWS).toFixed(1)} µs per row, ` +
        `${(busy.utilization * 100).toFixed(0)} % of the time; Postgres server CPU ${((server * 1e6) / ROWS).toFixed(0)} µs per row, ` +
        `${((server * 100) / seconds).toFixed(0)} % of a core; rss ${(process.memoryUsage().rss / 1e6).toFixed(0)} MB`,
    );
    await sample(admin, name);
    return ROWS / seconds;
  } finally {
    await engine.stop();
  }
}

/** The middle value (the mean of the two middle ones for an even count). */
function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

let server: TestPostgres | undefined;
let admin: pg.Pool | undefined;
const shmDirs: string[] = [];
try {
  server = await startTestPostgres();
  const dataUrl = await server.createDatabase('bench_postgres_data');
  admin = new pg.Pool({ connectionString: dataUrl, max: 2 });
  admin.on('error', () => undefined); // an idle client told of the server's shutdown
  await admin.query('CREATE TABLE source_rows (id bigint PRIMARY KEY, note text NOT NULL, amount int NOT NULL, created_at timestamptz NOT NULL)');
  await admin.query(
    `INSERT INTO source_rows SELECT g, 'row ' || g || ' of the bench', ((g::bigint * 7919) % 100000)::int, timestamptz '2026-01-01 00:00:00+00' + g * interval '1 second' FROM generate_series(1, ${ROWS}) AS g`,
  );
  await admin.query('VACUUM ANALYZE source_rows');
  log(`${ROWS} source rows, batches of ${BATCH}`);

  // Warm-up: the server's caches and the client's code paths, the copy's and the engine's (its
  // first turn ran at three quarters of the later ones); not reported.
  await bareCopy(dataUrl, admin);
  const warm = mkdtempSync('/dev/shm/ferry-bench-postgres-');
  shmDirs.push(warm);
  await engineCase('warm-up', sqliteStorage({ filename: join(warm, 'ferry.db') }), dataUrl, admin);

  for (const kase of CASES) {
    const sqlite = () => {
      const dir = mkdtempSync('/dev/shm/ferry-bench-postgres-');
      shmDirs.push(dir);
      return sqliteStorage({ filename: join(dir, 'ferry.db') });
    };
    let name: string;
    let turn: (storage: StorageConfig) => Promise<number>;
    let storageOf: (k: number) => Promise<StorageConfig>;
    if (kase === 'postgres') {
      name = 'engine on postgres';
      turn = (storage) => engineCase(name, storage, dataUrl, admin!);
      storageOf = async (k) => postgresStorage({ connectionString: await server!.createDatabase(`bench_postgres_engine_${k}`) });
    } else if (kase === 'sqlite' || kase === 'transforms' || /^batch\d+$/.test(kase)) {
      const batch = kase.startsWith('batch') ? Number(kase.slice('batch'.length)) : BATCH;
      name = kase === 'sqlite' ? 'engine on sqlite' : kase === 'transforms' ? 'engine on sqlite, filter + rename + mask' : `engine on sqlite, batches of ${batch}`;
      turn = (storage) => engineCase(name, storage, dataUrl, admin!, kase === 'transforms' ? TRANSFORMS : [], batch);
      storageOf = async () => sqlite();
    } else {
      throw new Error(`unknown BENCH_POSTGRES_CASES entry ${kase}`);
    }
    const bares: number[] = [];
    const rates: number[] = [];
    for (let k = 0; k < REPEAT; k++) {
      bares.push(await bareCopy(dataUrl, admin));
      rates.push(await turn(await storageOf(k)));
      log(`${name}, turn ${k + 1}: bare copy ${bares[k]!.toFixed(0)} rows/s, engine ${rates[k]!.toFixed(0)} rows/s, ratio ${(rates[k]! / bares[k]!).toFixed(3)}`);
    }
    const suffix = REPEAT > 1 ? `, median of ${REPEAT}` : '';
    emit('postgres', `bare: copy (before ${name})${suffix}`, median(bares), 'rows/s');
    emit('postgres', `pipeline (${name})${suffix}`, median(rates), 'events/s', median(bares));
  }
} finally {
  await admin?.end();
  await server?.stop();
  for (const dir of shmDirs) rmSync(dir, { recursive: true, force: true });
}

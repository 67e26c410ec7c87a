/**
 * Whether pipelines use more than one core: Postgres to Postgres streaming pipelines run by
 * engines in processes of their own (engine-child.ts, as `ferry serve --workers` starts them),
 * on one engine storage database of one embedded Postgres (or DATABASE_URL's server), with the
 * pipelines created and activated through an API-only engine (`runtime: false`) of this process.
 * Each pipeline copies the same BENCH_SCALING_ROWS rows (default 200,000, the rows of
 * bench/postgres) from `source_rows` into a `landed_<n>` table of its own, in batches of 1,000:
 *  - `one pipeline, one process`: the reference, rows/s;
 *  - `two pipelines, one process`: both pipelines in one engine; its ratio is to the reference;
 *  - `two pipelines, two processes`: one engine process each (the engines' stream share gives
 *    each one pipeline); its ratio is to the reference, the issue's goal being 1.6 on 2 cores;
 *  - `<N> pipelines, one process, the rows split between them` for each N of BENCH_SCALING_MANY
 *    (default `4,16`): the same rows as the reference in all, each pipeline a `query` source over
 *    an id range of its own; its ratio is to the reference (many small pipelines cost no more
 *    than one large one).
 * Each case runs on fresh engine storage and emptied destination tables, timed from the
 * activation until the runs count every row written (polled every 250 ms); then every landed
 * table must hold every row. stderr shows the CPU each engine process used, how busy the
 * machine's cores were (all processes) and how the pipelines were spread. Everything runs on the same cores: the engines, the Postgres server
 * (source reads, destination writes, the engines' event logs) and this process.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createEngine, generateSecretKey, postgresStorage } from '@ferry/core';
import { postgres } from '@ferry/postgres';
import { startTestPostgres, type TestPostgres } from '@ferry/test-servers';
import { emit } from '../emit.js';

const ROWS = Number(process.env.BENCH_SCALING_ROWS ?? 200_000);
/** Pipeline counts of the cases where one process runs many pipelines, each a share of the rows. */
const MANY = (process.env.BENCH_SCALING_MANY ?? '4,16').split(',').filter(Boolean).map(Number);
const BATCH = 1000;
const DEADLINE_MS = 600_000;
const POLL_MS = 250;
const WS = 'bench';
const NODE_FLAGS = ['--import', 'tsx', '--conditions=ferry-source'];
const CHILD = fileURLToPath(new URL('./engine-child.ts', import.meta.url));

const log = (message: string) => console.error(`scaling bench: ${message}`);

/**
 * The machine's CPU time so far, busy and in all, in clock ticks (the first line of /proc/stat):
 * how much of every core the case used, whoever used it (engines, the Postgres server, this
 * process). Zeros where there is no /proc.
 */
function machineTicks(): { busy: number; all: number } {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
    const all = fields.reduce((a, b) => a + b, 0);
    // idle and iowait are the 4th and 5th fields.
    return { busy: all - fields[3]! - fields[4]!, all };
  } catch {
    return { busy: 0, all: 0 };
  }
}

interface EngineProcess {
  child: ChildProcess;
  /** Resolves with the CPU the engine used between its start and its stop, in µs. */
  stop(): Promise<number>;
}

/** Starts one engine process on `storageUrl`; resolves once its engine runs. */
function startEngineProcess(storageUrl: string, secretKey: string): Promise<EngineProcess> {
  return new Promise((resolve, reject) => {
    const child = fork(CHILD, [], { execArgv: NODE_FLAGS, env: { ...process.env, BENCH_SCALING_STORAGE_URL: storageUrl, BENCH_SCALING_SECRET_KEY: secretKey }, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    child.once('exit', (code) => reject(new Error(`engine process exited with ${code} before it was ready`)));
    child.once('message', (message: { kind: string }) => {
      if (message.kind !== 'ready') return reject(new Error(`unexpected message ${JSON.stringify(message)}`));
      child.removeAllListeners('exit');
      resolve({
        child,
        stop: () =>
          new Promise<number>((done) => {
            child.once('message', (m: { kind: string; cpuMicros: number }) => done(m.cpuMicros));
            child.send({ kind: 'stop' });
          }),
      });
    });
  });
}

/**
 * One case: `pipelines` pipelines spread over `processes` engine processes; resolves rows/s of
 * all together. Each pipeline copies every row, or with `sliced` a slice of its own (a `query`
 * source over an id range), the rows in all then being the same as one pipeline's.
 */
async function runCase(server: TestPostgres, dataUrl: string, admin: pg.Pool, name: string, pipelines: number, processes: number, sliced = false): Promise<number> {
  const slice = (i: number) => (sliced ? { lo: Math.floor(((i - 1) * ROWS) / pipelines), hi: Math.floor((i * ROWS) / pipelines) } : { lo: 0, hi: ROWS });
  for (let i = 1; i <= pipelines; i++) {
    await admin.query(`DROP TABLE IF EXISTS landed_${i}`);
    await admin.query(`CREATE TABLE landed_${i} (id text PRIMARY KEY, type text NOT NULL, occurred_at timestamptz NOT NULL, payload jsonb)`);
  }
  const storageUrl = await server.createDatabase(`bench_scaling_${name.replace(/\W+/g, '_')}`);
  const secretKey = generateSecretKey();
  const api = await createEngine({ storage: postgresStorage({ connectionString: storageUrl }), secretKey, plugins: [postgres()], runtime: false, webhookDelivery: false, outboundAllow: ['127.0.0.1', 'localhost'] });
  await api.start();
  const engines: EngineProcess[] = [];
  try {
    for (let i = 0; i < processes; i++) engines.push(await startEngineProcess(storageUrl, secretKey));
    const ids: string[] = [];
    for (let i = 1; i <= pipelines; i++) {
      const source = await api.connectors.create(WS, {
        type: 'postgres',
        direction: 'source',
        config: {
          connection_string: dataUrl,
          ...(sliced ? { query: `SELECT * FROM source_rows WHERE id > ${slice(i).lo} AND id <= ${slice(i).hi}` } : { table: 'source_rows' }),
          cursor_column: 'id',
          occurred_at_column: 'created_at',
          type: 'row.copied',
          batch_size: BATCH,
        },
      });
      const destination = await api.connectors.create(WS, { type: 'postgres', direction: 'destination', config: { connection_string: dataUrl, table: `landed_${i}` } });
      ids.push((await api.pipelines.create(WS, { name: `copy-${i}`, source_connector_id: source.id, destination_connector_id: destination.id, batch_size: BATCH })).id);
    }
    const started = performance.now();
    const ticks = machineTicks();
    for (const id of ids) await api.pipelines.activate(WS, id);
    let total = 0;
    for (let i = 1; i <= pipelines; i++) total += slice(i).hi - slice(i).lo;
    const written = async () => {
      let sum = 0;
      for (const id of ids) for (const run of (await api.pipelines.listRuns(WS, id)).data) sum += run.events_written;
      return sum;
    };
    let n: number;
    while ((n = await written()) < total) {
      if (performance.now() - started > DEADLINE_MS) throw new Error(`${name}: only ${n} of ${total} rows after ${DEADLINE_MS / 1000} s`);
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    const seconds = (performance.now() - started) / 1000;
    const after = machineTicks();
    const busy = after.all > ticks.all ? (after.busy - ticks.busy) / (after.all - ticks.all) : 0;
    for (let i = 1; i <= pipelines; i++) {
      const landed = Number((await admin.query(`SELECT count(*) AS n FROM landed_${i}`)).rows[0].n);
      const expected = slice(i).hi - slice(i).lo;
      if (landed !== expected) throw new Error(`${name}: landed_${i} holds ${landed} rows, expected ${expected}`);
    }
    const spread = new pg.Client({ connectionString: storageUrl });
    await spread.connect();
    const byHolder = (await spread.query(`SELECT holder, count(*)::int AS n FROM leases WHERE name LIKE 'pipeline:%' GROUP BY holder`)).rows as { holder: string; n: number }[];
    await spread.end();
    const cpu = [];
    for (const engine of engines.splice(0)) cpu.push(await engine.stop());
    const rate = total / seconds;
    log(`${name}: ${total} rows in ${seconds.toFixed(1)} s (${Math.round(rate)} rows/s); pipelines per engine ${JSON.stringify(byHolder.map((h) => h.n))}; engine CPU ${cpu.map((c) => `${((c / 1e4) / seconds).toFixed(0)} %`).join(', ')} of a core; the machine's cores ${(busy * 100).toFixed(0)} % busy`);
    return rate;
  } finally {
    await Promise.all(engines.map((e) => e.stop()));
    await api.stop();
  }
}

let server: TestPostgres | undefined;
let admin: pg.Pool | undefined;
try {
  server = await startTestPostgres();
  const dataUrl = await server.createDatabase('bench_scaling_data');
  admin = new pg.Pool({ connectionString: dataUrl, max: 2 });
  admin.on('error', () => undefined);
  await admin.query('CREATE TABLE source_rows (id bigint PRIMARY KEY, note text NOT NULL, amount int NOT NULL, created_at timestamptz NOT NULL)');
  await admin.query(
    `INSERT INTO source_rows SELECT g, 'row ' || g || ' of the bench', ((g::bigint * 7919) % 100000)::int, timestamptz '2026-01-01 00:00:00+00' + g * interval '1 second' FROM generate_series(1, ${ROWS}) AS g`,
  );
  await admin.query('VACUUM ANALYZE source_rows');
  log(`${ROWS} source rows per pipeline`);
  const one = await runCase(server, dataUrl, admin, 'one pipeline, one process', 1, 1);
  emit('scaling', 'one pipeline, one process', one, 'rows/s');
  const twoInOne = await runCase(server, dataUrl, admin, 'two pipelines, one process', 2, 1);
  emit('scaling', 'two pipelines, one process', twoInOne, 'rows/s', one);
  const twoInTwo = await runCase(server, dataUrl, admin, 'two pipelines, two processes', 2, 2);
  emit('scaling', 'two pipelines, two processes', twoInTwo, 'rows/s', one);
  for (const many of MANY) {
    const name = `${many} pipelines, one process, the rows split between them`;
    emit('scaling', name, await runCase(server, dataUrl, admin, name, many, 1, true), 'rows/s', one);
  }
} finally {
  await admin?.end();
  await server?.stop();
}

/**
 * Postgres change capture: changes/s from commit to the destination, and commit-to-write
 * latency at a steady load, against a bare pgoutput reader in the same run. One embedded
 * Postgres (wal_level=logical); a table `accounts (id bigint primary key, note text, amount int)`.
 *
 *  - `bare: pgoutput reader`: changes/s of a replication connection (pg) reading a slot of its
 *    own with pgoutput, counting the insert messages and confirming at every commit: the wire
 *    speed of the slot, with no decoding of values and nothing written anywhere.
 *  - `pipeline (engine on sqlite|postgres): changes/s`: the engine (its storage, and so its event
 *    log, on a SQLite file in /dev/shm or another database of the same Postgres;
 *    BENCH_CDC_CASES picks, default both) with a `capture: "changes"` source on the same table and a destination that only
 *    counts and times (the engine's cost, not a destination's). Timed from activation until the
 *    destination has every change.
 *  In each case both drain the same backlog: BENCH_CDC_ROWS inserts (default 200,000) committed
 *  in transactions of 1,000 after every slot exists and before any reads. The machine's speed
 *  drifts by a third within minutes, so the two are measured in turns, BENCH_CDC_REPEAT times
 *  each (default 3; a slot and a pipeline for each turn), and the medians are compared.
 *  - `pipeline (...): commit_to_write p50|p99`: a writer commits rows for BENCH_CDC_SECONDS (default
 *    10) at half the pipeline's drain rate (BENCH_CDC_RATE overrides), in a transaction every
 *    10 ms; the destination records, per change, its arrival time minus the transaction's commit
 *    time (both on this machine's clock). The server runs with `synchronous_commit = on`, as a
 *    production server does (the test servers' default is off).
 * The issue's goals on this 2-core machine: at least 0.7 of the bare reader's rate, p99 under
 * 500 ms at half the maximum rate.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { Type } from '@sinclair/typebox';
import { createEngine, defineConnector, generateSecretKey, postgresStorage, sqliteStorage, type JsonObject, type StorageConfig } from '@ferry/core';
import { postgres } from '@ferry/postgres';
import { startTestPostgres } from '@ferry/test-servers';
import { emit } from '../emit.js';

const ROWS = Number(process.env.BENCH_CDC_ROWS ?? 200_000);
const SECONDS = Number(process.env.BENCH_CDC_SECONDS ?? 10);
const BATCH = 1000;
const REPEAT = Math.max(1, Number(process.env.BENCH_CDC_REPEAT ?? 3));
const CASES = (process.env.BENCH_CDC_CASES ?? 'sqlite,postgres').split(',').filter(Boolean);
const WS = 'bench';
const log = (message: string) => console.error(`cdc bench: ${message}`);

/** A destination that counts what it is given and how long after its commit each change came. */
const counter = { count: 0, latencies: [] as number[], timing: false };
const benchSink = defineConnector({
  type: 'bench_sink',
  version: '0.0.0',
  directions: ['destination'],
  configSchema: Type.Object({}),
  destination: () => ({
    write: async (events) => {
      counter.count += events.length;
      if (counter.timing) {
        const now = Date.now();
        for (const e of events) counter.latencies.push(now - Date.parse(String((e.payload.metadata as JsonObject).commit_time)));
      }
      return events.map(() => ({ ok: true as const }));
    },
  }),
});

/** Reads `slot` until `want` inserts came, confirming at each commit; resolves with the changes/s. */
async function bareReader(url: string, slot: string, publication: string, want: number): Promise<number> {
  const client = new pg.Client({ connectionString: url, replication: 'database' } as pg.ClientConfig);
  await client.connect();
  const connection = (client as unknown as { connection: { on(e: 'copyData', f: (m: { chunk: Buffer }) => void): void; sendCopyFromChunk(b: Buffer): void } }).connection;
  const started = performance.now();
  let inserts = 0;
  let rate = 0;
  await new Promise<void>((resolve, reject) => {
    connection.on('copyData', ({ chunk }) => {
      if (chunk[0] !== 0x77) return; // keepalives: nothing to count
      const tag = chunk[25];
      if (tag === 0x49 /* I */) inserts++;
      else if (tag === 0x43 /* C */) {
        // Confirm the commit's end LSN, as a consumer must.
        const status = Buffer.alloc(34);
        status[0] = 0x72;
        const end = chunk.readBigUInt64BE(25 + 1 + 1 + 8);
        status.writeBigUInt64BE(end, 1);
        status.writeBigUInt64BE(end, 9);
        status.writeBigUInt64BE(end, 17);
        connection.sendCopyFromChunk(status);
        if (inserts >= want) {
          rate = inserts / ((performance.now() - started) / 1000);
          resolve();
        }
      }
    });
    client.query(`START_REPLICATION SLOT "${slot}" LOGICAL 0/0 (proto_version '1', publication_names '"${publication}"')`).catch((e: unknown) => {
      if (rate === 0) reject(e);
    });
  });
  await client.end().catch(() => undefined);
  return rate;
}

function median(values: number[]): number {
  return percentile([...values].sort((a, b) => a - b), 50);
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

/** One engine case: a table, the bare slots and the pipelines' slots, the backlog, the drains in turns, the steady load. */
async function runCase(label: string, storage: StorageConfig, url: string): Promise<void> {
  counter.count = 0;
  counter.latencies = [];
  counter.timing = false;
  const db = new pg.Pool({ connectionString: url, max: 2 });
  db.on('error', () => undefined); // an idle client the server ends at shutdown is no failure
  await db.query('CREATE TABLE accounts (id bigint PRIMARY KEY, note text, amount int)');
  await db.query('CREATE PUBLICATION bench_bare FOR TABLE accounts');
  for (let turn = 0; turn < REPEAT; turn++) await db.query(`SELECT pg_create_logical_replication_slot('bench_bare_${turn}', 'pgoutput')`);

  const engine = await createEngine({ storage, secretKey: generateSecretKey(), plugins: [postgres(), benchSink], outboundAllow: ['127.0.0.1'], webhookDelivery: false });
  await engine.start();
  const source = await engine.connectors.create(WS, { type: 'postgres', direction: 'source', config: { connection_string: url, capture: 'changes', tables: ['accounts'], snapshot: 'never', batch_size: BATCH } });
  const sink = await engine.connectors.create(WS, { type: 'bench_sink', direction: 'destination', config: {} });
  const pipelines: string[] = [];
  for (let turn = 0; turn < REPEAT; turn++) {
    const pipeline = await engine.pipelines.create(WS, { name: `cdc ${turn}`, source_connector_id: source.id, destination_connector_id: sink.id, batch_size: BATCH, flush_interval_ms: 50, activate: true });
    const slot = `ferry_${pipeline.id.toLowerCase()}`;
    // The pipeline's slot exists once its source started; paused, it keeps the slot and reads nothing.
    const slotIs = async (active: boolean) => (await db.query('SELECT 1 FROM pg_replication_slots WHERE slot_name = $1 AND active = $2', [slot, active])).rows.length > 0;
    for (let i = 0; i < 1000 && !(await slotIs(true)); i++) await new Promise((r) => setTimeout(r, 20));
    await engine.pipelines.pause(WS, pipeline.id);
    for (let i = 0; i < 1000 && !(await slotIs(false)); i++) await new Promise((r) => setTimeout(r, 20));
    pipelines.push(pipeline.id);
  }

  log(`${label}: committing ${ROWS} inserts in transactions of ${BATCH}`);
  for (let from = 1; from <= ROWS; from += BATCH) {
    await db.query(`INSERT INTO accounts SELECT g, 'note ' || g, g % 1000 FROM generate_series($1::bigint, $2::bigint) g`, [from, Math.min(ROWS, from + BATCH - 1)]);
  }

  const bares: number[] = [];
  const rates: number[] = [];
  for (let turn = 0; turn < REPEAT; turn++) {
    bares.push(await bareReader(url, `bench_bare_${turn}`, 'bench_bare', ROWS));
    counter.count = 0;
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    await engine.pipelines.activate(WS, pipelines[turn]!);
    while (counter.count < ROWS) await new Promise((r) => setTimeout(r, 10));
    const seconds = (performance.now() - started) / 1000;
    rates.push(ROWS / seconds);
    const cpu = process.cpuUsage(cpuBefore);
    log(`${label}, turn ${turn + 1}: bare reader ${Math.round(bares[turn]!)}/s; the pipeline drained ${ROWS} changes in ${seconds.toFixed(1)} s (${Math.round(rates[turn]!)}/s), engine CPU ${((cpu.user + cpu.system) / ROWS).toFixed(1)} µs per change`);
    // The one left active takes the steady load.
    if (turn < REPEAT - 1) await engine.pipelines.pause(WS, pipelines[turn]!);
  }
  const bare = median(bares);
  const rate = median(rates);
  emit('cdc', `bare: pgoutput reader (${label}), median of ${REPEAT}`, bare, 'changes/s');
  emit('cdc', `pipeline (${label}): changes/s, median of ${REPEAT}`, rate, 'changes/s', bare);

  // Latency at a steady load: half the drain rate, a transaction every 10 ms.
  const target = Number(process.env.BENCH_CDC_RATE ?? Math.round(rate / 2));
  const perTick = Math.max(1, Math.round(target / 100));
  counter.timing = true;
  let next = ROWS + 1;
  const until = performance.now() + SECONDS * 1000;
  let tick = performance.now();
  while (performance.now() < until) {
    await db.query(`INSERT INTO accounts SELECT g, 'live', 1 FROM generate_series($1::bigint, $2::bigint) g`, [next, next + perTick - 1]);
    next += perTick;
    tick += 10;
    const wait = tick - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  const written = next - ROWS - 1;
  while (counter.latencies.length < written) await new Promise((r) => setTimeout(r, 10));
  const sorted = counter.latencies.slice(0, written).sort((a, b) => a - b);
  log(`${label}: steady load of ${written} changes at ${Math.round(written / SECONDS)}/s (target ${target}/s)`);
  emit('cdc', `pipeline (${label}): commit_to_write p50`, percentile(sorted, 50), 'ms');
  emit('cdc', `pipeline (${label}): commit_to_write p99`, percentile(sorted, 99), 'ms');

  for (const id of pipelines) await engine.pipelines.delete(WS, id);
  await engine.stop();
  for (let turn = 0; turn < REPEAT; turn++) await db.query(`SELECT pg_drop_replication_slot('bench_bare_${turn}')`);
  await db.end();
}

// synchronous_commit on, as on a production server: with the test default (off) a commit is
// decoded only once the WAL writer flushes it, up to 200 ms later, and that wait would be measured
// as the engine's latency.
const server = await startTestPostgres({ settings: { synchronous_commit: 'on' } });
const dir = mkdtempSync(join(process.platform === 'linux' ? '/dev/shm' : tmpdir(), 'ferry-cdc-bench-'));
try {
  for (const kase of CASES) {
    const url = await server.createDatabase(`bench_cdc_${kase}`);
    if (kase === 'sqlite') await runCase('engine on sqlite', sqliteStorage({ filename: join(dir, 'ferry.db') }), url);
    else if (kase === 'postgres') await runCase('engine on postgres', postgresStorage({ connectionString: await server.createDatabase('bench_cdc_engine') }), url);
    else throw new Error(`unknown BENCH_CDC_CASES entry ${kase}`);
  }
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}

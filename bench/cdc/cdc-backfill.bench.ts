/**
 * A change-capture backfill (`snapshot: "incremental"`, the default) against a bare COPY of the
 * same table in the same run, with changes streaming meanwhile. One embedded Postgres
 * (wal_level=logical, `synchronous_commit = on` as on a production server); a table
 * `accounts (id bigint primary key, note text, amount int, created_at timestamptz)` of
 * BENCH_CDC_BACKFILL_ROWS rows (default 200,000).
 *
 *  - `bare: copy to stdout`: rows/s of `COPY (SELECT * FROM accounts ORDER BY id) TO STDOUT` read
 *    to its end by a client of this process (pg-copy-streams): the wire speed of the table.
 *  - `backfill (engine on sqlite|postgres): rows/s`: a new pipeline's backfill of the table,
 *    chunks of 1,000 rows, into a destination that only counts, timed from its activation until
 *    the destination has a read of every row. Meanwhile a writer updates BENCH_CDC_BACKFILL_RATE
 *    random rows a second (default 1,000, a transaction every 10 ms).
 *  - `backfill (...): stream commit_to_write p99`: for those updates, their arrival at the
 *    destination minus their commit time, while the backfill runs: a backfill must not hold the
 *    stream back. The longest transaction the source saw meanwhile (from `pg_stat_activity`,
 *    sampled every 50 ms) is on stderr.
 * BENCH_CDC_BACKFILL_CASES picks the engine's storage (default `sqlite`; `postgres` too). The
 * issue's goals: at least 0.5 of the bare copy's rows/s, the stream's p99 under 1 s.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pipeline as streamPipeline } from 'node:stream/promises';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { Type } from '@sinclair/typebox';
import { createEngine, defineConnector, generateSecretKey, postgresStorage, sqliteStorage, type JsonObject, type StorageConfig } from '@ferry/core';
import { postgres } from '@ferry/postgres';
import { startTestPostgres } from '@ferry/test-servers';
import { emit } from '../emit.js';

const ROWS = Number(process.env.BENCH_CDC_BACKFILL_ROWS ?? 200_000);
const RATE = Number(process.env.BENCH_CDC_BACKFILL_RATE ?? 1000);
const CASES = (process.env.BENCH_CDC_BACKFILL_CASES ?? 'sqlite').split(',').filter(Boolean);
const BATCH = 1000;
const WS = 'bench';
const log = (message: string) => console.error(`cdc backfill bench: ${message}`);

/** A destination that counts the backfill's reads, and times the stream's changes from their commit. */
const counter = { reads: 0, lastRead: false, latencies: [] as number[] };
const benchSink = defineConnector({
  type: 'bench_sink',
  version: '0.0.0',
  directions: ['destination'],
  configSchema: Type.Object({}),
  destination: () => ({
    write: async (events) => {
      const now = Date.now();
      for (const e of events) {
        const payload = e.payload as JsonObject & { action: string; metadata: JsonObject };
        if (payload.action === 'read') {
          counter.reads++;
          if ((payload.record as JsonObject).id === String(ROWS)) counter.lastRead = true;
        }
        else counter.latencies.push(now - Date.parse(String(payload.metadata.commit_time)));
      }
      return events.map(() => ({ ok: true as const }));
    },
  }),
});

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

/** The bare copy: the table's rows, in key order, read to the end; rows/s. */
async function bareCopy(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    let rows = 0;
    const started = performance.now();
    await streamPipeline(
      client.query(copyTo('COPY (SELECT * FROM accounts ORDER BY id) TO STDOUT')),
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          for (let at = chunk.indexOf(10); at >= 0; at = chunk.indexOf(10, at + 1)) rows++;
          done();
        },
      }),
    );
    if (rows !== ROWS) throw new Error(`bare copy: ${rows} rows, expected ${ROWS}`);
    return rows / ((performance.now() - started) / 1000);
  } finally {
    await client.end();
  }
}

async function runCase(label: string, storage: StorageConfig, url: string): Promise<void> {
  counter.reads = 0;
  counter.lastRead = false;
  counter.latencies = [];
  const db = new pg.Pool({ connectionString: url, max: 3 });
  db.on('error', () => undefined);
  await db.query('CREATE TABLE accounts (id bigint PRIMARY KEY, note text NOT NULL, amount int NOT NULL, created_at timestamptz NOT NULL)');
  await db.query(`INSERT INTO accounts SELECT g, 'note ' || g, g % 1000, timestamptz '2026-01-01 00:00:00+00' + g * interval '1 second' FROM generate_series(1, ${ROWS}) g`);
  await db.query('VACUUM ANALYZE accounts');
  await bareCopy(url); // warm-up: the table in the server's cache, the client's code paths
  const bare = await bareCopy(url);
  log(`${label}: bare copy ${Math.round(bare)} rows/s`);

  const engine = await createEngine({ storage, secretKey: generateSecretKey(), plugins: [postgres(), benchSink], outboundAllow: ['127.0.0.1'], webhookDelivery: false });
  await engine.start();
  let writing = true;
  let longest = 0;
  try {
    const source = await engine.connectors.create(WS, { type: 'postgres', direction: 'source', config: { connection_string: url, capture: 'changes', tables: ['accounts'], batch_size: BATCH } });
    const sink = await engine.connectors.create(WS, { type: 'bench_sink', direction: 'destination', config: {} });
    const pipeline = await engine.pipelines.create(WS, { name: 'backfill', source_connector_id: source.id, destination_connector_id: sink.id, batch_size: BATCH, flush_interval_ms: 50 });

    // The longest transaction any other session keeps open, sampled while the backfill runs.
    const sampler = (async () => {
      while (writing) {
        const { rows } = await db.query<{ ms: number | null }>(
          `SELECT max(extract(epoch FROM now() - xact_start) * 1000)::float8 AS ms FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND xact_start IS NOT NULL AND backend_type = 'client backend'`,
        );
        longest = Math.max(longest, rows[0]?.ms ?? 0);
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    // Updates of random rows at RATE a second, a transaction every 10 ms; never the last chunk's
    // rows, so the read of the last row (key order: the last one read) says the backfill is done.
    const perTick = Math.max(1, Math.round(RATE / 100));
    let updates = 0;
    const writer = (async () => {
      let tick = performance.now();
      while (writing) {
        const ids = Array.from({ length: perTick }, () => 1 + Math.floor(Math.random() * (ROWS - BATCH)));
        await db.query('UPDATE accounts SET amount = amount + 1 WHERE id = ANY($1::bigint[])', [ids]);
        updates += new Set(ids).size;
        tick += 10;
        const wait = tick - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      }
    })();

    const cpu = process.cpuUsage();
    const started = performance.now();
    await engine.pipelines.activate(WS, pipeline.id);
    // A row a change took out of its chunk is not read: the count stops short of ROWS by those.
    while (!counter.lastRead) {
      await new Promise((r) => setTimeout(r, 10));
      if (performance.now() - started > 600_000) throw new Error(`${label}: ${counter.reads} of ${ROWS} rows read after 600 s`);
    }
    const seconds = (performance.now() - started) / 1000;
    const used = process.cpuUsage(cpu);
    writing = false;
    await Promise.all([writer, sampler]);
    // Rows/s of the table: a row taken out of a chunk by a change was covered all the same.
    const rate = ROWS / seconds;
    const sorted = [...counter.latencies].sort((a, b) => a - b);
    log(
      `${label}: backfill of ${ROWS} rows (${counter.reads} reads, the rest taken by ${updates} updates) in ${seconds.toFixed(1)} s; engine CPU ${((used.user + used.system) / counter.reads).toFixed(1)} µs per row; ` +
        `stream: ${sorted.length} changes, p50 ${percentile(sorted, 50)} ms; longest transaction on the source ${Math.round(longest)} ms`,
    );
    emit('cdc', `bare: copy to stdout (${label})`, bare, 'rows/s');
    emit('cdc', `backfill (${label}): rows/s`, rate, 'rows/s', bare);
    emit('cdc', `backfill (${label}): stream commit_to_write p99`, percentile(sorted, 99), 'ms');
    await engine.pipelines.delete(WS, pipeline.id);
  } finally {
    writing = false;
    await engine.stop();
    await db.end();
  }
}

const server = await startTestPostgres({ settings: { synchronous_commit: 'on' } });
const dir = mkdtempSync(join(process.platform === 'linux' ? '/dev/shm' : tmpdir(), 'ferry-cdc-backfill-bench-'));
try {
  for (const kase of CASES) {
    const url = await server.createDatabase(`bench_backfill_${kase}`);
    if (kase === 'sqlite') await runCase('engine on sqlite', sqliteStorage({ filename: join(dir, 'ferry.db') }), url);
    else if (kase === 'postgres') await runCase('engine on postgres', postgresStorage({ connectionString: await server.createDatabase('bench_backfill_engine') }), url);
    else throw new Error(`unknown BENCH_CDC_BACKFILL_CASES entry ${kase}`);
  }
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}

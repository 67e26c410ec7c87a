/**
 * What the event log costs on disk: the engine's storage growth per event moved, against the
 * bytes of the events' payloads as JSON, after a drain of BENCH_LOG_SIZE_EVENTS events (default
 * 1,000,000) of the pipeline benchmark's small orders (about 100 bytes of JSON each) through a
 * pass-through pipeline, in batches of BENCH_PIPELINE_BATCH (default 1,000), into a fresh
 * database each time. Measured with each database's own size functions: SQLite's `dbstat`
 * (the pages of the event log's tables and their indexes), Postgres's `pg_total_relation_size`
 * (tables, indexes and TOAST).
 *
 *  - `<dialect>, payloads all: bytes per event`: a pipeline that keeps every payload (the
 *    default). Baseline: the payload's JSON bytes, so the ratio is log bytes per payload byte.
 *  - `<dialect>, payloads failed: bytes per event`: a pipeline that keeps the payloads of
 *    dead-lettered events only (`event_log.payloads: "failed"`; none fail here). Same baseline.
 *
 * The event log's tables are `event_units` (a row per batch, its events compressed),
 * `event_key_spans` and `event_keys` (SQLite's index of event ids: a unit's span of ids, or each
 * id when the span is wide; Postgres keeps them in the unit's row), `event_unit_types`,
 * `event_changes` and `dead_letters`; the SQLite file's free pages, the pipelines' and runs' rows
 * and the WAL are not counted.
 */
import { rmSync } from 'node:fs';
import type { Knex } from 'knex';
import { join } from 'node:path';
import { postgresStorage, sqliteStorage, type StorageConfig } from '@ferry/core';
import { engineContext } from '@ferry/core/internal';
import { startTestPostgres, type TestPostgres } from '@ferry/test-servers';
import { emit } from '../emit.js';
import { benchRecord, BATCH_SIZE, drainThroughEngine, envCount, sqliteTempDir, startBenchEngine } from '../pipeline/drain.js';

const EVENTS = envCount('BENCH_LOG_SIZE_EVENTS', 1_000_000);
const LOG_TABLES = ['event_units', 'event_keys', 'event_key_spans', 'event_unit_types', 'event_changes', 'dead_letters'];

/** Mean JSON bytes of the drained events' payloads. */
function payloadBytesPerEvent(count: number): number {
  let bytes = 0;
  for (let i = 0; i < count; i++) bytes += Buffer.byteLength(JSON.stringify(benchRecord(i).payload));
  return bytes / count;
}

/** Bytes the event log's tables and indexes take in the engine's storage, in all and by table or index. */
async function logBytes(knex: Knex, dialect: 'sqlite' | 'postgres'): Promise<{ total: number; parts: Map<string, number> }> {
  const placeholders = LOG_TABLES.map(() => '?').join(', ');
  const rows =
    dialect === 'sqlite'
      ? ((await knex.raw(`SELECT d.name AS name, SUM(d.pgsize) AS bytes FROM dbstat d JOIN sqlite_schema s ON s.name = d.name WHERE s.tbl_name IN (${placeholders}) GROUP BY d.name`, LOG_TABLES)) as { name: string; bytes: number }[])
      : ((await knex.raw(
          `SELECT c.relname AS name, pg_total_relation_size(c.oid) - CASE WHEN c.relkind = 'r' THEN pg_indexes_size(c.oid) ELSE 0 END AS bytes
             FROM pg_class c WHERE c.relname IN (${placeholders})
              OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid IN (SELECT oid FROM pg_class WHERE relname IN (${placeholders})))`,
          [...LOG_TABLES, ...LOG_TABLES],
        )) as { rows: { name: string; bytes: string }[] }).rows;
  const parts = new Map(rows.map((r) => [r.name, Number(r.bytes)]));
  return { total: [...parts.values()].reduce((a, b) => a + b, 0), parts };
}

async function measure(dialect: 'sqlite' | 'postgres', payloads: 'all' | 'failed', storage: StorageConfig, payloadBytes: number): Promise<void> {
  const bench = await startBenchEngine(storage);
  try {
    const knex = engineContext(bench.engine).storage.knex;
    const before = await logBytes(knex, dialect);
    const drained = await drainThroughEngine(bench, `size-${payloads}`, EVENTS, { payloads });
    const after = await logBytes(knex, dialect);
    const perEvent = (after.total - before.total) / drained.events;
    const parts = [...after.parts].map(([name, bytes]) => `${name} ${((bytes - (before.parts.get(name) ?? 0)) / drained.events).toFixed(1)}`).join(', ');
    console.error(`log-size ${dialect}, payloads ${payloads}: ${drained.events} events in ${drained.seconds.toFixed(1)} s; ${perEvent.toFixed(1)} B of log per event (${parts}), payload ${payloadBytes.toFixed(1)} B`);
    emit('log-size', `${dialect}, payloads ${payloads}: bytes per event`, perEvent, 'B', payloadBytes);
  } finally {
    await bench.engine.stop();
  }
}

const payloadBytes = payloadBytesPerEvent(EVENTS);
console.error(`log-size: ${EVENTS} events a case, batches of ${BATCH_SIZE}, payloads ${payloadBytes.toFixed(1)} B of JSON on average`);
const dir = sqliteTempDir();
let server: TestPostgres | undefined;
try {
  for (const payloads of ['all', 'failed'] as const) await measure('sqlite', payloads, sqliteStorage({ filename: join(dir, `${payloads}.db`) }), payloadBytes);
  server = await startTestPostgres();
  for (const payloads of ['all', 'failed'] as const) await measure('postgres', payloads, postgresStorage({ connectionString: await server.createDatabase(`size_${payloads}`) }), payloadBytes);
} finally {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
}

/**
 * The event log is the storage hot path: every batch a pipeline moves is written to it with its
 * checkpoint in one transaction. This measures, on SQLite (file, WAL) and Postgres (embedded):
 *  - events/s through EventsRepo.append (a unit per batch) + checkpoint commit, against a row per
 *    event written the simplest way (better-sqlite3 prepared statement / pg multi-row INSERT ...
 *    ON CONFLICT), without the checkpoint: the event log as it was before units;
 *  - a page of the events listing at the start and deep into the log, against an OFFSET page of
 *    that row-per-event table.
 * Bounded: 100,000 events per dialect.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { postgresStorage, sqliteStorage } from '@ferry/core';
import { openStorage, type EventRow, type FerryStorage } from '@ferry/core/internal';
import { pipelineRow } from '@ferry/testing/suites';
import { startTestPostgres } from '@ferry/test-servers';
import { emit } from '../emit.js';

const TOTAL = 100_000;
// The baselines do the same work as the event log: an upsert on the event id (re-reads after a
// crash must not duplicate), with the same indexes.
const UPSERT_TAIL = 'ON CONFLICT (id) DO UPDATE SET status = excluded.status, attempts = excluded.attempts, payload = excluded.payload, error = excluded.error, updated_at = excluded.updated_at';
const BATCH = 500;
const T0 = Date.parse('2026-01-01T00:00:00.000Z');

function rows(from: number, count: number, pipelineId: string): EventRow[] {
  const out: EventRow[] = [];
  for (let i = from; i < from + count; i++) {
    const iso = new Date(T0 + i).toISOString();
    out.push({
      id: `evt_${String(i).padStart(26, '0')}`, workspace_id: 'bench', pipeline_id: pipelineId, type: 'order.created', occurred_at: iso,
      payload: { order_id: i, amount: i % 1000, customer: { email: `c${i}@example.com` } }, status: 'delivered', attempts: 1,
      error: null, dead_lettered_at: null, created_at: iso, updated_at: iso,
    });
  }
  return out;
}

async function ferryWrite(storage: FerryStorage, pipelineId: string): Promise<number> {
  await storage.repos.workspaces.ensure('bench', new Date(T0).toISOString());
  await storage.repos.pipelines.insert(pipelineRow({ id: pipelineId, name: pipelineId, workspace_id: 'bench' }));
  const started = performance.now();
  for (let i = 0; i < TOTAL; i += BATCH) {
    const batch = rows(i, BATCH, pipelineId);
    await storage.transaction(async (repos) => {
      await repos.events.append(batch);
      await repos.checkpoints.put(pipelineId, { offset: i + BATCH }, null, batch[batch.length - 1]!.created_at);
    });
  }
  return TOTAL / ((performance.now() - started) / 1000);
}

async function pageCost(storage: FerryStorage, pipelineId: string, depth: number, offsetPage: (depth: number) => Promise<unknown>): Promise<{ keyset: number; offset: number }> {
  // The log position of the event at `depth`: units of BATCH events, numbered from 1.
  const after = [String(Math.floor(depth / BATCH) + 1), String(depth % BATCH)];
  const repeat = 50;
  let started = performance.now();
  for (let i = 0; i < repeat; i++) await storage.repos.events.list('bench', pipelineId, {}, after, 100);
  const keyset = (performance.now() - started) / repeat;
  started = performance.now();
  for (let i = 0; i < repeat; i++) await offsetPage(depth);
  const offset = (performance.now() - started) / repeat;
  return { keyset, offset };
}

const OFFSET_PAGE = 'SELECT * FROM events WHERE pipeline_id = $1 ORDER BY occurred_at, id OFFSET $2 LIMIT 101';

async function sqliteBench(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-bench-'));
  const storage = await openStorage(sqliteStorage({ filename: join(dir, 'ferry.db') }));
  const ferry = await ferryWrite(storage, 'pip_bench');

  // Baseline: the same rows through better-sqlite3 directly, one prepared statement per row.
  const raw = new Database(join(dir, 'raw.db'));
  raw.pragma('journal_mode = WAL');
  raw.pragma('synchronous = NORMAL');
  raw.exec('CREATE TABLE events (id text primary key, workspace_id text, pipeline_id text, type text, occurred_at text, payload text, status text, attempts integer, error text, dead_lettered_at text, created_at text, updated_at text)');
  raw.exec('CREATE INDEX e1 ON events (pipeline_id, occurred_at, id)');
  raw.exec('CREATE INDEX e2 ON events (pipeline_id, status)');
  const insert = raw.prepare(`INSERT INTO events VALUES (@id, @workspace_id, @pipeline_id, @type, @occurred_at, @payload, @status, @attempts, @error, @dead_lettered_at, @created_at, @updated_at) ${UPSERT_TAIL}`);
  const tx = raw.transaction((batch: EventRow[]) => {
    for (const r of batch) insert.run({ ...r, payload: JSON.stringify(r.payload) });
  });
  const started = performance.now();
  for (let i = 0; i < TOTAL; i += BATCH) tx(rows(i, BATCH, 'pip_bench'));
  const baseline = TOTAL / ((performance.now() - started) / 1000);
  emit('storage', 'sqlite: event log write (batch 500 + checkpoint)', ferry, 'events/s', baseline);
  const page = raw.prepare(OFFSET_PAGE.replace('$1', '?').replace('$2', '?'));
  for (const depth of [0, TOTAL - 200]) {
    const cost = await pageCost(storage, 'pip_bench', depth, async (d) => page.all('pip_bench', d));
    emit('storage', `sqlite: events page of 100 at depth ${depth}, log position vs OFFSET`, cost.keyset, 'ms', cost.offset);
  }
  raw.close();
  await storage.close();
}

async function postgresBench(): Promise<void> {
  const server = await startTestPostgres();
  try {
    const storage = await openStorage(postgresStorage({ connectionString: await server.createDatabase('bench') }));
    const ferry = await ferryWrite(storage, 'pip_bench');

    // Baseline: the same rows through pg directly, one multi-row INSERT per batch.
    const client = new pg.Client({ connectionString: await server.createDatabase('raw') });
    await client.connect();
    await client.query('CREATE TABLE events (id text primary key, workspace_id text, pipeline_id text, type text, occurred_at text, payload text, status text, attempts integer, error text, dead_lettered_at text, created_at text, updated_at text)');
    await client.query('CREATE INDEX e1 ON events (pipeline_id, occurred_at, id)');
    await client.query('CREATE INDEX e2 ON events (pipeline_id, status)');
    const started = performance.now();
    for (let i = 0; i < TOTAL; i += BATCH) {
      const batch = rows(i, BATCH, 'pip_bench');
      const values: unknown[] = [];
      const tuples = batch.map((r, j) => {
        values.push(r.id, r.workspace_id, r.pipeline_id, r.type, r.occurred_at, JSON.stringify(r.payload), r.status, r.attempts, null, null, r.created_at, r.updated_at);
        return `(${Array.from({ length: 12 }, (_, k) => `$${j * 12 + k + 1}`).join(',')})`;
      });
      await client.query('BEGIN');
      await client.query(`INSERT INTO events VALUES ${tuples.join(',')} ${UPSERT_TAIL}`, values);
      await client.query('COMMIT');
    }
    const baseline = TOTAL / ((performance.now() - started) / 1000);
    emit('storage', 'postgres: event log write (batch 500 + checkpoint)', ferry, 'events/s', baseline);
    // Fresh statistics, as autovacuum would have after a bulk load; without them the planner
    // sorts the whole table for a first page.
    await storage.knex.raw('ANALYZE event_units');
    await client.query('ANALYZE events');
    for (const depth of [0, TOTAL - 200]) {
      const cost = await pageCost(storage, 'pip_bench', depth, (d) => client.query(OFFSET_PAGE, ['pip_bench', d]));
      emit('storage', `postgres: events page of 100 at depth ${depth}, log position vs OFFSET`, cost.keyset, 'ms', cost.offset);
    }
    await client.end();
    await storage.close();
  } finally {
    await server.stop();
  }
}

await sqliteBench();
await postgresBench();

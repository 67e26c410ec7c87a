/**
 * A change-capture backfill (`snapshot: "incremental"`) of a large table under SIGKILL, while 8
 * writers update, delete and insert in it: the destination must end equal, row for row, to the
 * source table; no transaction on the source may stay open longer than a few seconds; and the
 * killed backfill must resume from a chunk, not from the start.
 *
 * The destination is an insert-only table with an arrival sequence: the last event of each row,
 * in arrival order, is the row as the destination holds it (an upserting consumer's view).
 * FERRY_TEST_BACKFILL_ROWS sets the table's size (default 1,000,000).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, generateSecretKey, sqliteStorage } from '@ferry/core';
import { postgres } from '@ferry/postgres';
import { getSharedTestPostgres } from '@ferry/test-servers';
import { startChildEngine, untilReal } from '../support/child-engine.js';
import { seededRandom as seeded } from '../support/seeded-random.js';

const child = join(import.meta.dirname, 'fixtures', 'pipeline-engine.ts');
const WS = 'default';
const ROWS = Number(process.env.FERRY_TEST_BACKFILL_ROWS ?? 1_000_000);
const WRITERS = 8;
const BATCH = 2_000;

describe('postgres backfill survives SIGKILL under concurrent writers', () => {
  const cleanup: Array<() => unknown> = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it('ends equal to the source row for row, holds no long transaction, and resumes from its last chunk', async () => {
    const server = await getSharedTestPostgres();
    const sourceUrl = await server.createDatabase('backfill_crash_source');
    const sinkUrl = await server.createDatabase('backfill_crash_sink');
    const source = new pg.Pool({ connectionString: sourceUrl, max: WRITERS + 2 });
    const sink = new pg.Pool({ connectionString: sinkUrl, max: 2 });
    cleanup.push(() => source.end(), () => sink.end());
    await source.query('CREATE TABLE accounts (id int PRIMARY KEY, version int NOT NULL, note text NOT NULL)');
    await source.query(`INSERT INTO accounts SELECT g, 0, 'row ' || g FROM generate_series(1, ${ROWS}) g`);
    await source.query('VACUUM ANALYZE accounts');
    // Insert-only, in arrival order (the destination COPYs a batch's rows in event order).
    await sink.query('CREATE TABLE changes (seq bigserial, id text NOT NULL, type text, occurred_at timestamptz, payload jsonb)');

    const filename = join(mkdtempSync(join(tmpdir(), 'ferry-backfill-crash-')), 'ferry.db');
    const secretKey = generateSecretKey();
    const api = await createEngine({ storage: sqliteStorage({ filename }), secretKey, runtime: false, webhookDelivery: false, plugins: [postgres()], outboundAllow: ['127.0.0.1'] });
    await api.start();
    cleanup.push(() => api.stop());
    const from = await api.connectors.create(WS, { type: 'postgres', direction: 'source', config: { connection_string: sourceUrl, capture: 'changes', tables: ['accounts'], batch_size: BATCH } });
    const to = await api.connectors.create(WS, { type: 'postgres', direction: 'destination', config: { connection_string: sinkUrl, table: 'changes', mode: 'insert' } });
    await api.pipelines.create(WS, { name: 'accounts', source_connector_id: from.id, destination_connector_id: to.id, batch_size: BATCH, flush_interval_ms: 100, activate: true });
    const reads = async () => Number((await sink.query<{ n: string }>(`SELECT count(*)::text AS n FROM changes WHERE payload->>'action' = 'read'`)).rows[0]!.n);

    // The longest transaction any session but the writers' and this test's keeps open.
    let longest = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const { rows } = await source.query<{ ms: number | null }>(
          `SELECT max(extract(epoch FROM now() - xact_start) * 1000)::float8 AS ms FROM pg_stat_activity
            WHERE datname = current_database() AND xact_start IS NOT NULL AND backend_type = 'client backend' AND application_name NOT LIKE 'test-writer%' AND pid <> pg_backend_pid()`,
        );
        longest = Math.max(longest, rows[0]?.ms ?? 0);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();

    let engine = await startChildEngine(child, [filename, secretKey]);
    cleanup.push(() => engine.kill('SIGKILL'));

    // Writers all over the key range while the backfill reads it, each transaction short.
    let writing = true;
    let committed = 0;
    const writer = async (w: number) => {
      const client = new pg.Client({ connectionString: sourceUrl, application_name: `test-writer-${w}` });
      await client.connect();
      const random = seeded(w + 1);
      let next = ROWS + 1 + w * 1_000_000;
      try {
        while (writing) {
          // Never the last row: its read says the backfill reached the table's end.
          const id = 1 + Math.floor(random() * (ROWS - 1));
          const roll = random();
          if (roll < 0.6) await client.query('UPDATE accounts SET version = version + 1, note = $2 WHERE id = $1', [id, `w${w}`]);
          else if (roll < 0.8) await client.query('DELETE FROM accounts WHERE id = $1', [id]);
          else await client.query(`INSERT INTO accounts VALUES ($1, 0, 'new') ON CONFLICT (id) DO UPDATE SET version = accounts.version + 1`, [random() < 0.5 ? next++ : id]);
          committed++;
          await new Promise((resolve) => setTimeout(resolve, 2));
        }
      } finally {
        await client.end();
      }
    };
    const writing$ = Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));

    // Killed once a third of the table is read: the backfill must go on from where it was.
    await untilReal(async () => (await reads()) >= ROWS / 3, 'a third of the backfill', 300_000, 200);
    engine.kill('SIGKILL');
    await new Promise((resolve) => engine.once('exit', resolve));
    const readBeforeKill = await reads();
    engine = await startChildEngine(child, [filename, secretKey]);
    // The reads after the kill: fewer than the whole table again.
    await untilReal(async () => (await sink.query(`SELECT 1 FROM changes WHERE payload->>'action' = 'read' AND (payload->'record'->>'id')::int = $1`, [ROWS])).rows.length > 0, "the backfill's end", 600_000, 500);
    writing = false;
    await writing$;
    // A last change, then everything up to it: the stream has caught up with the writers.
    await source.query(`INSERT INTO accounts VALUES (2000000000, 0, 'the last')`);
    await untilReal(async () => (await sink.query(`SELECT 1 FROM changes WHERE (payload->'record'->>'id')::int = 2000000000`)).rows.length > 0, 'the last change', 120_000, 200);
    sampling = false;
    await sampler;

    // The destination's view: each row's last event in arrival order.
    const held = new Map<number, { version: number; note: string }>();
    const cursor = await sink.query<{ action: string; id: number; version: number; note: string }>(
      `SELECT payload->>'action' AS action, (payload->'record'->>'id')::int AS id, (payload->'record'->>'version')::int AS version, payload->'record'->>'note' AS note FROM changes ORDER BY seq`,
    );
    for (const r of cursor.rows) {
      if (r.action === 'delete') held.delete(r.id);
      else held.set(r.id, { version: r.version, note: r.note });
    }
    const actual = new Map((await source.query<{ id: number; version: number; note: string }>('SELECT id, version, note FROM accounts')).rows.map((r) => [r.id, { version: r.version, note: r.note }]));
    let differing = 0;
    for (const [id, row] of actual) if (JSON.stringify(held.get(id)) !== JSON.stringify(row)) differing++;
    for (const id of held.keys()) if (!actual.has(id)) differing++;
    const totalReads = await reads();
    // The first chunks were committed long before the kill: none of their rows was read twice.
    const firstChunksReads = Number(
      (await sink.query<{ n: string | null }>(`SELECT max(n)::text AS n FROM (SELECT count(*) AS n FROM changes WHERE payload->>'action' = 'read' AND (payload->'record'->>'id')::int <= ${BATCH * 5} GROUP BY payload->'record'->>'id') AS c`)).rows[0]!.n ?? '0',
    );
    console.log(JSON.stringify({ connector: 'postgres-backfill', rows: ROWS, writers: WRITERS, writer_commits: committed, reads: totalReads, read_before_kill: readBeforeKill, differing_rows: differing, longest_transaction_ms: Math.round(longest), kills: 1 }));
    expect(differing).toBe(0);
    expect(actual.size).toBe(held.size);
    // Resumed from its last chunk: the rows read before the kill were not all read again.
    expect(totalReads).toBeLessThan(ROWS + readBeforeKill / 2);
    expect(firstChunksReads).toBe(1);
    expect(longest).toBeLessThan(5_000);
  }, 900_000);
});

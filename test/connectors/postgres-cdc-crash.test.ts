/**
 * Postgres change capture under SIGKILL, with a busy table: 8 concurrent writers (a fifth of
 * their transactions held open 50-500 ms, some rolled back) insert, update and delete while a
 * child engine streams the changes into a Postgres table, and the engine is killed twice on
 * the way. Every committed change must arrive, in commit order per row; rolled-back ones never.
 * The destination is an insert-only table without a key, so a change written twice shows: the
 * duplicates are counted, and bounded by what can be in flight when an engine dies.
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
const WRITERS = 8;
const TRANSACTIONS = 120;
const PRELOADED = 2_000;
const BATCH = 200;

/** What one committed change of a row was: its action and the row's version after it. */
type Change = { action: string; version: number | null };

describe('postgres change capture survives SIGKILL under concurrent writers', () => {
  const cleanup: Array<() => unknown> = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it('misses no committed change, keeps each row\'s commit order, and counts the re-sent ones', async () => {
    const server = await getSharedTestPostgres();
    const sourceUrl = await server.createDatabase('cdc_crash_source');
    const sinkUrl = await server.createDatabase('cdc_crash_sink');
    const source = new pg.Pool({ connectionString: sourceUrl, max: WRITERS + 2 });
    const sink = new pg.Pool({ connectionString: sinkUrl, max: 2 });
    cleanup.push(() => source.end(), () => sink.end());
    await source.query(`CREATE TABLE accounts (id int PRIMARY KEY, version int NOT NULL, note text)`);
    await source.query(`INSERT INTO accounts SELECT g, 0, 'preloaded' FROM generate_series(1, ${PRELOADED}) g`);
    // Insert-only and keyless: a change delivered twice is two rows, which is what is counted.
    await sink.query(`CREATE TABLE changes (id text NOT NULL, type text, occurred_at timestamptz, payload jsonb)`);
    // A slow destination: each write takes 100 ms, so a batch is in flight at almost any moment
    // an engine is killed, which is the moment that tells whether the slot was confirmed too early.
    await sink.query(`CREATE FUNCTION slow_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.1); RETURN NULL; END $$`);
    await sink.query(`CREATE TRIGGER slow_write BEFORE INSERT ON changes FOR EACH STATEMENT EXECUTE FUNCTION slow_write()`);

    const filename = join(mkdtempSync(join(tmpdir(), 'ferry-cdc-crash-')), 'ferry.db');
    const secretKey = generateSecretKey();
    const api = await createEngine({ storage: sqliteStorage({ filename }), secretKey, runtime: false, webhookDelivery: false, plugins: [postgres()], outboundAllow: ['127.0.0.1'] });
    await api.start();
    cleanup.push(() => api.stop());
    // The exported snapshot: each preloaded row read once before the writers start. (A backfill
    // may read a row the writers insert as well as stream it; postgres-backfill-crash.test.ts
    // holds it to its own rules.)
    const from = await api.connectors.create(WS, { type: 'postgres', direction: 'source', config: { connection_string: sourceUrl, capture: 'changes', tables: ['accounts'], batch_size: BATCH, snapshot: 'initial' } });
    const to = await api.connectors.create(WS, { type: 'postgres', direction: 'destination', config: { connection_string: sinkUrl, table: 'changes', mode: 'insert' } });
    await api.pipelines.create(WS, { name: 'accounts', source_connector_id: from.id, destination_connector_id: to.id, batch_size: BATCH, flush_interval_ms: 100, activate: true });
    const landed = async () => Number((await sink.query<{ n: string }>('SELECT count(DISTINCT id)::text AS n FROM changes')).rows[0]!.n);

    let engine = await startChildEngine(child, [filename, secretKey]);
    cleanup.push(() => engine.kill('SIGKILL'));
    await untilReal(async () => (await landed()) >= PRELOADED, 'the snapshot', 90_000, 50);

    // The expected history of every row: the snapshot read, then what the writers committed.
    const history = new Map<number, Change[]>();
    for (let id = 1; id <= PRELOADED; id++) history.set(id, [{ action: 'read', version: 0 }]);
    const writer = async (w: number) => {
      const random = seeded(w + 1);
      const mine = Array.from({ length: PRELOADED / WRITERS }, (_, i) => w * (PRELOADED / WRITERS) + i + 1);
      let next = 1_000_000 * (w + 1);
      const versions = new Map<number, number>(mine.map((id) => [id, 0]));
      const client = await source.connect();
      try {
        for (let t = 0; t < TRANSACTIONS; t++) {
          const ops: Array<{ id: number; change: Change }> = [];
          await client.query('BEGIN');
          for (let k = 1 + Math.floor(random() * 3); k > 0; k--) {
            const roll = random();
            if (roll < 0.45 || versions.size === 0) {
              const id = next++;
              await client.query('INSERT INTO accounts VALUES ($1, 0, $2)', [id, `w${w}`]);
              versions.set(id, 0);
              ops.push({ id, change: { action: 'insert', version: 0 } });
            } else {
              const ids = [...versions.keys()];
              const id = ids[Math.floor(random() * ids.length)]!;
              if (roll < 0.85) {
                const version = versions.get(id)! + 1;
                await client.query('UPDATE accounts SET version = $2 WHERE id = $1', [id, version]);
                versions.set(id, version);
                ops.push({ id, change: { action: 'update', version } });
              } else {
                await client.query('DELETE FROM accounts WHERE id = $1', [id]);
                versions.delete(id);
                ops.push({ id, change: { action: 'delete', version: null } });
              }
            }
          }
          // A fifth of the transactions stay open a while: later ones commit before them.
          if (random() < 0.2) await new Promise((resolve) => setTimeout(resolve, 50 + Math.floor(random() * 450)));
          if (random() < 0.1) {
            await client.query('ROLLBACK');
            // Undo what this writer believed: nothing of a rolled-back transaction happened.
            for (const op of ops.reverse()) {
              if (op.change.action === 'insert') versions.delete(op.id);
              else if (op.change.action === 'update') versions.set(op.id, op.change.version! - 1);
              else versions.set(op.id, lastVersion(history, op.id));
            }
            continue;
          }
          await client.query('COMMIT');
          for (const op of ops) history.set(op.id, [...(history.get(op.id) ?? []), op.change]);
        }
      } finally {
        client.release();
      }
    };
    const writing = Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));

    // Two kills while the writers write, each once some more changes landed.
    for (const after of [PRELOADED + 600, PRELOADED + 1_500]) {
      await untilReal(async () => (await landed()) >= after, `${after} changes`, 90_000, 20);
      engine.kill('SIGKILL');
      await new Promise((resolve) => engine.once('exit', resolve));
      engine = await startChildEngine(child, [filename, secretKey]);
    }
    await writing;
    const expected = [...history.values()].reduce((n, changes) => n + changes.length, 0);
    await untilReal(async () => (await landed()) >= expected, `all ${expected} changes`, 120_000, 50);

    // What arrived, once per event id, in commit order per row.
    const { rows } = await sink.query<{ id: string; payload: { action: string; record: { id: number; version?: number }; metadata: { commit_lsn: string } } }>(
      'SELECT id, payload FROM changes',
    );
    const unique = new Map(rows.map((r) => [r.id, r.payload]));
    const arrived = new Map<number, Array<Change & { lsn: bigint }>>();
    for (const p of unique.values()) {
      const list = arrived.get(p.record.id) ?? [];
      list.push({ action: p.action, version: p.action === 'delete' ? null : (p.record.version ?? null), lsn: lsnOf(p.metadata.commit_lsn) });
      arrived.set(p.record.id, list);
    }
    let missing = 0;
    let outOfOrder = 0;
    for (const [id, want] of history) {
      const got = (arrived.get(id) ?? []).sort((a, b) => (a.lsn < b.lsn ? -1 : a.lsn > b.lsn ? 1 : 0)).map(({ action, version }) => ({ action, version }));
      if (got.length < want.length) missing += want.length - got.length;
      else if (JSON.stringify(got) !== JSON.stringify(want)) outOfOrder++;
    }
    const duplicates = rows.length - unique.size;
    console.log(JSON.stringify({ connector: 'postgres-cdc', writers: WRITERS, changes: expected, rows: rows.length, missing, out_of_order_rows: outOfOrder, duplicates, kills: 2 }));
    expect(unique.size).toBe(expected);
    expect(missing).toBe(0);
    expect(outOfOrder).toBe(0);
    // At least once: only what was written and not yet committed when an engine died comes again.
    expect(duplicates).toBeLessThanOrEqual(2 * 2 * BATCH);
  }, 300_000);
});

/** The version a row had after its last committed change. */
function lastVersion(history: Map<number, Change[]>, id: number): number {
  const changes = history.get(id) ?? [];
  return changes.at(-1)?.version ?? 0;
}

function lsnOf(text: string): bigint {
  const [hi, lo] = text.split('/');
  return (BigInt(`0x${hi}`) << 32n) | BigInt(`0x${lo}`);
}

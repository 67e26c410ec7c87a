import { ConnectorError, type BackfillReport, type Checkpoint, type PipelineConnectorContext, type JsonObject, type PushSource, type SourceBatch, type SourceRecord } from '@ferry/core';
import { connectorContext } from '@ferry/testing';
import { getSharedTestPostgres, startTestPostgres } from '@ferry/test-servers';
import { connect, createServer, type AddressInfo } from 'node:net';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { postgres, type PostgresConfig } from '../index.js';
import { changeSource, changeSourceSettings, keepaliveAnswer, releaseSettings } from './change-source.js';
import { clientConfig } from '../connection.js';

// Change capture against a real Postgres started with wal_level=logical: the snapshot, the
// stream, restarts from a checkpoint, and what each kind of change looks like.
const plugin = postgres({ connectTimeoutMs: 5000 });
let url: string;
let admin: pg.Pool;
let counter = 0;

beforeAll(async () => {
  url = await (await getSharedTestPostgres()).createDatabase('plugin_pg_cdc');
  admin = new pg.Pool({ connectionString: url, max: 4 });
  const level = (await admin.query<{ wal_level: string }>('SHOW wal_level')).rows[0]!.wal_level;
  // Loud, never a silent skip: the embedded test server starts with wal_level=logical.
  if (level !== 'logical') throw new Error(`The test Postgres runs with wal_level=${level}; change capture needs logical.`);
});

const running: Consumer[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((c) => c.stop()));
});
afterAll(async () => {
  await admin.query(`SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name LIKE 'ferry_pip_cdc%' AND NOT active`);
  await admin.end();
});

/** A fresh pipeline id, so each test has its own slot and publication. */
const pipeline = () => `pip_cdc${++counter}_${process.pid}`;

function open(config: Partial<PostgresConfig>, pipelineId: string, extra: Pick<PipelineConnectorContext<PostgresConfig>, 'backfills' | 'reportBackfill'> = {}): PushSource {
  const full = { connection_string: url, capture: 'changes', ...config } as PostgresConfig;
  const ctx = connectorContext(full, { direction: 'source', pipelineId, outboundAllow: ['127.0.0.1'] });
  expect(plugin.validateConfig!(full, 'source', ctx.outbound)).toEqual([]);
  return plugin.source!({ ...ctx, ...extra }) as PushSource;
}

interface Consumer {
  records: SourceRecord[];
  batches: SourceBatch[];
  /** The checkpoint of the last batch the handler took. */
  checkpoint(): Checkpoint | null;
  /** Resolves once `count` records arrived. */
  until(count: number): Promise<void>;
  /** Makes the handler wait on `gate` before it returns (a slow destination). */
  hold(gate: Promise<void>): void;
  stop(): Promise<void>;
}

/** Consumes `source` from `from` as the engine does: each batch handed over, awaited, in order. */
function consume(source: PushSource, from: Checkpoint | null = null): Consumer {
  const records: SourceRecord[] = [];
  const batches: SourceBatch[] = [];
  let last: Checkpoint | null = from;
  let gate: Promise<void> | undefined;
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const controller = new AbortController();
  let failure: unknown;
  const done = source
    .consume(
      from,
      async (batch) => {
        batches.push(batch);
        records.push(...batch.records);
        if (gate) await gate;
        last = batch.checkpoint;
        for (const w of waiters.splice(0)) if (records.length >= w.count) w.resolve();
        else waiters.push(w);
      },
      controller.signal,
    )
    .catch((error: unknown) => {
      failure = error;
      for (const w of waiters.splice(0)) w.resolve();
    });
  const consumer: Consumer = {
    records,
    batches,
    checkpoint: () => last,
    until: (count) =>
      new Promise<void>((resolve, reject) => {
        const check = () => (failure !== undefined ? reject(failure) : resolve());
        if (records.length >= count || failure !== undefined) check();
        else waiters.push({ count, resolve: check });
      }),
    hold: (g) => {
      gate = g;
    },
    stop: async () => {
      controller.abort();
      await done;
      // Told once: the cleanup after a test that already looked at the failure stays quiet.
      const told = failure;
      failure = undefined;
      if (told !== undefined) throw told;
    },
  };
  running.push(consumer);
  return consumer;
}

const payload = (r: SourceRecord) => r.payload as JsonObject & { action: string; record: JsonObject; old?: JsonObject; metadata: JsonObject };

describe('postgres change capture', () => {
  it('reads a snapshot of the rows present, then every change in commit order with exact values', async () => {
    await admin.query(`CREATE TABLE cdc_orders (id bigserial PRIMARY KEY, total numeric, doc jsonb, raw bytea, at timestamptz, note text)`);
    await admin.query(`INSERT INTO cdc_orders (total, doc, raw, at, note) VALUES (1.10, '{"n": 12345678901234567890}', '\\x0102', '2026-01-01 00:00:00.123456+00', 'é 👍'), (2.20, '{}', NULL, NULL, NULL)`);
    const id = pipeline();
    const c = consume(open({ tables: ['cdc_orders'], batch_size: 100 }, id));
    await c.until(2);
    expect(c.records.map((r) => r.type)).toEqual(['cdc_orders.read', 'cdc_orders.read']);
    const first = payload(c.records[0]!);
    expect(first.action).toBe('read');
    expect(first.record).toEqual({ id: '1', total: '1.10', doc: { n: '12345678901234567890' }, raw: 'AQI=', at: '2026-01-01T00:00:00.123456Z', note: 'é 👍' });
    expect(first.metadata).toMatchObject({ schema: 'public', table: 'cdc_orders', commit_lsn: expect.stringMatching(/^[0-9A-F]+\/[0-9A-F]+$/) });

    // After the snapshot, the changes: one transaction of three, a rolled-back one, then two more.
    const client = await admin.connect();
    try {
      await client.query('BEGIN');
      await client.query(`INSERT INTO cdc_orders (total) VALUES (3.30)`);
      await client.query(`UPDATE cdc_orders SET total = 9.99 WHERE id = 1`);
      await client.query(`DELETE FROM cdc_orders WHERE id = 2`);
      await client.query('COMMIT');
      await client.query('BEGIN');
      await client.query(`INSERT INTO cdc_orders (total) VALUES (666)`);
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    await admin.query(`INSERT INTO cdc_orders (total) VALUES (4.40)`);
    await c.until(6);
    const changes = c.records.slice(2);
    expect(changes.map((r) => r.type)).toEqual(['cdc_orders.insert', 'cdc_orders.update', 'cdc_orders.delete', 'cdc_orders.insert']);
    const [insert, update, deleted, later] = changes.map(payload);
    expect(insert!.record).toMatchObject({ id: '3', total: '3.30' });
    expect(update!.record).toMatchObject({ id: '1', total: '9.99', doc: { n: '12345678901234567890' } });
    expect(update).not.toHaveProperty('old'); // replica identity default: no old row
    expect(deleted!.record).toEqual({ id: '2' }); // the key, as the replica identity gives it
    // One transaction: one commit LSN and one commit time, positions in order; ids are derived from them.
    expect(new Set([insert, update, deleted].map((p) => p!.metadata.commit_lsn)).size).toBe(1);
    expect(later!.metadata.commit_lsn).not.toBe(insert!.metadata.commit_lsn);
    expect(changes.map((r) => r.position)).toEqual([...changes.map((r) => r.position)].sort());
    expect(insert!.metadata.commit_time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(c.checkpoint()).toMatchObject({ v: 1, phase: 'stream', slot: `ferry_${id}` });
    expect(c.records.some((r) => payload(r).record.total === '666')).toBe(false);
  });

  it('restarts from a checkpoint inside a transaction without losing or repeating a change', async () => {
    await admin.query(`CREATE TABLE cdc_resume (id int PRIMARY KEY, v text)`);
    const id = pipeline();
    const config = { tables: ['public.cdc_resume'], batch_size: 2, snapshot: 'never' as const };
    const first = consume(open(config, id));
    // The slot exists once the source started: wait for it before writing.
    await waitForSlot(`ferry_${id}`);
    await admin.query(`INSERT INTO cdc_resume SELECT g, 'v' || g FROM generate_series(1, 5) g`);
    await first.until(2);
    await first.stop();
    const checkpoint = first.checkpoint();
    expect(checkpoint).toMatchObject({ phase: 'stream', txn: expect.any(String), index: expect.any(Number) });
    // Written while no one reads: kept by the slot.
    await admin.query(`INSERT INTO cdc_resume VALUES (6, 'v6')`);
    const taken = first.records.length;
    const second = consume(open(config, id), JSON.parse(JSON.stringify(checkpoint)) as Checkpoint);
    await second.until(6 - taken);
    const ids = [...first.records, ...second.records].map((r) => payload(r).record.id);
    expect(ids).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('confirms the slot only after the handler returns', async () => {
    await admin.query(`CREATE TABLE cdc_confirm (id int PRIMARY KEY)`);
    const id = pipeline();
    const source = open({ tables: ['cdc_confirm'], snapshot: 'never' }, id);
    const c = consume(source);
    await waitForSlot(`ferry_${id}`);
    const before = await confirmedLsn(`ferry_${id}`);
    let release!: () => void;
    c.hold(new Promise<void>((resolve) => (release = resolve)));
    await admin.query(`INSERT INTO cdc_confirm VALUES (1)`);
    await new Promise<void>((resolve) => {
      const look = () => (c.batches.length > 0 ? resolve() : setTimeout(look, 5));
      look();
    });
    // The batch is with the "destination": the slot has not moved past it.
    expect(await confirmedLsn(`ferry_${id}`)).toBe(before);
    release();
    await c.until(1);
    const end = parseLsnText(String((c.checkpoint() as { lsn: string }).lsn));
    await waitFor(async () => parseLsnText(await confirmedLsn(`ferry_${id}`)) >= end);
  });

  it('hands the next batch over while the last one commits, two at most, and confirms neither before its handler returns', async () => {
    await admin.query(`CREATE TABLE cdc_ahead (id int PRIMARY KEY)`);
    const id = pipeline();
    const c = consume(open({ tables: ['cdc_ahead'], snapshot: 'never', batch_size: 1 }, id));
    await waitForSlot(`ferry_${id}`);
    const before = await confirmedLsn(`ferry_${id}`);
    let release!: () => void;
    c.hold(new Promise<void>((resolve) => (release = resolve)));
    for (let i = 1; i <= 3; i++) await admin.query(`INSERT INTO cdc_ahead VALUES (${i})`);
    // The first batch is with the "destination"; the second is handed over meanwhile, the third waits.
    await waitFor(async () => c.batches.length === 2);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(c.batches.length).toBe(2);
    expect(await confirmedLsn(`ferry_${id}`)).toBe(before);
    release();
    await c.until(3);
    expect(c.records.map((r) => payload(r).record.id)).toEqual([1, 2, 3]);
    const end = parseLsnText(String((c.checkpoint() as { lsn: string }).lsn));
    await waitFor(async () => parseLsnText(await confirmedLsn(`ferry_${id}`)) >= end);
  });

  it('replica identity full: updates and deletes carry the old row', async () => {
    await admin.query(`CREATE TABLE cdc_full (id int PRIMARY KEY, v text)`);
    await admin.query(`ALTER TABLE cdc_full REPLICA IDENTITY FULL`);
    const id = pipeline();
    const c = consume(open({ tables: ['cdc_full'], snapshot: 'never' }, id));
    await waitForSlot(`ferry_${id}`);
    await admin.query(`INSERT INTO cdc_full VALUES (1, 'a')`);
    await admin.query(`UPDATE cdc_full SET v = 'b' WHERE id = 1`);
    await admin.query(`DELETE FROM cdc_full WHERE id = 1`);
    await c.until(3);
    const [, update, deleted] = c.records.map(payload);
    expect(update).toMatchObject({ action: 'update', record: { id: 1, v: 'b' }, old: { id: 1, v: 'a' } });
    expect(deleted).toMatchObject({ action: 'delete', record: { id: 1, v: 'b' }, old: { id: 1, v: 'b' } });
  });

  it('a TOASTed value an update leaves unchanged is left out and named, never a placeholder', async () => {
    await admin.query(`CREATE TABLE cdc_toast (id int PRIMARY KEY, big text, n int)`);
    // Random text does not compress: stored out of line (TOAST).
    await admin.query(`INSERT INTO cdc_toast SELECT 1, string_agg(md5(g::text), ''), 0 FROM generate_series(1, 400) g`);
    const id = pipeline();
    const c = consume(open({ tables: ['cdc_toast'], snapshot: 'never' }, id));
    await waitForSlot(`ferry_${id}`);
    await admin.query(`UPDATE cdc_toast SET n = 1 WHERE id = 1`);
    await c.until(1);
    const update = payload(c.records[0]!);
    expect(update.record).toEqual({ id: 1, n: 1 });
    expect(update.metadata.unchanged_columns).toEqual(['big']);
  });

  it("a transaction's changes of a table share one metadata object; one that adds to it has its own", async () => {
    await admin.query(`CREATE TABLE cdc_meta (id int PRIMARY KEY, big text, n int)`);
    await admin.query(`CREATE TABLE cdc_meta_other (id int PRIMARY KEY)`);
    await admin.query(`INSERT INTO cdc_meta SELECT 9, string_agg(md5(g::text), ''), 0 FROM generate_series(1, 400) g`);
    const id = pipeline();
    const c = consume(open({ tables: ['cdc_meta', 'cdc_meta_other'], snapshot: 'never' }, id));
    await waitForSlot(`ferry_${id}`);
    await admin.query(`BEGIN; INSERT INTO cdc_meta VALUES (1, 'a', 1), (2, 'b', 2); INSERT INTO cdc_meta_other VALUES (1); UPDATE cdc_meta SET n = 1 WHERE id = 9; DELETE FROM cdc_meta WHERE id = 1; COMMIT`);
    await admin.query(`INSERT INTO cdc_meta VALUES (3, 'c', 3)`);
    await c.until(6);
    const [first, second, other, toasted, deleted, later] = c.records.map(payload);
    expect(second!.metadata).toBe(first!.metadata);
    expect(deleted!.metadata).toBe(first!.metadata);
    expect(other!.metadata).not.toBe(first!.metadata);
    expect(other!.metadata).toMatchObject({ table: 'cdc_meta_other', commit_lsn: first!.metadata.commit_lsn });
    // Its unchanged TOASTed column is named in its own metadata, not in the shared one.
    expect(toasted!.metadata).toMatchObject({ table: 'cdc_meta', unchanged_columns: ['big'] });
    expect(first!.metadata).not.toHaveProperty('unchanged_columns');
    expect(later!.metadata).not.toBe(first!.metadata);
    expect(later!.metadata.commit_lsn).not.toBe(first!.metadata.commit_lsn);
  });

  it('a truncate is one event per table; a column added while streaming appears in later rows', async () => {
    await admin.query(`CREATE TABLE cdc_shape (id int PRIMARY KEY)`);
    const id = pipeline();
    const c = consume(open({ tables: ['cdc_shape'], snapshot: 'never' }, id));
    await waitForSlot(`ferry_${id}`);
    await admin.query(`INSERT INTO cdc_shape VALUES (1)`);
    await admin.query(`ALTER TABLE cdc_shape ADD COLUMN label text`);
    await admin.query(`INSERT INTO cdc_shape VALUES (2, 'two')`);
    await admin.query(`ALTER TABLE cdc_shape DROP COLUMN label`);
    await admin.query(`INSERT INTO cdc_shape VALUES (3)`);
    await admin.query(`TRUNCATE cdc_shape`);
    await c.until(4);
    expect(c.records.map((r) => [r.type, payload(r).record])).toEqual([
      ['cdc_shape.insert', { id: 1 }],
      ['cdc_shape.insert', { id: 2, label: 'two' }],
      ['cdc_shape.insert', { id: 3 }],
      ['cdc_shape.truncate', {}],
    ]);
  });

  it('refuses a table without a replica identity before publishing it', async () => {
    await admin.query(`CREATE TABLE cdc_nokey (v text)`);
    const id = pipeline();
    const c = consume(open({ tables: ['cdc_nokey'] }, id));
    const error = await c.stop().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConnectorError);
    expect((error as ConnectorError).code).toBe('configuration_invalid');
    expect((error as ConnectorError).retryable).toBe(false);
    expect((error as Error).message).toMatch(/cdc_nokey.*primary key/);
    // Nothing published: the application's UPDATEs and DELETEs still work.
    await admin.query(`UPDATE cdc_nokey SET v = 'x'`);
    expect((await admin.query(`SELECT 1 FROM pg_publication WHERE pubname = $1`, [`ferry_${id}`])).rows).toEqual([]);
  });
});

describe('postgres change capture: incremental snapshot (backfill)', () => {
  /** Every row's last state as the events say it: reads, inserts and updates set it, deletes remove it. */
  const fold = (records: readonly SourceRecord[]) => {
    const rows = new Map<number, JsonObject>();
    for (const r of records) {
      const p = payload(r);
      if (p.action === 'delete') rows.delete(p.record.id as number);
      else rows.set(p.record.id as number, p.record);
    }
    return rows;
  };
  const table = async (name: string) => new Map((await admin.query<{ id: number; v: string; n: number }>(`SELECT id, v, n FROM ${name} ORDER BY id`)).rows.map((r) => [r.id, { ...r } as JsonObject]));
  /** The backfill under way as of the consumer's checkpoint; undefined once it ended (the checkpoint keeps it, without a table). */
  const backfillOf = (c: Consumer) => {
    const backfill = (c.checkpoint() as { backfill?: { table?: string; after?: string[]; rows: number } } | null)?.backfill;
    return backfill?.table === undefined ? undefined : backfill;
  };

  it('reads the rows present in key-ordered chunks while writers change them, and ends with every row in its committed state', async () => {
    await admin.query(`CREATE TABLE cdc_backfill (id int PRIMARY KEY, v text NOT NULL, n int NOT NULL)`);
    await admin.query(`INSERT INTO cdc_backfill SELECT g, 'v' || g, 0 FROM generate_series(1, 400) g`);
    const id = pipeline();
    const c = consume(open({ tables: ['cdc_backfill'], snapshot: 'incremental', batch_size: 25 }, id));
    await waitForSlot(`ferry_${id}`);
    // Writers while the chunks are read: updates, deletes and inserts all over the key range.
    for (let k = 0; k < 300; k++) {
      const key = 1 + ((k * 137) % 450);
      if (k % 5 === 0) await admin.query('DELETE FROM cdc_backfill WHERE id = $1', [key]);
      else if (k % 7 === 0) await admin.query(`INSERT INTO cdc_backfill VALUES ($1, 'new', $2) ON CONFLICT (id) DO UPDATE SET v = 'again', n = $2`, [key, k]);
      else await admin.query('UPDATE cdc_backfill SET n = $2, v = $3 WHERE id = $1', [key, k, `u${k}`]);
    }
    await admin.query(`INSERT INTO cdc_backfill VALUES (100000, 'last', 0)`);
    await waitFor(async () => c.records.some((r) => payload(r).record.id === 100000) && backfillOf(c) === undefined);
    expect(fold(c.records)).toEqual(await table('cdc_backfill'));
    const reads = c.records.filter((r) => payload(r).action === 'read');
    expect(reads.length).toBeGreaterThan(0);
    expect(reads[0]!.type).toBe('cdc_backfill.read');
    const first = payload(reads[0]!);
    expect(first.metadata).toMatchObject({ schema: 'public', table: 'cdc_backfill', backfill_id: expect.stringMatching(/^bfl_[0-9A-HJKMNP-TV-Z]{26}$/) });
    // Read a chunk at a time: the checkpoints of the batches said how far the backfill was.
    const afters = c.batches.map((b) => (b.checkpoint as { backfill?: { after?: string[] } }).backfill?.after?.[0]).filter((a) => a !== undefined);
    expect(new Set(afters).size).toBeGreaterThan(5);
    // A row is read once, its id derived from the backfill, the table and its key.
    expect(new Set(reads.map((r) => r.position)).size).toBe(reads.length);
    expect(reads.every((r) => r.position.startsWith(`${String(first.metadata.backfill_id)}:public.cdc_backfill:`))).toBe(true);
  });

  it('takes a row changed between a chunk\'s select and its high watermark out of the chunk: the change, not the older read, is its last event', async () => {
    await admin.query(`CREATE TABLE cdc_window (id int PRIMARY KEY, v text NOT NULL, n int NOT NULL)`);
    await admin.query(`INSERT INTO cdc_window SELECT g, 'v' || g, 0 FROM generate_series(1, 30) g`);
    const id = pipeline();
    const config = { connection_string: url, capture: 'changes', tables: ['cdc_window'], snapshot: 'incremental', batch_size: 10 } as PostgresConfig;
    const ctx = connectorContext(config, { direction: 'source', pipelineId: id, outboundAllow: ['127.0.0.1'] });
    let chunks = 0;
    const reports: BackfillReport[] = [];
    const source = changeSource(changeSourceSettings(config, id), {
      reportBackfill: (progress) => reports.push(progress),
      clientConfig: clientConfig(config, { connectTimeoutMs: 5000, outbound: ctx.outbound }),
      clock: ctx.clock,
      // After the first chunk's select (rows 1-10 as they were), before its high watermark.
      chunkSelected: async () => {
        if (++chunks !== 1) return;
        await admin.query(`UPDATE cdc_window SET v = 'changed', n = 1 WHERE id = 5`);
        await admin.query(`DELETE FROM cdc_window WHERE id = 7`);
        await admin.query(`UPDATE cdc_window SET v = 'later' WHERE id = 25`);
      },
    });
    const c = consume(source);
    await waitFor(async () => backfillOf(c) === undefined && c.records.some((r) => payload(r).record.id === 25 && payload(r).action === 'read'));
    const reads = c.records.filter((r) => payload(r).action === 'read').map((r) => payload(r).record.id as number);
    // 5 and 7 are not read: their changes carry their state. 25, in a later chunk, is read as changed.
    expect(reads).toEqual(Array.from({ length: 30 }, (_, k) => k + 1).filter((k) => k !== 5 && k !== 7));
    expect(c.records.find((r) => payload(r).record.id === 25 && payload(r).action === 'read') && payload(c.records.find((r) => payload(r).record.id === 25 && payload(r).action === 'read')!).record.v).toBe('later');
    expect(fold(c.records)).toEqual(await table('cdc_window'));
    // How far it came, after each committed batch: rows read grow, and none is left at the end.
    await waitFor(async () => reports.at(-1)?.state === 'succeeded');
    const running = reports.filter((r) => r.state === 'running');
    expect(running.length).toBeGreaterThan(1);
    const backfillId = payload(c.records.find((x) => payload(x).action === 'read')!).metadata.backfill_id;
    expect(reports.every((r) => r.id === backfillId && r.tables.length === 1 && r.tables[0]!.table === 'public.cdc_window')).toBe(true);
    expect(running.every((r) => r.tables[0]!.state === 'running')).toBe(true);
    const rows = running.map((r) => r.tables[0]!.rowsRead);
    expect(rows).toEqual([...rows].sort((a, b) => a - b));
    // The end is said once, with every row handed over, and the server's estimate (30 rows, never analyzed: none).
    expect(reports.filter((r) => r.state === 'succeeded')).toEqual([{ id: backfillId, state: 'succeeded', tables: [{ table: 'public.cdc_window', rowsRead: 28, rowsEstimated: null, state: 'done' }] }]);
  });

  it('chunks a table by a composite key of awkward texts, and matches its changes by that key', async () => {
    await admin.query(`CREATE TABLE cdc_composite (region text NOT NULL, at timestamptz NOT NULL, n int NOT NULL, PRIMARY KEY (region, at))`);
    await admin.query(`INSERT INTO cdc_composite SELECT r, timestamptz '2026-01-01 00:00:00.123456+00' + g * interval '1 hour', g FROM unnest(ARRAY['eu "west"', 'us,east', 'é\\x']) r, generate_series(1, 7) g`);
    const id = pipeline();
    const config = { connection_string: url, capture: 'changes', tables: ['cdc_composite'], batch_size: 5 } as PostgresConfig;
    const ctx = connectorContext(config, { direction: 'source', pipelineId: id, outboundAllow: ['127.0.0.1'] });
    let chunks = 0;
    const source = changeSource(changeSourceSettings(config, id), {
      clientConfig: clientConfig(config, { connectTimeoutMs: 5000, outbound: ctx.outbound }),
      clock: ctx.clock,
      // In the second chunk's window: a row of it changed, one deleted.
      chunkSelected: async () => {
        if (++chunks !== 2) return;
        await admin.query(`UPDATE cdc_composite SET n = 100 WHERE region = 'eu "west"' AND n = 6`);
        await admin.query(`DELETE FROM cdc_composite WHERE region = 'eu "west"' AND n = 7`);
      },
    });
    const c = consume(source);
    await waitFor(async () => backfillOf(c) === undefined && c.records.filter((r) => payload(r).action === 'read').length >= 19);
    const reads = c.records.filter((r) => payload(r).action === 'read');
    // 21 rows, less the two changed in the second chunk's window: their changes carry them.
    expect(reads).toHaveLength(19);
    expect(reads.some((r) => payload(r).record.n === 6 && payload(r).record.region === 'eu "west"')).toBe(false);
    const held = new Map<string, JsonObject>();
    for (const r of c.records) {
      const p = payload(r);
      const key = `${String(p.record.region)}|${String(p.record.at)}`;
      if (p.action === 'delete') held.delete(key);
      else held.set(key, p.record);
    }
    const rows = (await admin.query<{ region: string; at: Date; n: number }>('SELECT region, at, n FROM cdc_composite')).rows;
    expect(held.size).toBe(rows.length);
    for (const row of rows) expect([...held.values()].find((r) => r.region === row.region && Date.parse(String(r.at)) === row.at.getTime())?.n).toBe(row.n);
  });

  it('resumes after a restart from its last committed chunk, not from the start', async () => {
    await admin.query(`CREATE TABLE cdc_backfill_resume (id int PRIMARY KEY, v text NOT NULL, n int NOT NULL)`);
    await admin.query(`INSERT INTO cdc_backfill_resume SELECT g, 'v' || g, 0 FROM generate_series(1, 200) g`);
    const id = pipeline();
    const config = { tables: ['cdc_backfill_resume'], snapshot: 'incremental' as const, batch_size: 20 };
    const first = consume(open(config, id));
    await first.until(60);
    await first.stop();
    const checkpoint = JSON.parse(JSON.stringify(first.checkpoint())) as Checkpoint;
    const progress = (checkpoint as { backfill: { after: string[]; rows: number } }).backfill;
    expect(Number(progress.after[0])).toBeGreaterThanOrEqual(40);
    // Changed while no one reads: a row already read, and one not yet.
    await admin.query(`UPDATE cdc_backfill_resume SET n = 7 WHERE id IN (1, 199)`);
    await admin.query(`DELETE FROM cdc_backfill_resume WHERE id = 150`);
    const second = consume(open(config, id), checkpoint);
    await waitFor(async () => backfillOf(second) === undefined && second.records.some((r) => payload(r).record.id === 199 && payload(r).record.n === 7));
    const reread = second.records.filter((r) => payload(r).action === 'read').map((r) => payload(r).record.id as number);
    expect(Math.min(...reread)).toBe(Number(progress.after[0]) + 1);
    // Every batch of the first run was committed (its handler returned) before it stopped.
    expect(fold([...first.records, ...second.records])).toEqual(await table('cdc_backfill_resume'));
  });

  it('runs the backfills asked for one at a time with their filter and chunk size, resumes one after a restart, and drops one cancelled', async () => {
    await admin.query(`CREATE TABLE cdc_asked (id int PRIMARY KEY, region text NOT NULL)`);
    await admin.query(`INSERT INTO cdc_asked SELECT g, CASE WHEN g % 2 = 0 THEN 'eu' ELSE 'us' END FROM generate_series(1, 100) g`);
    const id = pipeline();
    const config = { tables: ['cdc_asked'], snapshot: 'never' as const, batch_size: 50 };
    const B1 = 'bfl_01JD0000000000000000000001';
    const B2 = 'bfl_01JD0000000000000000000002';
    const reports: BackfillReport[] = [];
    const asked = (requested: Array<{ id: string; where?: Record<string, string>; chunkSize?: number }>, cancelled: string[] = []) => ({
      backfills: { requested: requested.map((r) => ({ id: r.id, tables: ['public.cdc_asked'], where: r.where ?? null, chunkSize: r.chunkSize ?? null })), cancelled: new Set(cancelled) },
      reportBackfill: (report: BackfillReport) => void reports.push(report),
    });
    const eu = { 'public.cdc_asked': "region = 'eu'" };
    // Chunks of 5 rows the filter selects: a batch per chunk.
    const first = consume(open(config, id, asked([{ id: B1, where: eu, chunkSize: 5 }])));
    await first.until(15);
    await first.stop();
    const checkpoint = JSON.parse(JSON.stringify(first.checkpoint())) as Checkpoint;
    const progress = (checkpoint as { backfill: { id: string; after: string[]; counts: Record<string, number> } }).backfill;
    expect(progress).toMatchObject({ id: B1, counts: { 'public.cdc_asked': Number(progress.after[0]) / 2 } });
    expect(first.batches.filter((b) => b.records.length > 0).every((b) => b.records.length === 5)).toBe(true);
    // Resumed after its last committed chunk, read to its end, and said done once.
    const second = consume(open(config, id, asked([{ id: B1, where: eu, chunkSize: 5 }])), checkpoint);
    await waitFor(async () => reports.some((r) => r.state === 'succeeded'));
    const reads = [...first.records, ...second.records].filter((r) => payload(r).action === 'read').map((r) => payload(r).record.id as number);
    expect(reads).toEqual(Array.from({ length: 50 }, (_, k) => 2 * (k + 1)));
    expect(Math.min(...second.records.map((r) => payload(r).record.id as number))).toBe(Number(progress.after[0]) + 2);
    expect(reports.filter((r) => r.state === 'succeeded')).toEqual([{ id: B1, state: 'succeeded', tables: [{ table: 'public.cdc_asked', rowsRead: 50, rowsEstimated: null, state: 'done' }] }]);
    // A restart first says again that it ended, for an engine that may not have heard.
    await second.stop();
    const ended = JSON.parse(JSON.stringify(second.checkpoint())) as Checkpoint;
    reports.length = 0;
    const third = consume(open(config, id, asked([{ id: B1 }, { id: B2, chunkSize: 10 }])), ended);
    await waitFor(async () => third.records.length >= 20);
    await third.stop();
    expect(reports[0]).toMatchObject({ id: B1, state: 'succeeded' });
    expect(third.records.every((r) => payload(r).metadata.backfill_id === B2)).toBe(true);
    // Cancelled while it ran: dropped where it stands; the stream goes on.
    const fourth = consume(open(config, id, asked([], [B2])), JSON.parse(JSON.stringify(third.checkpoint())) as Checkpoint);
    await admin.query(`INSERT INTO cdc_asked VALUES (101, 'eu')`);
    await fourth.until(1);
    expect(fourth.records.map((r) => [r.type, payload(r).record.id])).toEqual([['cdc_asked.insert', 101]]);
    expect(backfillOf(fourth)).toBeUndefined();
    await fourth.stop();
  });

  it('backfills a table added to tables when the source starts again, and only that one', async () => {
    await admin.query(`CREATE TABLE cdc_first (id int PRIMARY KEY, v text NOT NULL, n int NOT NULL)`);
    await admin.query(`CREATE TABLE cdc_added (id int PRIMARY KEY, v text NOT NULL, n int NOT NULL)`);
    await admin.query(`INSERT INTO cdc_first SELECT g, 'f' || g, 0 FROM generate_series(1, 30) g`);
    await admin.query(`INSERT INTO cdc_added SELECT g, 'a' || g, 0 FROM generate_series(1, 45) g`);
    const id = pipeline();
    const first = consume(open({ tables: ['cdc_first'], batch_size: 10 }, id));
    await waitFor(async () => first.records.length >= 30 && backfillOf(first) === undefined);
    await first.stop();
    const checkpoint = JSON.parse(JSON.stringify(first.checkpoint())) as Checkpoint;
    expect(checkpoint).toMatchObject({ tables: ['public.cdc_first'] });
    // Added to the config: the publication takes it, a backfill reads its rows, its changes stream.
    const second = consume(open({ tables: ['cdc_first', 'cdc_added'], batch_size: 10 }, id), checkpoint);
    await waitFor(async () => backfillOf(second) === undefined && second.records.filter((r) => r.type === 'cdc_added.read').length > 0);
    await admin.query(`UPDATE cdc_added SET n = 1 WHERE id = 45`);
    await admin.query(`UPDATE cdc_first SET n = 1 WHERE id = 1`);
    await second.until(47);
    expect(second.records.filter((r) => r.type === 'cdc_first.read')).toEqual([]);
    expect(second.records.filter((r) => r.type === 'cdc_added.read').map((r) => payload(r).record.id)).toEqual(Array.from({ length: 45 }, (_, k) => k + 1));
    expect(second.records.slice(45).map((r) => r.type)).toEqual(['cdc_added.update', 'cdc_first.update']);
    expect(second.checkpoint()).toMatchObject({ tables: ['public.cdc_first', 'public.cdc_added'] });
  });

  it('refuses a table it cannot read in chunks, naming it (backfill_needs_key)', async () => {
    await admin.query(`CREATE TABLE cdc_backfill_nokey (v text)`);
    await admin.query(`ALTER TABLE cdc_backfill_nokey REPLICA IDENTITY FULL`);
    const c = consume(open({ tables: ['cdc_backfill_nokey'], snapshot: 'incremental' }, pipeline()));
    await expect(c.until(1)).rejects.toMatchObject({ code: 'backfill_needs_key', message: expect.stringContaining('public.cdc_backfill_nokey') });
    await c.stop().catch(() => undefined);
  });
});

describe('answering keepalives', () => {
  it('answers when asked, and moves an idle slot up to the WAL end; otherwise stays quiet', () => {
    // Streaming (something waits to be delivered): the slot stays, and only a request is answered.
    expect(keepaliveAnswer({ idle: false, walEnd: 200n, confirmed: 100n, replyRequested: false })).toEqual({ confirmed: 100n, reply: false });
    expect(keepaliveAnswer({ idle: false, walEnd: 200n, confirmed: 100n, replyRequested: true })).toEqual({ confirmed: 100n, reply: true });
    // Idle: the slot moves to what the server has sent, and the server hears it.
    expect(keepaliveAnswer({ idle: true, walEnd: 200n, confirmed: 100n, replyRequested: false })).toEqual({ confirmed: 200n, reply: true });
    // Idle with nothing new: no answer unless asked; never backwards.
    expect(keepaliveAnswer({ idle: true, walEnd: 100n, confirmed: 100n, replyRequested: false })).toEqual({ confirmed: 100n, reply: false });
    expect(keepaliveAnswer({ idle: true, walEnd: 50n, confirmed: 100n, replyRequested: true })).toEqual({ confirmed: 100n, reply: true });
  });
});

describe('postgres change capture check', () => {
  const check = (config: Partial<PostgresConfig>, connection = url) => {
    const full = { connection_string: connection, capture: 'changes', ...config } as PostgresConfig;
    return plugin.check!(connectorContext(full, { direction: 'source', outboundAllow: ['127.0.0.1'] }));
  };

  it('is healthy with the server facts and the lag of Ferry\'s slots', async () => {
    await admin.query(`CREATE TABLE cdc_checked (id int PRIMARY KEY)`);
    const id = pipeline();
    const c = consume(open({ tables: ['cdc_checked'], snapshot: 'never' }, id));
    await waitForSlot(`ferry_${id}`);
    await c.stop();
    const result = await check({ tables: ['cdc_checked'] });
    expect(result.health, JSON.stringify(result.error)).toBe('healthy');
    expect(result.details).toMatchObject({ wal_level: 'logical' });
    const slots = (result.details!.replication_slots as Array<{ slot_name: string; active: boolean; lag_bytes: number }>);
    expect(slots.find((s) => s.slot_name === `ferry_${id}`)).toEqual({ slot_name: `ferry_${id}`, active: false, lag_bytes: expect.any(Number) });
  });

  it('names wal_level on a server without logical replication', async () => {
    const replica = await startTestPostgres({ settings: { wal_level: 'replica' } });
    try {
      const database = await replica.createDatabase('cdc_wal_level');
      const db = new pg.Client({ connectionString: database });
      await db.connect();
      await db.query('CREATE TABLE t (id int PRIMARY KEY)');
      await db.end();
      const result = await check({ tables: ['t'] }, database);
      expect([result.health, result.error?.code]).toEqual(['down', 'configuration_invalid']);
      expect(result.error?.message).toMatch(/wal_level is replica.*wal_level = logical/);
    } finally {
      await replica.stop();
    }
  });

  it('names what is missing: a table, a replica identity, the REPLICATION attribute, ownership', async () => {
    await admin.query(`CREATE TABLE cdc_unkeyed (v text)`);
    await admin.query(`CREATE TABLE cdc_foreign (id int PRIMARY KEY)`);
    const missing = await check({ tables: ['cdc_nowhere'] });
    expect([missing.health, missing.error?.code]).toEqual(['down', 'table_not_found']);
    expect(missing.error?.message).toContain('cdc_nowhere');
    const unkeyed = await check({ tables: ['cdc_unkeyed'] });
    expect([unkeyed.error?.code, unkeyed.error?.message]).toEqual(['configuration_invalid', expect.stringMatching(/cdc_unkeyed.*primary key/)]);

    // A role that may log in and read, but not replicate; then one that replicates without owning the table.
    const role = `cdc_role_${process.pid}_${Math.floor(Math.random() * 1e9)}`;
    await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD 'pw-cdc-role'`);
    await admin.query(`GRANT SELECT ON cdc_foreign TO ${role}`);
    const roleUrl = new URL(url);
    roleUrl.username = role;
    roleUrl.password = 'pw-cdc-role';
    const plain = await check({ tables: ['cdc_foreign'] }, roleUrl.toString());
    expect([plain.error?.code, plain.error?.message]).toEqual(['permission_denied', expect.stringContaining('REPLICATION')]);
    await admin.query(`ALTER ROLE ${role} REPLICATION`);
    const foreign = await check({ tables: ['cdc_foreign'] }, roleUrl.toString());
    expect([foreign.error?.code, foreign.error?.message]).toEqual(['permission_denied', expect.stringContaining('ownership of cdc_foreign')]);
    expect(foreign.error?.message).not.toContain('pw-cdc-role');
  });
});

describe('what a deleted pipeline releases', () => {
  const cdc = (slot: string) => ({ v: 1, phase: 'stream', slot, lsn: '0/16B3748', own: { slot: true, publication: true } });
  it('its slot and publication while it captures changes; nothing for a polling pipeline', () => {
    expect(releaseSettings({ connection_string: url, capture: 'changes', tables: ['t'] }, 'pip_A', null)).toMatchObject({ slot: 'ferry_pip_a', publication: 'ferry_pip_a', defaultSlot: true });
    expect(releaseSettings({ connection_string: url, table: 't', cursor_column: 'id', type: 'x' }, 'pip_A', '42')).toBeUndefined();
    expect(releaseSettings({ connection_string: url, table: 't', cursor_column: 'id', type: 'x' }, 'pip_A', null)).toBeUndefined();
  });

  it('the slot its checkpoint names when it was switched to polling after capturing', () => {
    const config = { connection_string: url, table: 't', cursor_column: 'id', type: 'x' };
    expect(releaseSettings(config, 'pip_A', cdc('ferry_pip_a'))).toMatchObject({ slot: 'ferry_pip_a', defaultSlot: true, publication: 'ferry_pip_a', defaultPublication: true });
    expect(releaseSettings(config, 'pip_A', cdc('my_slot'))).toMatchObject({ slot: 'my_slot', defaultSlot: false });
  });
});

describe('postgres change capture, stopped while its stream connects', () => {
  it('ends once the connection is made, never streaming, when stopped during the connect', async () => {
    await admin.query(`CREATE TABLE cdc_connecting (id int PRIMARY KEY)`);
    // A proxy to the server that holds the stream's replication connection (the second: the
    // first creates the slot) at its startup until told: the window in which the source is stopped.
    const target = new URL(url);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let replications = 0;
    let held = 0;
    const proxy = createServer((client) => {
      const upstream = connect(Number(target.port), target.hostname);
      client.once('data', (first) => {
        const forward = () => {
          upstream.write(first);
          client.pipe(upstream);
          upstream.pipe(client);
        };
        // The startup message names its parameters: a walsender's has `replication`.
        if (first.includes('replication\0') && ++replications === 2) {
          held++;
          void released.then(forward);
        } else forward();
      });
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const proxied = new URL(url);
      proxied.port = String((proxy.address() as AddressInfo).port);
      const id = pipeline();
      const c = consume(open({ connection_string: proxied.toString(), tables: ['cdc_connecting'], snapshot: 'never' }, id));
      await waitFor(async () => held === 1);
      const stopped = c.stop();
      release();
      // Without the check after the connect, the stream would run on and this would never resolve.
      await stopped;
      await admin.query(`INSERT INTO cdc_connecting VALUES (1)`);
      expect(c.records).toEqual([]);
      await waitFor(async () => (await admin.query(`SELECT 1 FROM pg_replication_slots WHERE slot_name = $1 AND NOT active`, [`ferry_${id}`])).rows.length > 0);
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
  });
});

async function waitFor(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error('condition not met');
}

function waitForSlot(slot: string): Promise<void> {
  return waitFor(async () => (await admin.query(`SELECT 1 FROM pg_replication_slots WHERE slot_name = $1 AND active`, [slot])).rows.length > 0);
}

async function confirmedLsn(slot: string): Promise<string> {
  return (await admin.query<{ lsn: string }>(`SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name = $1`, [slot])).rows[0]!.lsn;
}

function parseLsnText(text: string): bigint {
  const [hi, lo] = text.split('/');
  return (BigInt(`0x${hi}`) << 32n) | BigInt(`0x${lo}`);
}

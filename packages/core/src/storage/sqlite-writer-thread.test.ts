import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openStorage, type FerryStorage } from './ferry-storage.js';
import { sqliteStorage } from './storage-config.js';
import { deriveEventId } from '../events/index.js';
import { unitSteps, unitsOf } from './repositories/events-repo.js';
import { singleStep, WriterThreadError, type WriterStep } from './sqlite-writer-thread.js';

const T0 = '2026-01-01T00:00:00.000Z';
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function fileStorage(options: { writerThread?: boolean } = {}): Promise<FerryStorage> {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-writer-'));
  const storage = await openStorage(sqliteStorage({ filename: join(dir, 'ferry.db'), ...options }));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  cleanups.push(() => storage.close());
  return storage;
}

/** Workspaces inserted row by row, with the time shared and the id varying. */
function workspaces(ids: string[]): WriterStep {
  return { sql: 'INSERT INTO workspaces (id, created_at) VALUES (?, ?)', rows: ids.length, shared: [null, T0], varying: [0], values: ids };
}

const ids = async (storage: FerryStorage) => (await storage.repos.workspaces.list()).map((w) => w.id).sort();

describe('SqliteWriterThread', () => {
  it('belongs to SQLite on a file only, unless turned off', async () => {
    expect((await fileStorage()).writer).toBeDefined();
    expect((await fileStorage({ writerThread: false })).writer).toBeUndefined();
    const memory = await openStorage(sqliteStorage({ filename: ':memory:' }));
    cleanups.push(() => memory.close());
    expect(memory.writer).toBeUndefined();
  });

  it('commits its steps in one transaction, seen by the engine connection once it resolves', async () => {
    const storage = await fileStorage();
    const outcome = await storage.writer!.transaction([workspaces(['ws_a', 'ws_b', 'ws_c']), singleStep('UPDATE workspaces SET created_at = ? WHERE id = ?', ['2026-02-01T00:00:00.000Z', 'ws_b'])]);
    expect(outcome).toEqual({ committed: true, changes: [3, 1] });
    expect(await ids(storage)).toEqual(['ws_a', 'ws_b', 'ws_c']);
    expect((await storage.repos.workspaces.get('ws_b'))?.created_at).toBe('2026-02-01T00:00:00.000Z');
  });

  it('rolls everything back when a fenced step changes nothing', async () => {
    const storage = await fileStorage();
    const outcome = await storage.writer!.transaction([workspaces(['ws_a']), singleStep('UPDATE workspaces SET created_at = ? WHERE id = ?', [T0, 'ws_missing'], { mustChange: true })]);
    expect(outcome).toEqual({ committed: false, unchanged: 1 });
    expect(await ids(storage)).toEqual([]);
  });

  it("rejects with SQLite's code when a statement fails, and commits none of the transaction", async () => {
    const storage = await fileStorage();
    await storage.writer!.transaction([workspaces(['ws_a'])]);
    const failed = storage.writer!.transaction([workspaces(['ws_b', 'ws_a'])]);
    await expect(failed).rejects.toBeInstanceOf(WriterThreadError);
    await expect(failed).rejects.toMatchObject({ code: 'SQLITE_CONSTRAINT_PRIMARYKEY' });
    expect(await ids(storage)).toEqual(['ws_a']);
    // The thread goes on after a failure.
    await storage.writer!.transaction([workspaces(['ws_c'])]);
    expect(await ids(storage)).toEqual(['ws_a', 'ws_c']);
  });

  it('lets a transaction in flight finish when the storage closes, and takes no more', async () => {
    const storage = await fileStorage();
    const writer = storage.writer!;
    const running = writer.transaction([workspaces(Array.from({ length: 500 }, (_, i) => `ws_${i}`))]);
    const closing = storage.close();
    await expect(running).resolves.toEqual({ committed: true, changes: [500] });
    await closing;
    await expect(writer.transaction([workspaces(['ws_late'])])).rejects.toMatchObject({ code: 'FERRY_CLOSED' });
    const again = await openStorage(sqliteStorage({ filename: (storage.knex.client as { connectionSettings: { filename: string } }).connectionSettings.filename }));
    cleanups.push(() => again.close());
    expect((await again.repos.workspaces.list()).length).toBe(500);
  });

  it("writes a batch's unit of the event log: its body compressed on the thread, its keys, its types, the change rows of its dead letters", async () => {
    const storage = await fileStorage();
    const row = (n: number, status: 'delivered' | 'filtered' | 'dead_lettered', type = 't') => ({
      id: `evt_${n}`, workspace_id: "o'brien", pipeline_id: 'pip_1', type, occurred_at: T0, payload: { n, q: "'; DROP TABLE event_units; --" }, status, attempts: 1,
      error: status === 'dead_lettered' ? { stage: 'destination', code: 'rejected', message: 'no' } : null, dead_lettered_at: status === 'dead_lettered' ? T0 : null, created_at: T0, updated_at: T0,
    });
    for (const rows of [[row(1, 'delivered'), row(2, 'filtered', 'u')], [row(3, 'dead_lettered'), row(4, 'delivered')]]) {
      await storage.writer!.transaction(unitsOf(rows, { canonicalTimes: true }).flatMap(unitSteps));
    }
    const listed = await storage.repos.events.list("o'brien", 'pip_1', {}, undefined, 10);
    expect(listed.rows.map((e) => [e.id, e.type, e.status, e.payload?.n, e.log])).toEqual([
      ['evt_1', 't', 'delivered', 1, { unit: 1, index: 0 }],
      ['evt_2', 'u', 'filtered', 2, { unit: 1, index: 1 }],
      ['evt_3', 't', 'dead_lettered', 3, { unit: 2, index: 0 }],
      ['evt_4', 't', 'delivered', 4, { unit: 2, index: 1 }],
    ]);
    const body = (await storage.knex('event_units').where('id', 1).first()) as { body: Buffer };
    expect(Buffer.isBuffer(body.body) && body.body[0] !== '{'.charCodeAt(0)).toBe(true);
    expect((await storage.knex('event_keys').count({ n: '*' }))[0]!.n).toBe(4);
    expect((await storage.knex('event_unit_types').where('unit_id', 1).orderBy('type')).map((t: { type: string }) => t.type)).toEqual(['t', 'u']);
    expect(await storage.knex('event_changes').select('event_id', 'unit_id', 'idx', 'status')).toEqual([{ event_id: 'evt_3', unit_id: 2, idx: 0, status: 'dead_lettered' }]);
    expect((await storage.repos.events.get("o'brien", 'evt_4'))?.log).toEqual({ unit: 2, index: 1 });
    // More events than a block holds: packed on the thread, read back block by block.
    const many = Array.from({ length: 300 }, (_, k) => row(1000 + k, k === 250 ? 'filtered' : 'delivered'));
    await storage.writer!.transaction(unitsOf(many, { canonicalTimes: true }).flatMap(unitSteps));
    expect(await storage.repos.events.get("o'brien", 'evt_1250')).toMatchObject({ status: 'filtered', payload: { n: 1250 }, log: { unit: 3, index: 250 } });
    const tail = await storage.repos.events.list("o'brien", 'pip_1', {}, ['3', '126'], 3);
    expect(tail.rows.map((e) => e.id)).toEqual(['evt_1127', 'evt_1128', 'evt_1129']);
    // A stream's ids (ULIDs of their records' times): the unit is filed by their span, not a key each.
    const t0 = Date.parse(T0);
    const streamed = Array.from({ length: 200 }, (_, k) => ({ ...row(2000 + k, 'delivered'), id: deriveEventId('pip_1', `p${k}`, t0 + k) }));
    await storage.writer!.transaction(unitsOf(streamed, { canonicalTimes: true }).flatMap(unitSteps));
    expect((await storage.knex('event_keys').count({ n: '*' }))[0]!.n).toBe(4 + 300);
    expect((await storage.knex('event_key_spans').where('unit_id', 4).count({ n: '*' }))[0]!.n).toBeGreaterThan(0);
    for (const k of [0, 150, 199]) expect(await storage.repos.events.get("o'brien", streamed[k]!.id)).toMatchObject({ payload: { n: 2000 + k }, log: { unit: 4, index: k } });
    // Packed on the thread with each block's range of ids, which a lookup reads before any block.
    const stored = ((await storage.knex('event_units').where('id', 4).first()) as { body: Buffer }).body;
    const header = JSON.parse(stored.toString('utf8', 4, 4 + stored.readUInt32LE(0))) as { r: string[][] };
    expect(header.r).toEqual([[streamed[0]!.id, streamed[127]!.id], [streamed[128]!.id, streamed[199]!.id]]);
  });

  it('runs a chain in order: one sent ahead of a failed one waits for it to commit, or fails with it', async () => {
    const storage = await fileStorage();
    const writer = storage.writer!;
    await writer.transaction([workspaces(['ws_taken'])]);
    let release!: () => void;
    const zeroDone = new Promise<void>((resolve) => (release = resolve));
    // 0 fails (a taken id); 1, sent before 0 is tried again, is refused until 0 committed.
    const zero = writer.transaction([workspaces(['ws_0', 'ws_taken'])], { chain: 'c', seq: 0, after: Promise.resolve() });
    zero.catch(() => undefined);
    const one = writer.transaction([workspaces(['ws_1'])], { chain: 'c', seq: 1, after: zeroDone });
    await expect(zero).rejects.toMatchObject({ code: 'SQLITE_CONSTRAINT_PRIMARYKEY' });
    await writer.transaction([workspaces(['ws_0'])], { chain: 'c', seq: 0, after: Promise.resolve() });
    expect(await ids(storage)).toEqual(['ws_0', 'ws_taken']);
    release();
    await one;
    expect(await ids(storage)).toEqual(['ws_0', 'ws_1', 'ws_taken']);

    // A transaction behind one that failed for good fails with it, and commits nothing.
    const failed = writer.transaction([workspaces(['ws_taken'])], { chain: 'd', seq: 0, after: Promise.resolve() });
    failed.catch(() => undefined);
    const behind = writer.transaction([workspaces(['ws_never'])], { chain: 'd', seq: 1, after: failed });
    await expect(behind).rejects.toMatchObject({ code: 'SQLITE_CONSTRAINT_PRIMARYKEY' });
    expect(await ids(storage)).toEqual(['ws_0', 'ws_1', 'ws_taken']);
  });
});

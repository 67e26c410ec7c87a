import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { afterEach, describe, expect, it } from 'vitest';
import { postgresStorage, sqliteStorage, type StorageConfig } from '@ferry/core';
import { migrationSource, MIGRATIONS_TABLE, openStorage } from '@ferry/core/internal';
import { getSharedTestPostgres } from '@ferry/test-servers';

/**
 * A database made by the release before the event log's units (its schema up to migration 0007,
 * its `events` rows written a row per event), upgraded in place by opening it: every event is
 * still listed, in the old order, with its payload, status, error and attempts; the
 * dead-lettered and replaying ones stay replayable; ids are found.
 */
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();

/** The rows as the previous release wrote them: payloads and errors as JSON text. */
function oldRows(count: number) {
  return Array.from({ length: count }, (_, i) => {
    const dead = i % 700 === 3;
    const status = dead ? 'dead_lettered' : i === 1500 ? 'replaying' : i % 9 === 0 ? 'filtered' : 'delivered';
    return {
      id: `evt_01JH${String(i).padStart(22, '0')}`, workspace_id: 'ws_a', pipeline_id: i % 2 === 0 ? 'pip_even' : 'pip_odd', type: i % 3 === 0 ? 'order.paid' : 'order.created',
      // Out of id order in time: the old listing's order (occurred_at, id) is what the units keep.
      occurred_at: at(2000 - i), payload: JSON.stringify({ i, text: 'tab\there \u2028 é😀', big: '123456789012345678901234567890' }), status, attempts: dead ? 3 : 1,
      error: dead ? JSON.stringify({ stage: 'destination', code: 'rejected', message: 'no' }) : null, dead_lettered_at: dead ? at(3000) : null,
      created_at: at(3000), updated_at: at(3000),
    };
  });
}

async function upgrade(config: StorageConfig, raw: Knex): Promise<void> {
  for (let k = 0; k < 7; k++) await raw.migrate.up({ migrationSource, tableName: MIGRATIONS_TABLE });
  const rows = oldRows(2_345);
  for (let k = 0; k < rows.length; k += 200) await raw('events').insert(rows.slice(k, k + 200));
  await raw.destroy();

  const storage = await openStorage(config);
  cleanups.push(() => storage.close());
  for (const pipeline of ['pip_even', 'pip_odd']) {
    const expected = rows.filter((r) => r.pipeline_id === pipeline).sort((a, b) => (a.occurred_at === b.occurred_at ? (a.id < b.id ? -1 : 1) : a.occurred_at < b.occurred_at ? -1 : 1));
    const listed = [];
    let after: string[] | undefined;
    for (;;) {
      const page = await storage.repos.events.list('ws_a', pipeline, {}, after, 500);
      listed.push(...page.rows);
      if (!page.hasMore) break;
      after = [String(page.rows.at(-1)!.log!.unit), String(page.rows.at(-1)!.log!.index)];
    }
    expect(listed.map((r) => r.id)).toEqual(expected.map((r) => r.id));
    expect(listed.map((r) => [r.status, r.attempts, r.payload])).toEqual(expected.map((r) => [r.status, r.attempts, JSON.parse(r.payload)]));
  }
  const dead = rows.find((r) => r.status === 'dead_lettered' && r.pipeline_id === 'pip_odd')!;
  expect(await storage.repos.events.get('ws_a', dead.id)).toMatchObject({ status: 'dead_lettered', attempts: 3, error: { code: 'rejected' }, dead_lettered_at: at(3000) });
  expect(await storage.repos.events.get('ws_a', rows[1234]!.id)).toMatchObject({ payload: JSON.parse(rows[1234]!.payload) });
  expect(await storage.repos.events.get('ws_b', rows[1234]!.id)).toBeNull();
  expect(await storage.repos.events.countOpen('pip_even')).toEqual({ dead_lettered: rows.filter((r) => r.pipeline_id === 'pip_even' && r.status === 'dead_lettered').length, replaying: 1 });
  expect((await storage.repos.events.list('ws_a', 'pip_odd', { status: 'dead_lettered' }, undefined, 100)).rows.map((r) => r.id)).toEqual(
    rows.filter((r) => r.pipeline_id === 'pip_odd' && r.status === 'dead_lettered').sort((a, b) => (a.occurred_at < b.occurred_at ? -1 : 1)).map((r) => r.id),
  );
  expect(await storage.repos.events.updateStatus('ws_a', dead.id, { status: 'replaying' }, 'dead_lettered')).toBe(true);
  expect(await storage.knex.schema.hasTable('events')).toBe(false);
  // Retention takes the moved units with what finds them (on SQLite, a key row per event then).
  const units = async () => Number((await storage.knex('event_units').count({ n: '*' }))[0]!.n);
  const before = await units();
  for (const pipeline of ['pip_even', 'pip_odd']) while ((await storage.repos.events.deleteSettledBefore(pipeline, at(4000), 100)) > 0);
  expect(await units()).toBeLessThan(before);
  if (storage.dialect.inProcess) {
    expect((await storage.knex('event_keys').whereNotIn('unit_id', storage.knex('event_units').select('id')).count({ n: '*' }))[0]!.n).toBe(0);
  }
  expect(await storage.repos.events.get('ws_a', dead.id)).toMatchObject({ status: 'replaying' });
}

describe('an event log made by the previous release', () => {
  it('is upgraded in place on SQLite', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ferry-upgrade-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const filename = join(dir, 'ferry.db');
    await upgrade(sqliteStorage({ filename }), knexFactory({ client: 'better-sqlite3', connection: { filename }, useNullAsDefault: true }));
  });

  it('is upgraded in place on Postgres', async () => {
    const connectionString = await (await getSharedTestPostgres()).createDatabase('upgrade');
    await upgrade(postgresStorage({ connectionString }), knexFactory({ client: 'pg', connection: connectionString }));
  });
});

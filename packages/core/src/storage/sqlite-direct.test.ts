import { afterEach, describe, expect, it } from 'vitest';
import { openStorage, type FerryStorage } from './ferry-storage.js';
import type { ApiKeyRow } from './repositories/api-keys-repo.js';
import { sqliteStatement } from './sqlite-direct.js';
import { sqliteStorage } from './storage-config.js';

const NOW = '2026-11-22T10:00:00.000Z';
const key = (n: number): ApiKeyRow => ({
  id: `key_${n}`,
  key_id: `kid0000${n}`,
  workspace_id: 'default',
  name: null,
  scopes: ['write'],
  secret_hash: 'x'.repeat(64),
  last4: 'abcd',
  rate_limit: null,
  created_at: NOW,
  last_used_at: null,
  revoked_at: null,
});

describe('SqliteIdleReader (the direct read path of hot lookups)', () => {
  let storage: FerryStorage | undefined;
  afterEach(() => storage?.close());

  it('reads committed rows directly and maps them as knex does', async () => {
    storage = await openStorage(sqliteStorage({ filename: ':memory:' }));
    await storage.repos.workspaces.ensure('default', NOW);
    await storage.repos.apiKeys.insert(key(1));
    const direct = await storage.repos.apiKeys.getByKeyId('kid00001');
    const viaTransaction = await storage.transaction((repos) => repos.apiKeys.getByKeyId('kid00001'));
    expect(direct).toEqual(viaTransaction);
    expect(direct?.scopes).toEqual(['write']);
    expect(await storage.repos.apiKeys.getByKeyId('nope')).toBeNull();
  });

  it("never sees another flow's uncommitted rows: while a transaction is open it waits for it", async () => {
    storage = await openStorage(sqliteStorage({ filename: ':memory:' }));
    await storage.repos.workspaces.ensure('default', NOW);
    const order: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let inserted!: () => void;
    const didInsert = new Promise<void>((resolve) => (inserted = resolve));
    const tx = storage.transaction(async (repos) => {
      await repos.apiKeys.insert(key(2));
      inserted();
      await held;
      order.push('commit');
    });
    await didInsert;
    const read = storage.repos.apiKeys.getByKeyId('kid00002').then((row) => {
      order.push(row ? 'read: row' : 'read: none');
      return row;
    });
    // Let the read run as far as it can while the transaction stays open.
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual([]);
    release();
    await tx;
    expect((await read)?.id).toBe('key_2');
    expect(order).toEqual(['commit', 'read: row']);
  });
});

describe('sqliteStatement (the per-connection statement cache)', () => {
  it('prepares a text once per connection, and drops the oldest past 500 texts', () => {
    const prepared: string[] = [];
    const conn = { prepare: (sql: string) => (prepared.push(sql), { sql }) };
    const other = { prepare: (sql: string) => ({ sql }) };
    const first = sqliteStatement(conn, 'select 0');
    expect(sqliteStatement(conn, 'select 0')).toBe(first);
    expect(sqliteStatement(other, 'select 0')).not.toBe(first);
    for (let i = 1; i <= 500; i++) sqliteStatement(conn, `select ${i}`);
    expect(prepared).toHaveLength(501);
    // 'select 0' was the oldest of 501: gone, prepared again; 'select 500' is still cached.
    expect(sqliteStatement(conn, 'select 0')).not.toBe(first);
    sqliteStatement(conn, 'select 500');
    expect(prepared).toHaveLength(502);
  });
});

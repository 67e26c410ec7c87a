import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { postgresStorage, sqliteStorage, type StorageConfig } from '@ferry/core';
import { openStorage, type FerryStorage } from '@ferry/core/internal';
import { getSharedTestPostgres } from '@ferry/test-servers';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');

const dialects: [string, () => Promise<StorageConfig>][] = [
  ['sqlite', async () => sqliteStorage({ filename: join(mkdtempSync(join(tmpdir(), 'ferry-leases-')), 'leases.db') })],
  ['postgres', async () => postgresStorage({ connectionString: await (await getSharedTestPostgres()).createDatabase('leases') })],
];

describe.each(dialects)('lease renewal after an outage (%s)', (_name, config) => {
  let storage: FerryStorage | undefined;
  afterEach(async () => {
    await storage?.close();
    storage = undefined;
  });

  it('a holder cut off past expiry renews its lease if nobody took it, and is refused once someone did', async () => {
    storage = await openStorage(await config());
    const leases = storage.repos.leases;
    const a = (await leases.acquire('pipeline:pip_1', 'engine-a', 30_000, T0))!;
    // Expired, but nobody else took it: the token still holds it, so the renewal goes through.
    expect(await leases.heartbeat('pipeline:pip_1', a.token, 30_000, T0 + 31_000)).toBe(true);
    expect(await leases.get('pipeline:pip_1')).toMatchObject({ holder: 'engine-a', token: a.token, expires_at: new Date(T0 + 61_000).toISOString() });
    expect(await leases.acquire('pipeline:pip_1', 'engine-b', 30_000, T0 + 40_000)).toBeNull();
    // Expired and taken over: the old token is refused from then on.
    const b = (await leases.acquire('pipeline:pip_1', 'engine-b', 30_000, T0 + 61_000))!;
    expect(b).not.toBeNull();
    expect(await leases.heartbeat('pipeline:pip_1', a.token, 30_000, T0 + 61_001)).toBe(false);
    expect(await leases.heartbeat('pipeline:pip_1', b.token, 30_000, T0 + 61_001)).toBe(true);
    expect((await leases.get('pipeline:pip_1'))?.holder).toBe('engine-b');
  });
});

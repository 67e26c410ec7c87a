import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStorage, sqliteStorage, type BackfillRow, type FerryStorage } from '../storage/index.js';
import { backfillRequests, backfillRequestsVersion } from './backfill-requests.js';

const AT = '2026-11-29T10:00:00.000Z';
const row = (id: string, state: BackfillRow['state']): BackfillRow => ({
  id,
  workspace_id: 'ws',
  pipeline_id: 'pip_1',
  state,
  tables: [{ table: 'public.items', rows_read: 0, rows_estimated: null, state: 'pending' }],
  where: { 'public.items': 'id > 1' },
  chunk_size: 50,
  rows_read: 0,
  error: null,
  created_at: AT,
  started_at: null,
  finished_at: null,
  updated_at: AT,
});

describe('the backfills a source is told of, and when it is opened again', () => {
  let storage: FerryStorage;
  beforeEach(async () => {
    storage = await openStorage(sqliteStorage({ filename: ':memory:' }));
  });
  afterEach(async () => {
    await storage.close();
  });
  const version = () => backfillRequestsVersion(storage.repos, 'pip_1');
  const end = (id: string, state: 'succeeded' | 'failed' | 'cancelled') => storage.repos.backfills.updateOpen(id, { state, finished_at: AT, updated_at: AT });

  it('tells the queued and running ones, oldest first, and the cancelled ones', async () => {
    await storage.repos.backfills.insert(row('bfl_1', 'running'));
    await storage.repos.backfills.insert(row('bfl_2', 'queued'));
    await storage.repos.backfills.insert(row('bfl_3', 'queued'));
    await end('bfl_3', 'cancelled');
    const { requests } = await backfillRequests(storage.repos, 'pip_1');
    expect(requests.requested).toEqual([
      { id: 'bfl_1', tables: ['public.items'], where: { 'public.items': 'id > 1' }, chunkSize: 50 },
      { id: 'bfl_2', tables: ['public.items'], where: { 'public.items': 'id > 1' }, chunkSize: 50 },
    ]);
    expect([...requests.cancelled]).toEqual(['bfl_3']);
  });

  it('changes when one is asked for, cancelled, or ends while another waits; not for one the source runs on its own', async () => {
    const idle = await version();
    // The source started one itself (a first snapshot): recorded running, nothing to reopen for.
    await storage.repos.backfills.insert(row('bfl_1', 'running'));
    expect(await version()).toBe(idle);
    await end('bfl_1', 'succeeded');
    expect(await version()).toBe(idle);
    // Asked for: reopen, the source starts it.
    await storage.repos.backfills.insert(row('bfl_2', 'queued'));
    const asked = await version();
    expect(asked).not.toBe(idle);
    await storage.repos.backfills.updateOpen('bfl_2', { state: 'running', started_at: AT, updated_at: AT });
    const running = await version();
    // Another waits behind it: it ends, and the source must be opened again to start the next.
    await storage.repos.backfills.insert(row('bfl_3', 'queued'));
    const waiting = await version();
    expect(waiting).not.toBe(running);
    await end('bfl_2', 'failed');
    expect(await version()).not.toBe(waiting);
    // Cancelled while it runs: reopen, the source drops it.
    await storage.repos.backfills.updateOpen('bfl_3', { state: 'running', started_at: AT, updated_at: AT });
    const third = await version();
    await end('bfl_3', 'cancelled');
    expect(await version()).not.toBe(third);
  });
});

import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { FerryError, sqliteStorage } from '@ferry/core';
import { isStorageUnavailable, openStorage, translateStorageError, type FerryStorage } from '@ferry/core/internal';
import { eventually, VirtualClock } from '@ferry/testing';

const holderScript = join(import.meta.dirname, 'fixtures', 'lock-holder.mjs');
const root = join(import.meta.dirname, '..', '..');
const T0 = '2026-01-01T00:00:00.000Z';

/** Another process holding the write lock of `filename` until `release()`. */
interface LockHolder {
  release(): Promise<void>;
  stop(): void;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Resolves once the child printed `line`. */
function printed(child: ChildProcessWithoutNullStreams, line: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const onData = (d: Buffer) => {
      out += d.toString();
      if (out.split('\n').includes(line)) {
        child.stdout.off('data', onData);
        resolve();
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.once('exit', (code) => reject(new Error(`lock holder exited ${code} before "${line}": ${err}`)));
  });
}

async function holdLock(filename: string): Promise<LockHolder> {
  const child = spawn(process.execPath, [holderScript, filename], { cwd: root, stdio: ['pipe', 'pipe', 'pipe'] });
  const stop = () => {
    if (child.exitCode === null) child.stdin.end();
  };
  cleanups.push(stop);
  await printed(child, 'locked');
  return {
    async release() {
      const released = printed(child, 'released');
      child.stdin.write('release\n');
      await released;
    },
    stop,
  };
}

/** A promise's state, readable synchronously. */
function track<T>(promise: Promise<T>): { readonly state: 'pending' | 'fulfilled' | 'rejected'; readonly error: unknown } {
  const tracked = { state: 'pending' as 'pending' | 'fulfilled' | 'rejected', error: undefined as unknown };
  promise.then(
    () => (tracked.state = 'fulfilled'),
    (error: unknown) => {
      tracked.state = 'rejected';
      tracked.error = error;
    },
  );
  return tracked;
}

/** Moves the clock on until `done()` holds (a bounded number of steps: the waits are bounded). */
async function advanceUntil(clock: VirtualClock, done: () => boolean): Promise<void> {
  for (let step = 0; step < 100 && !done(); step++) await clock.advance(1_000);
  expect(done()).toBe(true);
}

async function open(clock: VirtualClock): Promise<FerryStorage> {
  const filename = join(mkdtempSync(join(tmpdir(), 'ferry-lock-')), 'locked.db');
  const storage = await openStorage(sqliteStorage({ filename, busyTimeoutMs: 5_000, clock }));
  cleanups.push(() => storage.close());
  await storage.repos.workspaces.ensure('default', T0);
  return storage;
}

function filenameOf(storage: FerryStorage): string {
  return (storage.knex.client as { connectionSettings: { filename: string } }).connectionSettings.filename;
}

it('while another process holds the write lock, reads and the ping answer and writes wait, then fail unavailable', async () => {
  const clock = new VirtualClock();
  const storage = await open(clock);
  const holder = await holdLock(filenameOf(storage));

  // Both kinds of write: a transaction (BEGIN IMMEDIATE) and a statement on its own (a lease heartbeat's kind).
  const inTransaction = track(storage.transaction((repos) => repos.workspaces.create('ws_trx', T0)));
  const single = track(storage.repos.workspaces.create('ws_single', T0));

  // Reads, through knex's pool and through the direct idle path, and the ping behind /healthz,
  // complete while both writes are still waiting and the other process still holds the lock.
  expect(await storage.repos.workspaces.get('default')).toEqual({ id: 'default', created_at: T0 });
  expect(await storage.repos.workspaces.list()).toHaveLength(1);
  expect(await storage.repos.pipelines.get('default', 'pip_none')).toBeNull();
  expect(await storage.ping()).toBe(true);
  expect([inTransaction.state, single.state]).toEqual(['pending', 'pending']);

  // Past the configured wait, both fail with the error the API answers 503 + Retry-After with.
  await advanceUntil(clock, () => inTransaction.state !== 'pending' && single.state !== 'pending');
  for (const write of [inTransaction, single]) {
    expect(write.state).toBe('rejected');
    expect(isStorageUnavailable(write.error)).toBe(true);
    const translated = translateStorageError(write.error) as FerryError;
    expect(translated).toBeInstanceOf(FerryError);
    expect(translated.code).toBe('unavailable');
    expect(translated.retryAfterSeconds).toBeGreaterThan(0);
  }
  expect(await storage.ping()).toBe(true);

  // Once the lock is given up, writes go through, and nothing was written by the failed ones.
  await holder.release();
  await storage.transaction((repos) => repos.workspaces.create('ws_after', T0));
  await storage.repos.workspaces.create('ws_after_single', T0);
  expect((await storage.repos.workspaces.list()).map((w) => w.id)).toEqual(['default', 'ws_after', 'ws_after_single']);
});

it('a write waiting for the lock goes through as soon as the other process lets go', async () => {
  const clock = new VirtualClock();
  const storage = await open(clock);
  const holder = await holdLock(filenameOf(storage));
  const waiting = track(storage.transaction((repos) => repos.workspaces.create('ws_waited', T0)));
  const single = track(storage.repos.workspaces.create('ws_single', T0));
  expect(await storage.ping()).toBe(true);
  expect([waiting.state, single.state]).toEqual(['pending', 'pending']);
  await holder.release();
  await advanceUntil(clock, () => waiting.state !== 'pending' && single.state !== 'pending');
  expect([waiting.state, single.state]).toEqual(['fulfilled', 'fulfilled']);
  expect((await storage.repos.workspaces.list()).map((w) => w.id)).toEqual(['default', 'ws_single', 'ws_waited']);
});

it("recording an API key's last use never waits for the lock: it is skipped while another process holds it", async () => {
  const clock = new VirtualClock();
  const storage = await open(clock);
  await storage.repos.apiKeys.insert({
    id: 'key_1', key_id: 'k1', workspace_id: 'default', name: null, scopes: ['read'], secret_hash: 'h', last4: 'abcd',
    rate_limit: null, created_at: T0, last_used_at: null, revoked_at: null,
  });
  const holder = await holdLock(filenameOf(storage));
  const waiting = track(storage.repos.workspaces.create('ws_waiting', T0));
  // Authentication's lookup and its bookkeeping write both complete while the write above waits.
  expect((await storage.repos.apiKeys.getByKeyId('k1'))?.last_used_at).toBeNull();
  await storage.repos.apiKeys.touch('key_1', '2026-01-01T00:01:00.000Z');
  expect((await storage.repos.apiKeys.getByKeyId('k1'))?.last_used_at).toBeNull();
  expect(waiting.state).toBe('pending');
  await holder.release();
  await storage.repos.apiKeys.touch('key_1', '2026-01-01T00:02:00.000Z');
  expect((await storage.repos.apiKeys.getByKeyId('k1'))?.last_used_at).toBe('2026-01-01T00:02:00.000Z');
  await advanceUntil(clock, () => waiting.state !== 'pending');
  expect(waiting.state).toBe('fulfilled');
});

it("the writer thread's commits wait for the lock on the storage's clock like every other write", async () => {
  const clock = new VirtualClock();
  const storage = await open(clock);
  const insert = (id: string) => [{ sql: 'INSERT INTO workspaces (id, created_at) VALUES (?, ?)', rows: 1, shared: [id, T0], varying: [], values: [] }];
  let holder = await holdLock(filenameOf(storage));
  const failing = track(storage.writer!.transaction(insert('ws_given_up')));
  expect(await storage.ping()).toBe(true);
  expect(failing.state).toBe('pending');
  // Past the configured wait, it fails with the storage-unavailable error a flow holds on and
  // retries. Each attempt is a round trip to the thread: the clock moves on while it runs.
  await eventually(clock, () => failing.state !== 'pending', 50, 2_000);
  expect(failing.state).toBe('rejected');
  expect(isStorageUnavailable(failing.error)).toBe(true);
  await holder.release();

  holder = await holdLock(filenameOf(storage));
  const waiting = track(storage.writer!.transaction(insert('ws_waited')));
  expect(waiting.state).toBe('pending');
  await holder.release();
  await eventually(clock, () => waiting.state !== 'pending', 50, 2_000);
  expect(waiting.state).toBe('fulfilled');
  expect((await storage.repos.workspaces.list()).map((w) => w.id)).toEqual(['default', 'ws_waited']);
});

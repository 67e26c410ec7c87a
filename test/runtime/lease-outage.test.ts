import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, generateSecretKey, postgresStorage, sqliteStorage, type Engine, type Logger, type PlatformEvent, type StorageConfig } from '@ferry/core';
import { engineContext } from '@ferry/core/internal';
import { eventually, MemoryHub, memoryConnector, VirtualClock } from '@ferry/testing';
import { getSharedTestPostgres } from '@ferry/test-servers';

/**
 * A storage outage shorter than the pipeline lease (20 s against 30 s, the numbers) must
 * not cost the engine its streaming leases: renewals that fail while storage is unreachable are
 * retried, the first one after storage is back renews the lease with the same token, and the run
 * goes on (no `lease_lost`, no `pipeline.failed`, no second `pipeline.started`).
 */

const WS = 'default';
const LEASE_TTL_MS = 30_000;
const OUTAGE_MS = 20_000;
const root = join(import.meta.dirname, '..', '..');
const lockHolder = join(import.meta.dirname, '..', 'storage', 'fixtures', 'lock-holder.mjs');

/** Something that can make storage unreachable and bring it back. */
interface Outage {
  begin(): Promise<void>;
  end(): Promise<void>;
}

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * A TCP proxy in front of Postgres that can be cut: while cut, every open connection is reset
 * and new ones are closed at once, as when the server or the network between goes away.
 */
async function cuttableProxy(port: number): Promise<{ port: number; outage: Outage }> {
  const pairs = new Set<Socket>();
  let cut = false;
  const server: Server = createServer((client) => {
    if (cut) {
      client.destroy();
      return;
    }
    const upstream = connect(port, '127.0.0.1');
    for (const [a, b] of [[client, upstream], [upstream, client]] as const) {
      a.pipe(b);
      a.on('error', () => b.destroy());
      a.on('close', () => {
        b.destroy();
        pairs.delete(a);
      });
      pairs.add(a);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => {
    for (const socket of pairs) socket.destroy();
    return new Promise((resolve) => server.close(resolve));
  });
  return {
    port: (server.address() as { port: number }).port,
    outage: {
      async begin() {
        cut = true;
        for (const socket of pairs) socket.destroy();
      },
      async end() {
        cut = false;
      },
    },
  };
}

/** Another process holding the SQLite write lock: every write of the engine fails meanwhile. */
function lockingProcess(filename: string): Outage {
  let stop: (() => Promise<void>) | undefined;
  return {
    async begin() {
      const child = spawn(process.execPath, [lockHolder, filename], { cwd: root, stdio: ['pipe', 'pipe', 'pipe'] });
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      stop = async () => {
        child.stdin.end();
        await exited;
      };
      cleanups.push(() => stop?.());
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d: Buffer) => d.toString().includes('locked') && resolve());
        child.once('exit', (code) => reject(new Error(`lock holder exited ${code}`)));
      });
    },
    async end() {
      await stop?.();
      stop = undefined;
    },
  };
}

/** Engine warnings, to tell a failed renewal from a lost lease. */
function recordingLogger(warnings: string[]): Logger {
  const quiet = () => undefined;
  const logger: Logger = {
    trace: quiet,
    debug: quiet,
    info: quiet,
    warn: (_obj: unknown, msg?: string) => void warnings.push(msg ?? ''),
    error: (_obj: unknown, msg?: string) => void warnings.push(`error: ${msg ?? ''}`),
    fatal: quiet,
    child: () => logger,
  };
  return logger;
}

async function survivesOutage(storage: StorageConfig, clock: VirtualClock, outage: Outage): Promise<void> {
  const hub = new MemoryHub({ clock });
  const warnings: string[] = [];
  const engine: Engine = await createEngine({
    storage,
    clock,
    secretKey: generateSecretKey(),
    plugins: [memoryConnector(hub)],
    runtime: { leaseTtlMs: LEASE_TTL_MS, pollIntervalMs: 5_000 },
    logger: recordingLogger(warnings),
  });
  cleanups.push(() => engine.stop());
  const heard: PlatformEvent[] = [];
  engine.on('*', (e) => heard.push(e));
  await engine.start();

  const push = (from: number, count: number) => {
    for (let i = from; i < from + count; i++) hub.stream('in').push({ type: 'order.created', payload: { n: i } });
  };
  push(0, 10);
  const source = await engine.connectors.create(WS, { type: 'memory', direction: 'source', config: { name: 'in', mode: 'pull', token: 'source-secret-token' } });
  const destination = await engine.connectors.create(WS, { type: 'memory', direction: 'destination', config: { name: 'out' } });
  const p = await engine.pipelines.create(WS, { name: 'orders', source_connector_id: source.id, destination_connector_id: destination.id, transforms: [], schedule: null, batch_size: 100, flush_interval_ms: 1000, activate: true });
  await eventually(clock, async () => (await engine.events.list(WS, p.id, { limit: 100 })).data.length === 10);

  const leaseName = `pipeline:${p.id}`;
  const before = await engineContext(engine).storage.repos.leases.get(leaseName);
  expect(before).not.toBeNull();
  // The last renewal (or the take) happened at expiry - TTL; renewals come every TTL / 3 after it.
  const renewedAt = Date.parse(before!.expires_at) - LEASE_TTL_MS;
  expect(clock.now() - renewedAt).toBeLessThan(LEASE_TTL_MS / 3);

  // Storage goes away right after a renewal and stays away across the next two renewals.
  await outage.begin();
  push(10, 5);
  await clock.advanceTo(renewedAt + OUTAGE_MS + 100);
  // Both renewals have failed (on SQLite a write gives up after the lock wait, 5 s, so the second
  // one fails at 25 s).
  const failedRenewals = () => warnings.filter((w) => w.startsWith('lease renewal failed')).length;
  await eventually(clock, () => failedRenewals() >= 2, 100);
  // Back before the lease (30 s) expires.
  expect(clock.now()).toBeLessThan(renewedAt + LEASE_TTL_MS - 1_000);
  await outage.end();
  // Renewed as soon as storage answers, before the lease would have expired.
  const renewed = async () => Date.parse((await engineContext(engine).storage.repos.leases.get(leaseName))!.expires_at) > renewedAt + LEASE_TTL_MS;
  await eventually(clock, renewed, 100);
  expect(clock.now()).toBeLessThan(renewedAt + LEASE_TTL_MS);

  // Past the old expiry and on for a few more renewals.
  await eventually(clock, () => clock.now() >= renewedAt + 2 * LEASE_TTL_MS, 1_000, 200);
  push(15, 5);
  await eventually(clock, async () => (await engine.events.list(WS, p.id, { limit: 100 })).data.length === 20, 1_000);

  expect(warnings.filter((w) => w.startsWith('lease lost'))).toEqual([]);
  const after = await engineContext(engine).storage.repos.leases.get(leaseName);
  expect(after?.token).toBe(before!.token);
  expect(Date.parse(after!.expires_at)).toBeGreaterThan(clock.now());
  expect(heard.filter((e) => e.type === 'pipeline.failed')).toEqual([]);
  expect(heard.filter((e) => e.type === 'pipeline.started')).toHaveLength(1);
  const runs = (await engine.pipelines.listRuns(WS, p.id)).data;
  expect(runs.map((r) => [r.status, r.error])).toEqual([['running', null]]);
  expect(hub.sink('out').events.size).toBe(20);
}

describe('a storage outage shorter than the lease', () => {
  it('postgres: every connection cut for 20 s; the lease is kept, the run goes on', async () => {
    const connectionString = new URL(await (await getSharedTestPostgres()).createDatabase('lease_outage'));
    const proxy = await cuttableProxy(Number(connectionString.port));
    connectionString.port = String(proxy.port);
    const clock = new VirtualClock(undefined, { settleRealMs: 1 });
    await survivesOutage(postgresStorage({ connectionString: connectionString.toString() }), clock, proxy.outage);
  }, 60_000);

  it('sqlite: another process holds the write lock for 20 s; the lease is kept, the run goes on', async () => {
    const filename = join(mkdtempSync(join(tmpdir(), 'ferry-lease-outage-')), 'ferry.db');
    const clock = new VirtualClock(undefined, { settleRealMs: 1 });
    await survivesOutage(sqliteStorage({ filename, clock }), clock, lockingProcess(filename));
  }, 60_000);
});

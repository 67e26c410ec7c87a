/**
 * The 5xx rows of docs/api.md, Errors, through both adapters: 503 `unavailable` with `Retry-After`
 * when storage is unreachable (a Postgres behind a loopback TCP proxy that the test cuts and
 * restores; a SQLite file whose write lock another process holds) and while the engine shuts
 * down; 500 `internal` for an unexpected error, with a fixed text, no stack and no secret in the
 * body, and the cause in the log under the request id.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Type } from '@sinclair/typebox';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { defineConnector, postgresStorage, sqliteStorage, type Logger } from '@ferry/core';
import { getSharedTestPostgres } from '@ferry/test-servers';
import { ADAPTERS, startApi, testPlugins, type TestApi, type TestResponse } from './harness.js';

/** A loopback TCP proxy to a port, which the test can cut (every socket reset) and restore. */
interface Proxy {
  readonly port: number;
  cut(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

async function startProxy(targetPort: number): Promise<Proxy> {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let port = 0;
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = createServer((client) => {
        const upstream = connect(targetPort, '127.0.0.1');
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('close', () => sockets.delete(socket));
          socket.on('error', () => socket.destroy());
        }
        client.pipe(upstream).pipe(client);
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
      });
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        port = (s.address() as AddressInfo).port;
        server = s;
        resolve();
      });
    });
  const cut = async () => {
    const s = server;
    server = undefined;
    for (const socket of sockets) socket.resetAndDestroy();
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  };
  await listen();
  return { port, cut, restore: listen, close: cut };
}

/** A logger that keeps every error line. */
function capturingLogger(lines: Array<Record<string, unknown>>): Logger {
  const noop = () => undefined;
  const logger: Logger = {
    trace: noop,
    debug: noop,
    info: noop,
    warn: noop,
    fatal: noop,
    error: (obj: unknown, msg?: string) => {
      lines.push({ ...(typeof obj === 'object' && obj !== null ? (obj as Record<string, unknown>) : { value: obj }), msg });
    },
    child: () => logger,
  } as Logger;
  return logger;
}

function expectUnavailable(res: TestResponse): void {
  expect(res.status).toBe(503);
  expect(res.headers['content-type']).toBe('application/problem+json');
  expect(res.headers['retry-after']).toMatch(/^[1-9][0-9]*$/);
  expect(res.body).toEqual({
    type: '/problems/unavailable',
    title: 'Service Unavailable',
    status: 503,
    detail: 'The service is unavailable; retry later.',
    code: 'unavailable',
    request_id: res.headers['x-request-id'],
  });
}

const SOURCE = { type: 'webhook', direction: 'source', config: {} };

describe.each(ADAPTERS)('5xx answers [%s]', (adapter) => {
  let api: TestApi | undefined;
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    await api?.close();
    api = undefined;
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('Postgres unreachable: 503 unavailable with Retry-After, logged, no driver detail; then it recovers', async () => {
    const url = new URL(await (await getSharedTestPostgres()).createDatabase('outage'));
    const proxy = await startProxy(Number(url.port));
    cleanups.push(() => proxy.close());
    url.port = String(proxy.port);
    const lines: Array<Record<string, unknown>> = [];
    api = await startApi({ adapter, storage: 'postgres', storageConfig: postgresStorage({ connectionString: url.toString() }), logger: capturingLogger(lines) });
    expect((await api.request('POST', '/v2/connectors', { body: SOURCE })).status).toBe(201);

    await proxy.cut();
    const attempts: Array<[string, string, unknown, Record<string, string>]> = [
      ['GET', '/v2/connectors', undefined, {}],
      ['POST', '/v2/connectors', SOURCE, {}],
      // The idempotency record cannot be written either: same answer, and the key stays unused.
      ['POST', '/v2/connectors', SOURCE, { 'idempotency-key': 'outage-1' }],
    ];
    for (const [method, path, body, headers] of attempts) {
      const res = await api.request(method, path, { ...(body ? { body } : {}), headers });
      expectUnavailable(res);
      expect(res.text).not.toContain('127.0.0.1');
      expect(res.text).not.toContain(String(proxy.port));
    }
    expect(lines.length).toBeGreaterThan(0);
    expect(lines[0]).toMatchObject({ msg: 'request failed' });
    expect(typeof lines[0]!.request_id).toBe('string');

    await proxy.restore();
    expect((await api.request('GET', '/v2/connectors')).status).toBe(200);
    const created = await api.request('POST', '/v2/connectors', { body: SOURCE, headers: { 'idempotency-key': 'outage-1' } });
    expect(created.status).toBe(201);
    expect(created.headers['idempotent-replayed']).toBeUndefined();
  });

  it('SQLite write lock held by another process past busy_timeout: writes 503, reads still 200, then writes again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ferry-busy-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'ferry.db');
    api = await startApi({ adapter, storage: 'sqlite', storageConfig: sqliteStorage({ filename: file, busyTimeoutMs: 20 }) });
    expect((await api.request('POST', '/v2/connectors', { body: SOURCE })).status).toBe(201);

    const other = new Database(file);
    cleanups.push(() => void other.close());
    other.exec('BEGIN IMMEDIATE');
    expectUnavailable(await api.request('POST', '/v2/connectors', { body: SOURCE }));
    const listed = await api.request('GET', '/v2/connectors');
    expect(listed.status).toBe(200);
    expect(listed.body.data).toHaveLength(1);
    other.exec('ROLLBACK');
    expect((await api.request('POST', '/v2/connectors', { body: SOURCE })).status).toBe(201);
  });

  it('engine shutting down: 503 unavailable with Retry-After', async () => {
    api = await startApi({ adapter, storage: 'sqlite' });
    await api.engine.stop();
    expectUnavailable(await api.request('GET', '/v2/connectors'));
    expectUnavailable(await api.request('POST', '/v2/connectors', { body: SOURCE }));
  });

  it('an unexpected error: 500 internal, fixed text, no stack or secret; the cause logged with the request id', async () => {
    const leak = 'password=hunter2-Distinctive';
    const broken = defineConnector({
      type: 'broken',
      version: '0.0.0-test',
      directions: ['source'],
      configSchema: Type.Object({}, { additionalProperties: false }),
      prepareConfig: () => {
        throw new Error(`driver failure: ${leak}`);
      },
      check: async () => ({ health: 'healthy', latencyMs: 1 }),
      source: () => ({ read: async (checkpoint) => ({ records: [], checkpoint }) }),
    });
    const lines: Array<Record<string, unknown>> = [];
    api = await startApi({ adapter, storage: 'sqlite', plugins: [...testPlugins(), broken], logger: capturingLogger(lines) });
    const res = await api.request('POST', '/v2/connectors', { body: { type: 'broken', direction: 'source', config: {} } });
    expect(res.status).toBe(500);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(res.headers['retry-after']).toBeUndefined();
    expect(res.body).toEqual({
      type: '/problems/internal',
      title: 'Internal Server Error',
      status: 500,
      detail: 'An internal error occurred; it has been logged with the request id.',
      code: 'internal',
      request_id: res.headers['x-request-id'],
    });
    expect(res.text).not.toContain('hunter2');
    expect(res.text).not.toMatch(/\bat [^ ]+ \(/);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ msg: 'request failed', request_id: res.headers['x-request-id'], route: '/v2/connectors' });
    expect(String((lines[0]!.err as Error).message)).toContain('driver failure');
    // Nothing was created, and the API goes on answering.
    expect((await api.request('GET', '/v2/connectors')).body.data).toEqual([]);
  });
});

import { mkdtempSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import Fastify from 'fastify';
import { createEngine, generateSecretKey, sqliteStorage, type Engine, type FerryPlugin } from '@ferry/core';
import { ferryConsole, ferryRouter } from '@ferry/express';
import { ferryConsolePlugin, ferryPlugin } from '@ferry/fastify';
import { MemoryHub, memoryConnector, VirtualClock } from '@ferry/testing';

/** The two ways a host mounts the console next to the API, tested alike. */
export const ADAPTERS = ['fastify', 'express'] as const;
export type Adapter = (typeof ADAPTERS)[number];

/** A host serving the API and the console, on an engine whose time the test moves. */
export interface ConsoleHost {
  /** The server's origin: `http://127.0.0.1:<port>`. */
  origin: string;
  /** Where the console is: `<origin>/console` (or under the prefix). */
  consoleUrl: string;
  /** A key with the `write` scope, in workspace `default`. */
  key: string;
  engine: Engine;
  clock: VirtualClock;
  hub: MemoryHub;
  close(): Promise<void>;
}

/**
 * Starts an engine (SQLite file, memory connectors, a virtual clock starting at the real time so
 * that the page's "3 min ago" reads sensibly) and serves it on `adapter` with the API under
 * `apiPrefix` and the console under `consolePath`, each mounted in the one line a host writes.
 */
export async function startConsoleHost(adapter: Adapter, options: { apiPrefix?: string; consolePath?: string; clockStartMs?: number; plugins?: FerryPlugin[] } = {}): Promise<ConsoleHost> {
  const apiPrefix = options.apiPrefix ?? '';
  const consolePath = options.consolePath ?? '/console';
  // eslint-disable-next-line no-restricted-properties -- the virtual clock starts at the wall time for readable screenshots
  const clock = new VirtualClock(options.clockStartMs ?? Math.floor(Date.now() / 60_000) * 60_000, { settleRealMs: 1 });
  const hub = new MemoryHub({ clock });
  const engine = await createEngine({
    storage: sqliteStorage({ filename: join(mkdtempSync(join(tmpdir(), 'ferry-console-')), 'ferry.db') }),
    clock,
    secretKey: generateSecretKey(),
    plugins: [memoryConnector(hub), ...(options.plugins ?? [])],
    outboundAllow: ['127.0.0.1'],
  });
  await engine.start();
  const { key } = await engine.apiKeys.create({ name: 'console', scopes: ['write'] });
  let origin: string;
  let stopServer: () => Promise<void>;
  if (adapter === 'fastify') {
    const app = Fastify();
    await app.register(ferryPlugin, { engine, ...(apiPrefix ? { prefix: apiPrefix } : {}) });
    await app.register(ferryConsolePlugin, { prefix: consolePath, apiBase: apiPrefix });
    origin = await app.listen({ port: 0, host: '127.0.0.1' });
    stopServer = () => app.close();
  } else {
    const app = express();
    app.use(apiPrefix || '/', ferryRouter(engine));
    app.use(consolePath, ferryConsole({ apiBase: apiPrefix }));
    const server: Server = await new Promise((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    stopServer = () => new Promise((resolve) => server.close(() => resolve()));
  }
  return {
    origin,
    consoleUrl: `${origin}${consolePath}`,
    key,
    engine,
    clock,
    hub,
    close: async () => {
      await stopServer();
      await engine.stop();
    },
  };
}

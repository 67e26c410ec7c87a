/**
 * An existing Fastify app that mounts the Ferry /v2 API in one line, next to its own routes.
 * Run it with `npm run example --workspace @ferry/example-fastify-host`.
 */
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import Fastify from 'fastify';
import { createEngine, generateSecretKey, sqliteStorage } from '@ferry/core';
import { ferryConsolePlugin, ferryPlugin, ferryServerOptions } from '@ferry/fastify';

/** Where {@link startHost} listens and keeps its state. */
export interface HostOptions {
  /** TCP port on 127.0.0.1; 0 picks a free one. */
  port: number;
  /** The SQLite file of the engine. */
  filename: string;
}

/** A running host. */
export interface RunningHost {
  /** Base URL, e.g. `http://127.0.0.1:3000`. */
  url: string;
  /** An API key with the `write` scope, created at startup for the demo. */
  key: string;
  /** Stops the server, then the engine. */
  close(): Promise<void>;
}

/** Starts the app: its own `/hello` route, the Ferry API under `/v2` and the console at `/console`. */
export async function startHost({ port, filename }: HostOptions): Promise<RunningHost> {
  const engine = await createEngine({
    storage: sqliteStorage({ filename }),
    // Demo only: a key generated per run cannot decrypt secrets stored by an earlier run.
    // A real app reads FERRY_SECRET_KEY from its secret store.
    secretKey: process.env.FERRY_SECRET_KEY ?? generateSecretKey(),
  });
  await engine.start();
  const { key } = await engine.apiKeys.create({ scopes: ['write'] });

  // ferryServerOptions: what Fastify's router and Node's parser refuse (a malformed path, a
  // header block over 16 KiB) is answered as problem+json too, like the rest of the API.
  const app = Fastify({ logger: false, ...ferryServerOptions });
  app.get('/hello', async () => ({ hello: 'world' }));
  await app.register(ferryPlugin, { engine }); // the whole Ferry /v2 API
  await app.register(ferryConsolePlugin, { prefix: '/console' }); // the Ferry Console, a page that talks to that API

  await app.listen({ port, host: '127.0.0.1' });
  return {
    url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
    key,
    close: async () => {
      await app.close();
      await engine.stop();
    },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const host = await startHost({ port: Number(process.env.PORT ?? 3000), filename: process.env.FERRY_DB ?? './ferry-example.db' });
  console.log(`listening on ${host.url}`);
  console.log(`try: curl ${host.url}/hello`);
  console.log(`     curl -H "Authorization: Bearer ${host.key}" ${host.url}/v2/pipelines`);
  console.log(`     open ${host.url}/console/ and sign in with that key`);
  process.once('SIGINT', () => void host.close());
}

/**
 * The harness of the /v2 HTTP conformance suite: starts an engine on real storage (SQLite in
 * memory or a fresh Postgres database), mounts it through a real adapter (Express or Fastify) on
 * a loopback port, and talks to it over real HTTP. Every suite in test/http runs over the whole
 * adapter x storage matrix through {@link describeMatrix}, so the two adapters are held to the
 * same answers.
 */
import { createHmac, randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Type } from '@sinclair/typebox';
import express from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import { request as undiciRequest } from 'undici';
import { afterAll, beforeAll, describe } from 'vitest';
import { ConnectorError, createEngine, defineConnector, generateSecretKey, generateWebhookSecret, postgresStorage, Secret, sqliteStorage, type Clock, type Engine, type FerryPlugin, type Logger, type StorageConfig } from '@ferry/core';
import { answerClientError, ferryRouter } from '@ferry/express';
import { ferryPlugin, ferryServerOptions } from '@ferry/fastify';
import type { HttpApiOptions } from '@ferry/http';
import { listenLoopback, VirtualClock } from '@ferry/testing';
import { getSharedTestPostgres } from '@ferry/test-servers';

/** The two framework adapters under test. */
export type AdapterName = 'express' | 'fastify';
/** The two storages under test. */
export type StorageName = 'sqlite' | 'postgres';

/** Every adapter, in the order suites run them. */
export const ADAPTERS: readonly AdapterName[] = ['express', 'fastify'];
/** Every storage, in the order suites run them. */
export const STORAGES: readonly StorageName[] = ['sqlite', 'postgres'];

/** Where the suite's virtual clocks start: a fixed instant, so runs are reproducible. */
export const CLOCK_START_MS = Date.parse('2026-11-22T10:00:00.000Z');

/**
 * The per-key rate limit of the key {@link TestApi.request} sends by default. Generous, because
 * the virtual clock never refills a bucket by itself and one key serves a whole file; suites that
 * test the engine's default limit create their own key without a `rate_limit`.
 */
export const DEFAULT_KEY_RATE_LIMIT = { requests: 1_000_000, per_seconds: 60 } as const;

/** Options of {@link startApi}. */
export interface StartApiOptions {
  adapter: AdapterName;
  storage: StorageName;
  /** The engine's clock; default a fresh {@link VirtualClock} at {@link CLOCK_START_MS}. */
  clock?: Clock;
  /** Passed to the adapter, which passes them to `createHttpApi`. */
  httpOptions?: HttpApiOptions;
  /** The engine's plugins; default {@link testPlugins}. */
  plugins?: readonly FerryPlugin[];
  /** Storage to use instead of the default one of `storage` (which then only names the cell). */
  storageConfig?: StorageConfig;
  /** The engine's logger; default silent. */
  logger?: Logger;
  /** The engine's `outboundAllow`; default none (connectors at the loopback test servers need `['127.0.0.1']`). */
  outboundAllow?: readonly string[];
}

/** Options of one {@link TestApi.request}. */
export interface RequestOptions {
  /** Sent as JSON with `Content-Type: application/json` (unless `headers` sets another). */
  body?: unknown;
  /** Sent as is, with no Content-Type unless `headers` sets one. Wins over `body`. */
  raw?: string | Buffer;
  /** Extra request headers (lower- or mixed-case names). */
  headers?: Record<string, string>;
  /** The API key to send as a Bearer token; `null` sends no `Authorization`; default the api's write key. */
  key?: string | null;
}

/** One answer, read completely. */
export interface TestResponse {
  status: number;
  /** Lower-case names; repeated headers joined with `, `. */
  headers: Record<string, string>;
  /** The body parsed as JSON, or `undefined` when empty or not JSON. */
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** The body as text. */
  text: string;
}

/** A running API: an engine behind an adapter on a loopback port. */
export interface TestApi {
  readonly adapter: AdapterName;
  readonly storage: StorageName;
  readonly engine: Engine;
  /** The engine's clock (a {@link VirtualClock} unless another was given). */
  readonly clock: Clock;
  /** Base URL, e.g. `http://127.0.0.1:41234`; paths begin with `/v2`. */
  readonly url: string;
  /** The write key of workspace `default` that requests send by default. */
  readonly defaultKey: string;
  /** Sends one request and reads the whole answer. */
  request(method: string, path: string, options?: RequestOptions): Promise<TestResponse>;
  /** Creates an API key through the engine and returns its secret form (`fry_...`). */
  key(scopes?: string[], workspace?: string, rateLimit?: { requests: number; per_seconds: number } | null): Promise<string>;
  /** Stops the server, then the engine. Idempotent. */
  close(): Promise<void>;
}

/**
 * Connector types for the suite, so connectors can be created, checked and rotated without real
 * servers. The real plugins (@ferry/webhook, @ferry/postgres, ...) are tested in their own
 * packages and come to the API with issue 6; these only mimic their config shapes:
 *
 * - `webhook`: every direction; `{ signing_secret?: secret, url?: string }`; a signing secret is
 *   generated when omitted (and shown once), and body-less rotation generates a new one.
 * - `postgres`: source or destination; `{ host, password: secret, database? }`; the check is
 *   healthy unless `host` is `down.invalid` (then a retryable `ConnectorError`); rotation needs
 *   a new `password` in the body (it cannot generate one).
 */
export function testPlugins(): FerryPlugin[] {
  const webhook = defineConnector({
    type: 'webhook',
    version: '0.0.0-test',
    directions: ['source', 'destination', 'bidirectional'],
    readableSecret: 'signing_secret',
    configSchema: Type.Object(
      { signing_secret: Type.Optional(Secret(Type.String())), url: Type.Optional(Type.String()) },
      { additionalProperties: false },
    ),
    // As the real plugin does: a signing secret is generated when omitted.
    prepareConfig: (config) => (config.signing_secret === undefined ? { ...config, signing_secret: generateWebhookSecret() } : config),
    check: async () => ({ health: 'healthy', latencyMs: 1 }),
    rotate: async (_ctx, input) => ({ signing_secret: input.config?.signing_secret ?? generateWebhookSecret() }),
    source: () => ({ read: async (checkpoint) => ({ records: [], checkpoint }) }),
    destination: () => ({ write: async (events) => events.map(() => ({ ok: true as const })) }),
  });
  const pg = defineConnector({
    type: 'postgres',
    version: '0.0.0-test',
    directions: ['source', 'destination'],
    configSchema: Type.Object(
      { host: Type.String(), password: Secret(Type.String()), database: Type.Optional(Type.String()) },
      { additionalProperties: false },
    ),
    check: async (ctx) => {
      if (ctx.config.host === 'down.invalid') throw new ConnectorError('connection_refused', 'The host refused the connection.', { retryable: true });
      return { health: 'healthy', latencyMs: 1 };
    },
    rotate: async (_ctx, input) => {
      if (input.config?.password === undefined) {
        throw new ConnectorError('rotation_unsupported', 'This connector cannot generate a password; send one.', { retryable: false });
      }
      return { password: input.config.password };
    },
    // Backfills as a change-capturing source plans them: its tables `public.items` and `public.orders`,
    // `public.nokey` without a key, a filter that is `invalid` refused.
    planBackfill: async (_ctx, input) => {
      const captured = ['public.items', 'public.orders', 'public.nokey'];
      const tables = (input.tables ?? captured.slice(0, 2)).map((t) => (t.includes('.') ? t : `public.${t}`));
      const unknown = tables.find((t) => !captured.includes(t));
      if (unknown) throw new ConnectorError('unknown_table', `${unknown} is not one of the tables the pipeline captures.`, { retryable: false });
      if (tables.includes('public.nokey')) throw new ConnectorError('backfill_needs_key', 'The table public.nokey has no primary key or unique key over NOT NULL columns.', { retryable: false });
      const filtered = Object.keys(input.where ?? {}).find((t) => !tables.includes(t.includes('.') ? t : `public.${t}`));
      if (filtered) throw new ConnectorError('unknown_table', `${filtered} has a where but is not one of the backfill's tables.`, { retryable: false });
      if (Object.values(input.where ?? {}).some((w) => w === 'invalid')) throw new ConnectorError('invalid_where', 'The where of public.items does not parse.', { retryable: false });
      return { tables: tables.map((table) => ({ table, rowsEstimated: table === 'public.items' ? 1000 : null })) };
    },
    source: () => ({ read: async (checkpoint) => ({ records: [], checkpoint }) }),
    destination: () => ({ write: async (events) => events.map(() => ({ ok: true as const })) }),
  });
  return [webhook, pg];
}

async function storageConfig(storage: StorageName): Promise<StorageConfig> {
  if (storage === 'sqlite') return sqliteStorage({ filename: ':memory:' });
  return postgresStorage({ connectionString: await (await getSharedTestPostgres()).createDatabase('http') });
}

async function listen(adapter: AdapterName, engine: Engine, httpOptions: HttpApiOptions): Promise<{ url: string; stop: () => Promise<void> }> {
  if (adapter === 'express') {
    const app = express();
    app.use(ferryRouter(engine, httpOptions));
    // As a host does: what Node's parser refuses is answered as problem+json too.
    const server = await listenLoopback(app, (s) => s.on('clientError', answerClientError));
    return { url: server.url, stop: () => server.close() };
  }
  const app: FastifyInstance = Fastify({ logger: false, ...ferryServerOptions });
  await app.register(ferryPlugin, { engine, ...httpOptions });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, stop: () => app.close() };
}

/** Flattens undici's header bag into lower-case single strings. */
function flatHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    out[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/**
 * Starts an engine on the given storage behind the given adapter, on 127.0.0.1 and a free port,
 * with a write key of workspace `default` ready for requests.
 */
export async function startApi(options: StartApiOptions): Promise<TestApi> {
  const clock = options.clock ?? new VirtualClock(CLOCK_START_MS);
  const engine = await createEngine({
    storage: options.storageConfig ?? (await storageConfig(options.storage)),
    secretKey: generateSecretKey(),
    clock,
    plugins: options.plugins ?? testPlugins(),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.outboundAllow ? { outboundAllow: options.outboundAllow } : {}),
  });
  await engine.start();
  let server: { url: string; stop: () => Promise<void> };
  try {
    server = await listen(options.adapter, engine, options.httpOptions ?? {});
  } catch (error) {
    await engine.stop();
    throw error;
  }
  const createKey = async (scopes: string[] = ['write'], workspace = 'default', rateLimit?: { requests: number; per_seconds: number } | null) =>
    (await engine.apiKeys.create({ scopes, workspace, ...(rateLimit !== undefined ? { rate_limit: rateLimit } : {}) })).key;
  const defaultKey = await createKey(['write'], 'default', DEFAULT_KEY_RATE_LIMIT);
  let closed: Promise<void> | undefined;

  return {
    adapter: options.adapter,
    storage: options.storage,
    engine,
    clock,
    url: server.url,
    defaultKey,
    key: createKey,
    async request(method, path, opts = {}) {
      const headers: Record<string, string> = {};
      let body: string | Buffer | undefined;
      if (opts.raw !== undefined) body = opts.raw;
      else if (opts.body !== undefined) {
        body = JSON.stringify(opts.body);
        headers['content-type'] = 'application/json';
      }
      const key = opts.key === undefined ? defaultKey : opts.key;
      if (key !== null) headers.authorization = `Bearer ${key}`;
      for (const [name, value] of Object.entries(opts.headers ?? {})) headers[name.toLowerCase()] = value;
      const res = await undiciRequest(`${server.url}${path}`, {
        method: method.toUpperCase() as 'GET',
        headers,
        ...(body !== undefined ? { body } : {}),
      });
      const text = await res.body.text();
      let parsed: unknown;
      if (text.length > 0) {
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = undefined;
        }
      }
      return { status: res.statusCode, headers: flatHeaders(res.headers), body: parsed, text };
    },
    close() {
      closed ??= (async () => {
        await server.stop();
        await engine.stop();
      })();
      return closed;
    },
  };
}

/** What a {@link describeMatrix} body gets: its cell, and the api once `beforeAll` started it. */
export interface MatrixContext {
  readonly adapter: AdapterName;
  readonly storage: StorageName;
  /** The cell's api; throws when read outside a test or hook (before `beforeAll` ran). */
  readonly api: TestApi;
  /** The cell's virtual clock (the engine's clock). */
  readonly clock: VirtualClock;
}

/** Options of {@link describeMatrix}. */
export interface MatrixOptions {
  httpOptions?: HttpApiOptions;
  plugins?: readonly FerryPlugin[];
  /** The engine's `outboundAllow` (see {@link StartApiOptions.outboundAllow}). */
  outboundAllow?: readonly string[];
}

/**
 * The cells to run: every adapter x storage, or the subset named by `FERRY_HTTP_MATRIX`
 * (comma-separated `adapter:storage`, e.g. `express:sqlite,fastify:sqlite`) for quick local runs.
 */
export function matrixCells(): Array<{ adapter: AdapterName; storage: StorageName }> {
  const all = ADAPTERS.flatMap((adapter) => STORAGES.map((storage) => ({ adapter, storage })));
  const only = process.env.FERRY_HTTP_MATRIX?.split(',').map((s) => s.trim()).filter(Boolean);
  return only && only.length > 0 ? all.filter((c) => only.includes(`${c.adapter}:${c.storage}`)) : all;
}

/**
 * Runs `fn` once per adapter x storage cell (describe.each), each cell with one api started in
 * `beforeAll` and closed in `afterAll`. Tests create the data they need, so they may share it.
 */
export function describeMatrix(name: string, fn: (ctx: MatrixContext) => void, options: MatrixOptions = {}): void {
  describe.each(matrixCells())(`${name} [$adapter, $storage]`, ({ adapter, storage }) => {
    let api: TestApi | undefined;
    const clock = new VirtualClock(CLOCK_START_MS);
    beforeAll(async () => {
      api = await startApi({ adapter, storage, clock, ...(options.httpOptions ? { httpOptions: options.httpOptions } : {}), ...(options.plugins ? { plugins: options.plugins } : {}), ...(options.outboundAllow ? { outboundAllow: options.outboundAllow } : {}) });
    });
    afterAll(async () => {
      await api?.close();
    });
    fn({
      adapter,
      storage,
      clock,
      get api(): TestApi {
        if (!api) throw new Error('The api starts in beforeAll: read ctx.api inside a test or hook.');
        return api;
      },
    });
  });
}

/**
 * Standard Webhooks headers for a body, signed with `secret` (`whsec_...`): `webhook-id`,
 * `webhook-timestamp` (unix seconds) and `webhook-signature` (`v1,<base64 HMAC-SHA256>` over
 * `<id>.<timestamp>.<body bytes>`). Written here rather than imported so the suite checks the server
 * against the scheme itself, not against the library's own signer.
 */
export function signedHeaders(secret: string, body: string | Uint8Array, timestampSeconds: number, id = `msg_${randomUUID()}`): Record<string, string> {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  // Over the body's bytes (a string as its UTF-8): bytes that are not UTF-8 are signed as they are.
  const signature = createHmac('sha256', key).update(`${id}.${timestampSeconds}.`).update(body).digest('base64');
  return { 'webhook-id': id, 'webhook-timestamp': String(timestampSeconds), 'webhook-signature': `v1,${signature}` };
}

/** The problem+json media type every error answers with. */
export const PROBLEM_JSON = 'application/problem+json';

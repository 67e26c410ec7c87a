import { randomUUID } from 'node:crypto';
import { createEngine, FerryError, postgresStorage, sqliteStorage, type Engine, type StorageConfig } from '@ferry/core';
import type { RetentionOptionsInput } from '@ferry/core/internal';
import { engineContext } from '@ferry/core/internal';
import { ferryConsolePlugin, ferryPlugin, ferryServerOptions } from '@ferry/fastify';
import { problemResponse, standaloneProblem, type RequestLog } from '@ferry/http';
import Fastify from 'fastify';
import type { DestinationStream, Logger as PinoLogger } from 'pino';
import { checkCanListen, listenError } from './listen-check.js';
import { createLogger } from './logger.js';
import { createMetrics } from './metrics.js';
import { serverPlugins } from './plugins.js';
import { resolveSecretKey } from './secret-key-file.js';
import type { DatabaseSetting, ServerSettings } from './settings.js';

/** A running server. */
export interface RunningServer {
  /** Base URL, e.g. `http://127.0.0.1:8080`. */
  url: string;
  port: number;
  engine: Engine;
  logger: PinoLogger;
  /** Stops accepting, lets requests and in-flight engine work finish, closes storage. Idempotent. */
  close(): Promise<void>;
}

/** Options of {@link startServer} beyond the settings. */
export interface StartServerOptions {
  /** Where log lines go (default stdout). */
  logDestination?: DestinationStream;
}

/** The same retention, `days` long, for every kind the engine deletes. */
function retentionOf(days: number): RetentionOptionsInput {
  const ms = days * 86_400_000;
  return { eventsMs: ms, runsMs: ms, deliveriesMs: ms, platformEventsMs: ms };
}

/** The storage a database setting names. */
export function storageOf(database: DatabaseSetting): StorageConfig {
  return database.kind === 'postgres' ? postgresStorage({ connectionString: database.connectionString }) : sqliteStorage({ filename: database.filename });
}

/** Where `ferry serve` mounts the console. */
const CONSOLE_PATH = '/console';

/**
 * Starts the reference server (docs/operations.md): the engine on the configured storage with
 * every connector plugin, the /v2 API on Fastify, the console at `/console` (unless turned off),
 * `GET /healthz` and `GET /metrics`. It logs `ferry listening on <url>` once it listens.
 *
 * @throws a `ListenError` (listen-check.ts) when the address cannot be bound, naming it: checked
 *   before storage is opened or the engine started, so a busy port costs nothing and changes
 *   nothing.
 */
export async function startServer(settings: ServerSettings, options: StartServerOptions = {}): Promise<RunningServer> {
  // First, before the secret key file, the migrations or the engine: a port that is taken is
  // the most common reason a second `ferry serve` cannot start.
  await checkCanListen(settings.host, settings.port);
  const logger = createLogger(settings.logLevel, options.logDestination);
  const { key: secretKey, source } = resolveSecretKey(settings.database, settings.secretKey);
  if (source === 'generated') logger.warn({ file: `${settings.database.kind === 'sqlite' ? settings.database.filename : ''}.key` }, 'generated a secret key beside the database; back it up with the database');
  const serves = settings.role !== 'worker';
  const engine = await createEngine({
    storage: storageOf(settings.database),
    plugins: serverPlugins(settings),
    ...(secretKey === undefined ? {} : { secretKey }),
    logger,
    outboundAllow: settings.outboundAllow,
    ...(settings.instanceId === undefined ? {} : { instanceId: settings.instanceId }),
    ...(settings.retentionDays === undefined ? {} : { retention: retentionOf(settings.retentionDays) }),
    // An API process leaves pipelines, schedules, replays and deliveries to the workers.
    ...(settings.role === 'api' ? { runtime: false as const, webhookDelivery: false as const } : {}),
  });
  await engine.start();
  try {
    if (serves && settings.bootstrapApiKey !== undefined) {
      const key = await engine.apiKeys.ensure(settings.bootstrapApiKey, { workspace: 'default', scopes: ['write'] });
      logger.info({ key_id: key.key_id, workspace: key.workspace_id }, 'bootstrap API key ready');
    }
  } catch (error) {
    await engine.stop();
    throw error;
  }

  const metrics = createMetrics(engine);
  // Every answer is problem+json with X-Request-Id, those Fastify and Node would write too.
  const app = Fastify({ logger: false, ...ferryServerOptions });
  app.setNotFoundHandler((request, reply) => {
    const response = standaloneProblem('not_found', `There is no route ${request.method} ${request.url.split('?')[0]!.slice(0, 200)}.`, request.headers);
    return reply.code(response.status).headers(response.headers).send(Buffer.from(response.body ?? ''));
  });
  app.setErrorHandler((error, request, reply) => {
    const response = standaloneProblem('internal', 'An internal error occurred; it has been logged with the request id.', request.headers);
    logger.error({ err: error instanceof Error ? error.message : String(error), request_id: response.headers['x-request-id'], url: request.url.split('?')[0] }, 'request failed');
    return reply.code(response.status).headers(response.headers).send(Buffer.from(response.body ?? ''));
  });
  const onRequest = (entry: RequestLog) => {
    metrics.observe(entry);
    logger.info({ request_id: entry.requestId, method: entry.method, route: entry.route, status: entry.status, duration_ms: Math.round(entry.durationMs * 10) / 10, code: entry.code, workspace_id: entry.workspaceId }, 'request');
  };
  // A worker answers /healthz and /metrics only: its port is for the orchestrator and the scraper.
  if (serves) {
    await app.register(ferryPlugin, {
      engine,
      onRequest,
      ...(settings.rateLimit === undefined ? {} : { rateLimit: settings.rateLimit }),
      ...(settings.ingestRateLimit === undefined ? {} : { ingestRateLimit: settings.ingestRateLimit }),
    });
    if (settings.console) {
      await app.register(ferryConsolePlugin, { prefix: CONSOLE_PATH });
      // Someone who opens the server's address in a browser lands on the console.
      app.get('/', async (_request, reply) => reply.redirect(`${CONSOLE_PATH}/`, 302));
    }
  }
  app.get('/healthz', async (_request, reply) => {
    if (engine.state === 'running' && (await engine.ping())) return reply.code(200).send({ status: 'ok' });
    // The same problem+json as the API's 503s, with a request id for the log.
    const requestId = randomUUID();
    const { response } = problemResponse(new FerryError('unavailable', 'Storage is not answering.', { retryAfterSeconds: 5 }), requestId);
    // A Buffer, so Fastify sends the content type exactly as set (it appends a charset to strings).
    return reply.code(response.status).headers({ ...response.headers, 'x-request-id': requestId }).send(Buffer.from(response.body ?? ''));
  });
  app.get('/metrics', async (_request, reply) => reply.header('content-type', metrics.registry.contentType).send(await metrics.render()));

  let address: string;
  try {
    address = await app.listen({ port: settings.port, host: settings.host });
  } catch (error) {
    // Taken since the check (another process was quicker): the same message as the check's.
    await engine.stop();
    throw listenError(error, settings.host, settings.port);
  }
  const port = (app.server.address() as { port: number }).port;
  logger.info(
    { url: address, storage: engineContext(engine).storage.description, role: settings.role, ...(serves && settings.console ? { console: `${address}${CONSOLE_PATH}/` } : {}) },
    `ferry listening on ${address}`,
  );

  let closing: Promise<void> | undefined;
  return {
    url: address,
    port,
    engine,
    logger,
    close: () =>
      (closing ??= (async () => {
        await app.close();
        await engine.stop();
        logger.info('ferry stopped');
      })()),
  };
}

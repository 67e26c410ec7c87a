import { ConnectorError, defineConnector, probeCheck, type ConnectorDefinition, type JsonObject } from '@ferry/core';
import { postgresConfigSchema, validatePostgresConfig } from './config.js';
import { planChangeBackfill } from './cdc/backfill-plan.js';
import { changeSource, changeSourceSettings, checkChangeCapture, releaseChangeSource, releaseSettings } from './cdc/change-source.js';
import { checkSide } from './check.js';
import { classifyError, clientConfig, createPool, withClient } from './connection.js';
import { destinationSettings, postgresDestination } from './destination.js';
import { rotatePostgres } from './rotate.js';
import { postgresSource, sourceSettings } from './source.js';

/** This plugin's version. */
export const POSTGRES_PLUGIN_VERSION = '0.1.0';

/** Options of {@link postgres}. */
export interface PostgresOptions {
  /**
   * Most connections one opened source or destination holds (default 4). The engine reads and
   * writes one batch at a time per pipeline, so a small pool is enough; it bounds the sessions
   * N pipelines take on the server.
   */
  poolSize?: number;
  /**
   * How long to wait for a connection, in milliseconds (default 10000). A server that does not
   * answer in time is a retryable `timeout`.
   */
  connectTimeoutMs?: number;
}

/** The `postgres` connector definition. */
export type PostgresConnector = ConnectorDefinition<typeof postgresConfigSchema>;

/**
 * The `postgres` connector type (its README describes the config). As a source it reads a table or a query
 * incrementally by a unique, monotonic `cursor_column`; as a destination it COPYs batches, and
 * writes a batch COPY refuses with `INSERT ... ON CONFLICT ("id") DO NOTHING` (then row by row),
 * so a re-delivered batch adds no duplicates and a bad row is rejected alone. `check` proves the
 * connection and what its side needs (the source's read, the destination's table).
 *
 * @example
 * ```ts
 * const engine = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }), plugins: [postgres()] });
 * ```
 */
export function postgres(options: PostgresOptions = {}): PostgresConnector {
  const poolSize = options.poolSize ?? 4;
  const connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
  if (!Number.isInteger(poolSize) || poolSize < 1) throw new RangeError('postgres(): poolSize must be a positive integer.');
  if (!Number.isFinite(connectTimeoutMs) || connectTimeoutMs <= 0) throw new RangeError('postgres(): connectTimeoutMs must be positive.');

  return defineConnector({
    type: 'postgres',
    version: POSTGRES_PLUGIN_VERSION,
    directions: ['source', 'destination'],
    configSchema: postgresConfigSchema,

    validateConfig: (config, direction, outbound) => validatePostgresConfig(config, direction, outbound),

    check: async (ctx) => {
      if (ctx.config.capture === 'changes' && ctx.direction === 'source') {
        let details: JsonObject | undefined;
        const result = await probeCheck(
          ctx.clock,
          async () => {
            details = await withClient(clientConfig(ctx.config, { connectTimeoutMs, outbound: ctx.outbound }), (client) => checkChangeCapture(client, ctx.config));
          },
          (error) => classifyError(error, 'check'),
        );
        return details ? { ...result, details } : result;
      }
      return probeCheck(
        ctx.clock,
        () => withClient(clientConfig(ctx.config, { connectTimeoutMs, outbound: ctx.outbound }), (client) => checkSide(client, ctx.config, ctx.direction)),
        (error) => classifyError(error, 'check'),
      );
    },

    source(ctx) {
      if (ctx.config.capture === 'changes') {
        return changeSource(changeSourceSettings(ctx.config, ctx.pipelineId), {
          clientConfig: clientConfig(ctx.config, { connectTimeoutMs, outbound: ctx.outbound }),
          clock: ctx.clock,
          ...(ctx.reportLag ? { reportLag: ctx.reportLag } : {}),
          ...(ctx.reportBackfill ? { reportBackfill: ctx.reportBackfill } : {}),
          ...(ctx.backfills ? { backfills: ctx.backfills } : {}),
        });
      }
      // Settings first: a config the engine should have refused fails before a pool exists.
      const settings = sourceSettings(ctx.config);
      return postgresSource(createPool(ctx.config, { poolSize, connectTimeoutMs, outbound: ctx.outbound }), settings);
    },

    // Only change capture re-reads: polling by a cursor has no stream to interleave a backfill with.
    async planBackfill(ctx, input) {
      if (ctx.config.capture !== 'changes') {
        throw new ConnectorError('backfill_unsupported', 'Only a source with capture "changes" can backfill: a polling source reads every row once, by its cursor.', { retryable: false });
      }
      const settings = changeSourceSettings(ctx.config, ctx.pipelineId);
      try {
        return await withClient(clientConfig(ctx.config, { connectTimeoutMs, outbound: ctx.outbound }), (client) => planChangeBackfill(client, settings, input));
      } catch (error) {
        if (error instanceof ConnectorError) throw error;
        throw classifyError(error, 'check');
      }
    },

    // A deleted pipeline's slot would hold WAL forever: dropped with it (kept while paused).
    async releaseSource(ctx, checkpoint) {
      const settings = releaseSettings(ctx.config, ctx.pipelineId, checkpoint);
      if (settings) await releaseChangeSource(clientConfig(ctx.config, { connectTimeoutMs, outbound: ctx.outbound }), settings, checkpoint);
    },

    destination(ctx) {
      const settings = destinationSettings(ctx.config);
      return postgresDestination(createPool(ctx.config, { poolSize, connectTimeoutMs, outbound: ctx.outbound }), settings);
    },

    async rotate(ctx, input) {
      try {
        return await rotatePostgres(ctx.config, input, connectTimeoutMs, ctx.outbound);
      } catch (error) {
        if (error instanceof ConnectorError) throw error;
        throw new ConnectorError('rotation_failed', 'Rotation failed unexpectedly.', { retryable: false, cause: error });
      }
    },
  });
}

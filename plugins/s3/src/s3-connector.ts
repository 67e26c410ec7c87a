import { ConnectorError, defineConnector, probeCheck, type ConnectorDefinition, type ConnectorOutbound } from '@ferry/core';
import { classifyError, createClient, type ClientOptions } from './client.js';
import { s3ConfigSchema, validateS3Config, type S3Config } from './config.js';
import { s3Destination } from './destination.js';
import { awsSdk } from './sdk.js';
import { s3Source } from './source.js';

/** This plugin's version. */
export const S3_PLUGIN_VERSION = '0.1.0';

/** Options of {@link s3}. */
export interface S3Options {
  /** Most sockets one opened source or destination keeps open (default 8). */
  maxSockets?: number;
  /** Per-request timeout in milliseconds (default 60000): a store that does not answer is a retryable `timeout`. */
  requestTimeoutMs?: number;
}

/** The `s3` connector definition. */
export type S3Connector = ConnectorDefinition<typeof s3ConfigSchema>;

/** The secret fields `rotate` accepts. */
const ROTATABLE = ['access_key_id', 'secret_access_key', 'session_token'] as const;

/**
 * The `s3` connector type (its README describes the config), on the AWS SDK v3. As a destination it writes
 * each batch as JSON Lines (or JSON array) objects under `prefix` + `yyyy/mm/dd/`, named by the
 * pipeline and the batch's first and last event ids, so a re-delivered batch overwrites itself;
 * as a source it reads the objects under `prefix` in key order, resuming mid-object.
 *
 * @example
 * ```ts
 * const engine = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }), plugins: [s3()] });
 * ```
 */
export function s3(options: S3Options = {}): S3Connector {
  const maxSockets = options.maxSockets ?? 8;
  const requestTimeoutMs = options.requestTimeoutMs ?? 60_000;
  if (!Number.isInteger(maxSockets) || maxSockets < 1) throw new RangeError('s3(): maxSockets must be a positive integer.');
  if (!Number.isFinite(requestTimeoutMs) || requestTimeoutMs <= 0) throw new RangeError('s3(): requestTimeoutMs must be positive.');
  const clientOptions = (now: () => number, outbound: ConnectorOutbound): ClientOptions => ({ maxSockets, requestTimeoutMs, now, outbound });

  /**
   * Proves the bucket answers to these credentials by listing one key under the prefix. A list,
   * not HeadBucket (which needs the same s3:ListBucket right): a HEAD answer has no body, so a
   * refused one cannot say whether the key, the signature or the policy was wrong. Writing cannot
   * be proven without writing, and a check writes nothing.
   */
  const probe = async (config: S3Config, now: () => number, outbound: ConnectorOutbound, signal: AbortSignal) => {
    const client = await createClient(config, clientOptions(now, outbound));
    const { ListObjectsV2Command } = await awsSdk();
    try {
      await client.send(new ListObjectsV2Command({ Bucket: config.bucket, Prefix: config.prefix ?? '', MaxKeys: 1 }), { abortSignal: signal });
    } finally {
      client.destroy();
    }
  };

  return defineConnector({
    type: 's3',
    version: S3_PLUGIN_VERSION,
    directions: ['source', 'destination'],
    configSchema: s3ConfigSchema,

    validateConfig: (config, direction, outbound) => validateS3Config(config, direction, outbound),

    check: (ctx) =>
      probeCheck(
        ctx.clock,
        () => probe(ctx.config, () => ctx.clock.now(), ctx.outbound, ctx.signal),
        (error) => classifyError(error, 'check'),
      ),

    async source(ctx) {
      return s3Source(await createClient(ctx.config, clientOptions(() => ctx.clock.now(), ctx.outbound)), ctx.config);
    },

    async destination(ctx) {
      return s3Destination(await createClient(ctx.config, clientOptions(() => ctx.clock.now(), ctx.outbound)), ctx.config, ctx.pipelineId);
    },

    /**
     * Supplied access keys, checked against the bucket before they are accepted. New keys cannot
     * be made here (that is IAM's job), so a rotation without them is refused.
     */
    async rotate(ctx, input) {
      const supplied = input.config;
      if (!supplied || supplied.access_key_id === undefined || supplied.secret_access_key === undefined) {
        throw new ConnectorError('credentials_required', 'Supply access_key_id and secret_access_key to rotate an s3 connector.', { retryable: false });
      }
      const fields: Partial<S3Config> = {};
      for (const key of ROTATABLE) if (supplied[key] !== undefined) fields[key] = supplied[key];
      try {
        await probe({ ...ctx.config, ...fields }, () => ctx.clock.now(), ctx.outbound, ctx.signal);
      } catch (error) {
        throw classifyError(error, 'check');
      }
      return fields;
    },
  });
}

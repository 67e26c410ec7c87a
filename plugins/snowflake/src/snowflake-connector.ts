import type sdk from 'snowflake-sdk';
import { configureDriverLogLevel } from './driver.js';
import { ConnectorError, defineConnector, probeCheck, type ConnectorDefinition, type ConnectorOutbound } from '@ferry/core';
import { checkSide } from './check.js';
import { snowflakeConfigSchema, validateSnowflakeConfig, type SnowflakeConfig } from './config.js';
import { classifyError, SnowflakeSession, type ConnectionOptions } from './connection.js';
import { destinationSettings, snowflakeDestination } from './destination.js';
import { snowflakeSource, sourceSettings } from './source.js';

/** This plugin's version. */
export const SNOWFLAKE_PLUGIN_VERSION = '0.1.0';

/** Options of {@link snowflake}. */
export interface SnowflakeOptions {
  /**
   * Most a login may take, in milliseconds, the driver's retries included (default 30000). A
   * login that takes longer is a retryable `timeout`.
   */
  loginTimeoutMs?: number;
  /**
   * Most a statement may take, in milliseconds (default 300000): a MERGE of a chunk, a source's
   * read. Past it the statement is cancelled and the batch fails with a retryable `timeout`. It
   * also bounds a statement whose requests the driver keeps retrying through an outage.
   */
  statementTimeoutMs?: number;
  /**
   * How many times the driver itself retries a login that failed on the network (default 2).
   * The engine retries failed batches with its own backoff, so the driver's loop is kept short.
   */
  loginRetries?: number;
  /**
   * The snowflake-sdk's own log level (default `OFF`). The driver logs to stdout by default,
   * which an embedding application did not ask for; errors reach Ferry's logger classified
   * instead. The level is the driver's process-wide setting, shared by every connection.
   */
  driverLogLevel?: sdk.LogLevel;
}

/** The `snowflake` connector definition. */
export type SnowflakeConnector = ConnectorDefinition<typeof snowflakeConfigSchema>;

/** The credential fields a rotation may change. */
type RotatedFields = Pick<SnowflakeConfig, 'password' | 'private_key' | 'private_key_passphrase'>;

/**
 * The `snowflake` connector type (its README describes the config). As a destination it MERGEs batches on
 * `ID` into a table of `ID, TYPE, OCCURRED_AT, PAYLOAD VARIANT` (a re-delivered batch adds
 * nothing), or, in `insert` mode, loads them with array-bound INSERTs; as a source it reads a
 * table or a query incrementally by a cursor column. Logs in by password or key pair.
 *
 * @example
 * ```ts
 * const engine = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }), plugins: [snowflake()] });
 * ```
 */
export function snowflake(options: SnowflakeOptions = {}): SnowflakeConnector {
  const connection: ConnectionOptions = {
    loginTimeoutMs: options.loginTimeoutMs ?? 30_000,
    loginRetries: options.loginRetries ?? 2,
    statementTimeoutMs: options.statementTimeoutMs ?? 300_000,
  };
  if (!Number.isFinite(connection.loginTimeoutMs) || connection.loginTimeoutMs <= 0) throw new RangeError('snowflake(): loginTimeoutMs must be positive.');
  if (!Number.isFinite(connection.statementTimeoutMs) || connection.statementTimeoutMs <= 0) throw new RangeError('snowflake(): statementTimeoutMs must be positive.');
  if (!Number.isInteger(connection.loginRetries) || connection.loginRetries < 0) throw new RangeError('snowflake(): loginRetries must be a non-negative integer.');

  configureDriverLogLevel(options.driverLogLevel ?? 'OFF');

  /** Runs `work` on a session of its own, ended afterwards whatever happens. */
  const withSession = async <T>(config: SnowflakeConfig, outbound: ConnectorOutbound, work: (session: SnowflakeSession) => Promise<T>): Promise<T> => {
    const session = new SnowflakeSession(config, connection, outbound);
    try {
      return await work(session);
    } finally {
      await session.close();
    }
  };

  return defineConnector({
    type: 'snowflake',
    version: SNOWFLAKE_PLUGIN_VERSION,
    directions: ['source', 'destination'],
    configSchema: snowflakeConfigSchema,

    validateConfig: (config, direction, outbound) => validateSnowflakeConfig(config, direction, outbound),

    check: (ctx) =>
      probeCheck(
        ctx.clock,
        () => withSession(ctx.config, ctx.outbound, (session) => checkSide(session, ctx.config, ctx.direction)),
        (error) => classifyError(error, 'check'),
      ),

    source(ctx) {
      // Settings first: a config the engine should have refused fails before any session.
      const settings = sourceSettings(ctx.config);
      return snowflakeSource(new SnowflakeSession(ctx.config, connection, ctx.outbound), settings);
    },

    destination(ctx) {
      const settings = destinationSettings(ctx.config);
      return snowflakeDestination(new SnowflakeSession(ctx.config, connection, ctx.outbound), settings);
    },

    /**
     * Rotation (docs/api.md, Connector rotation): the supplied credentials of the connector's own login
     * method (a new password, or a new private_key with its passphrase) are tried by logging in
     * with them before they are accepted. Snowflake cannot hand out credentials by itself here.
     */
    async rotate(ctx, input) {
      const supplied = input.config;
      const fields: RotatedFields = {};
      if (typeof supplied?.password === 'string') fields.password = supplied.password;
      if (typeof supplied?.private_key === 'string') fields.private_key = supplied.private_key;
      if (typeof supplied?.private_key_passphrase === 'string') fields.private_key_passphrase = supplied.private_key_passphrase;
      if (Object.keys(fields).length === 0) {
        throw new ConnectorError('credentials_required', 'Supply a new password, or a new private_key (and its private_key_passphrase), to rotate a snowflake connector.', { retryable: false });
      }
      const usesKey = ctx.config.private_key !== undefined;
      if ((usesKey && fields.password !== undefined) || (!usesKey && (fields.private_key !== undefined || fields.private_key_passphrase !== undefined))) {
        throw new ConnectorError('configuration_invalid', `This connector logs in by ${usesKey ? 'key pair' : 'password'}; rotate to new credentials of the same kind.`, { retryable: false });
      }
      const next: SnowflakeConfig = { ...ctx.config, ...fields };
      try {
        await withSession(next, ctx.outbound, (session) => session.run('SELECT 1'));
      } catch (error) {
        const classified = classifyError(error, 'rotate');
        throw new ConnectorError(classified.code, `The supplied credentials do not work: ${classified.message}`, { retryable: false, cause: error });
      }
      return fields;
    },
  });
}

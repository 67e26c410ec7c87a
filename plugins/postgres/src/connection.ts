import { ConnectorError, type ConnectorOutbound } from '@ferry/core';
import pg from 'pg';
import { columnConverter } from './column-values.js';
import { DEFAULT_PORT, DEFAULT_STATEMENT_TIMEOUT_MS, type PostgresConfig } from './config.js';

/** Options that shape every connection the plugin opens. */
export interface ConnectionOptions {
  /** Most connections of one opened source or destination. */
  poolSize: number;
  /** How long to wait for a connection before failing retryably, in milliseconds. */
  connectTimeoutMs: number;
  /** The engine's outbound policy: every connection goes through it. */
  outbound: ConnectorOutbound;
}

/** Where a failure happened, which names the code of an outage. */
export type Side = 'source' | 'destination' | 'check' | 'rotate';

/**
 * Type parsers for rows the plugin reads: each type's text becomes its exact JSON value
 * ({@link columnConverter}: int8 and numeric as strings of their digits, json numbers a double
 * cannot hold as strings, bytea as base64, timestamps as ISO 8601 with their microseconds), so
 * a row read by polling, a snapshot or a change stream has the same values.
 */
const readTypes: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    format === 'binary' ? pg.types.getTypeParser(oid, 'binary' as 'text') : columnConverter(oid)) as pg.CustomTypesConfig['getTypeParser'],
};

/**
 * Session settings of every connection, which fix the text the server writes values in (and
 * so what {@link columnConverter} reads): ISO dates, UTC, hex bytea, floats with every digit.
 */
export const SESSION_OPTIONS = '-c DateStyle=ISO,MDY -c TimeZone=UTC -c IntervalStyle=postgres -c bytea_output=hex -c extra_float_digits=3';

/**
 * The pg client config of a connector config. `application_name` is `ferry` so operators can
 * see the plugin's sessions in `pg_stat_activity`; `statement_timeout` is set per connection so a
 * stuck query fails retryably instead of holding a pipeline forever. Every connection's socket
 * comes from the outbound policy (pg's `stream` factory): pg asks it to connect to the host it
 * read from the config or the connection string, and the policy resolves that host, checks every
 * address and connects only to a permitted one (a literal or a Unix socket path is checked before
 * any socket exists). TLS, layered by pg on that socket, still verifies the configured name.
 */
export function clientConfig(config: PostgresConfig, options: Pick<ConnectionOptions, 'connectTimeoutMs' | 'outbound'>): pg.ClientConfig {
  const base: pg.ClientConfig = {
    application_name: 'ferry',
    statement_timeout: config.statement_timeout_ms ?? DEFAULT_STATEMENT_TIMEOUT_MS,
    connectionTimeoutMillis: options.connectTimeoutMs,
    types: readTypes,
    options: SESSION_OPTIONS,
    stream: () => options.outbound.socket(),
  };
  // pg lets `sslmode` in a connection string win over `ssl`; an explicit `ssl` is passed only
  // when set, so a URL's own sslmode keeps working when the config says nothing.
  if (config.ssl !== undefined) base.ssl = sslOptions(config.ssl);
  if (config.connection_string !== undefined) return { ...base, connectionString: config.connection_string };
  return {
    ...base,
    host: config.host,
    port: config.port ?? DEFAULT_PORT,
    database: config.database,
    user: config.user,
    ...(config.password !== undefined ? { password: config.password } : {}),
  };
}

/** `ssl` as the config says it, in node's TLS terms; certificates verify unless told otherwise. */
export function sslOptions(ssl: NonNullable<PostgresConfig['ssl']>): pg.ClientConfig['ssl'] {
  if (typeof ssl === 'boolean') return ssl;
  return { rejectUnauthorized: ssl.reject_unauthorized ?? true, ...(ssl.ca !== undefined ? { ca: ssl.ca } : {}) };
}

/** A pool for one opened source or destination. Idle connections are released after 30 s. */
export function createPool(config: PostgresConfig, options: ConnectionOptions): pg.Pool {
  const pool = new pg.Pool({ ...clientConfig(config, options), max: options.poolSize, idleTimeoutMillis: 30_000 });
  // An idle client whose server goes away emits 'error' on the pool; without a listener that
  // would crash the process. The next query gets a fresh connection or a classified error.
  pool.on('error', () => undefined);
  return pool;
}

/** Runs `work` on one short-lived client (checks and rotation), always closing it. */
export async function withClient<T>(config: pg.ClientConfig, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client(config);
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** SQLSTATE of a server error, or undefined for anything else. */
export function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** Node's errno code (ECONNREFUSED, ...) of a socket error, or undefined. */
function errnoCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^E[A-Z]+$/.test(code) ? code : undefined;
}

/**
 * SQLSTATEs that mean this one record can never be written as it is: data exceptions (22),
 * integrity violations (23: not null, check, foreign key, unique in insert mode) and a row too
 * large for an index (54000). Everything else is about the connection, the table or the server.
 */
export function isRecordError(error: unknown): boolean {
  const state = sqlState(error);
  return state !== undefined && (state.startsWith('22') || state.startsWith('23') || state === '54000');
}

/**
 * Turns whatever pg threw into a {@link ConnectorError} whose message holds no connection string
 * or password: outages are retryable, authentication and configuration problems are not. Server
 * messages of outages are not repeated either (a `host` in them is harmless, but the plugin's
 * own words are enough and stay predictable).
 */
export function classifyError(error: unknown, side: Side): ConnectorError {
  if (error instanceof ConnectorError) return error;
  // The outbound policy's refusal, if pg wrapped it: not retryable.
  for (let cause = (error as { cause?: unknown } | null)?.cause, depth = 0; cause && depth < 5; cause = (cause as { cause?: unknown }).cause, depth++) {
    if (cause instanceof ConnectorError) return cause;
  }
  const where = side === 'source' || side === 'destination' ? `The ${side} database` : 'The database';
  const state = sqlState(error);
  const errno = errnoCode(error);
  const unavailable = side === 'source' ? 'source_unavailable' : side === 'destination' ? 'destination_unavailable' : 'unavailable';
  const retry = (code: string, message: string) => new ConnectorError(code, message, { retryable: true, cause: error });
  const fatal = (code: string, message: string) => new ConnectorError(code, message, { retryable: false, cause: error });

  if (state === '28P01' || state === '28000') return fatal('auth_failed', `${where} refused the credentials (SQLSTATE ${state}).`);
  if (state === '3D000') return fatal('database_not_found', `${where} does not exist (SQLSTATE 3D000).`);
  if (state === '42P01') return fatal('table_not_found', `${where} has no such table (SQLSTATE 42P01): ${serverMessage(error)}`);
  if (state === '42703') return fatal('column_not_found', `${where} has no such column (SQLSTATE 42703): ${serverMessage(error)}`);
  if (state === '42501') return fatal('permission_denied', `${where} denied a privilege the connector needs (SQLSTATE 42501): ${serverMessage(error)}`);
  if (state === '57014') return retry('timeout', `A statement ran past statement_timeout_ms and was cancelled (SQLSTATE 57014).`);
  if (state !== undefined && (state.startsWith('08') || state.startsWith('53') || state.startsWith('57') || state === '40001' || state === '40P01' || state === '55P03')) {
    return retry(unavailable, `${where} is unavailable or overloaded (SQLSTATE ${state}); will retry.`);
  }
  const tls = tlsFailure(error);
  if (tls !== undefined) return fatal('tls_failed', `${where} could not be reached over TLS (${tls}); check ssl and the server's certificate.`);
  if (errno === 'ECONNREFUSED') return retry('connection_refused', `${where} refused the connection (ECONNREFUSED).`);
  if (errno !== undefined) return retry(unavailable, `${where} could not be reached (${errno}).`);
  const message = error instanceof Error ? error.message : String(error);
  // pg's own words for a connect timeout and a connection lost mid-query carry no code.
  if (/timeout/i.test(message)) return retry('timeout', `${where} did not answer in time.`);
  if (/Connection terminated|connection.*closed|not queryable/i.test(message)) return retry(unavailable, `${where} closed the connection; will retry.`);
  if (state !== undefined) return fatal('query_failed', `${where} rejected a statement (SQLSTATE ${state}): ${serverMessage(error)}`);
  return retry(unavailable, `${where} failed unexpectedly; will retry.`);
}

/** Node's certificate verification codes, and OpenSSL's and node's TLS error codes. */
const TLS_CODES = /^(ERR_TLS_|ERR_SSL_|DEPTH_ZERO_SELF_SIGNED_CERT$|SELF_SIGNED_CERT_IN_CHAIN$|UNABLE_TO_|CERT_|HOSTNAME_MISMATCH$)/;

/**
 * What went wrong with TLS, when that is what failed: a certificate that does not verify (a
 * wrong `ssl.ca`, a self-signed certificate, a host name it does not cover) or a server without
 * TLS asked for it. Retrying cannot fix either; the config or the server must change.
 */
function tlsFailure(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && TLS_CODES.test(code)) return code;
  const message = error instanceof Error ? error.message : '';
  if (/does not support SSL/i.test(message)) return 'the server does not support it';
  return undefined;
}

/** A server error's own message, which never holds the connection's credentials, bounded. */
export function serverMessage(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.slice(0, 500);
}

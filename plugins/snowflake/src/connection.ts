import { ConnectorError, type ConnectorOutbound } from '@ferry/core';
import type snowflake from 'snowflake-sdk';
import { snowflakeDriver } from './driver.js';
import type { SnowflakeConfig } from './config.js';
import { policyAgents, type PolicyAgents } from './outbound.js';

/** How connections are opened and statements bounded, from the plugin's options. */
export interface ConnectionOptions {
  /** Most a login may take, in milliseconds, the driver's own retries included. */
  readonly loginTimeoutMs: number;
  /** How many times the driver retries a login that failed on the network. */
  readonly loginRetries: number;
  /**
   * Most a statement may take, in milliseconds. The driver retries a request for as long as
   * the network fails (up to 1,000 times), so without a bound of its own a write during an
   * outage would not fail for hours.
   */
  readonly statementTimeoutMs: number;
}

/** A bound value: text, or one text per row for an array bind. */
export type Bind = string | null;

/** What a result column holds, as far as a source's cursor and payload care. */
export type ColumnKind = 'number' | 'real' | 'text' | 'date' | 'timestamp' | 'other';

/** A statement's result: its rows (objects keyed by column name), its columns, and DML count. */
export interface StatementResult {
  readonly rows: Record<string, unknown>[];
  /** Column names in order. */
  readonly columns: string[];
  /** Each column's kind. Numeric columns (`number`, `real`) arrive as the server's text. */
  readonly kinds: ReadonlyMap<string, ColumnKind>;
  readonly updated: number;
}

/** Which side a failure happened on, for messages and codes. */
export type Side = 'source' | 'destination' | 'check' | 'rotate';

/** The driver's options for a config: the login, and the session's context. */
export function driverOptions(config: SnowflakeConfig, options: ConnectionOptions): snowflake.ConnectionOptions {
  const driver: snowflake.ConnectionOptions = {
    account: config.account,
    username: config.username,
    application: 'Ferry',
    ...({ sfRetryMaxLoginRetries: options.loginRetries } as object),
  };
  if (config.private_key !== undefined) {
    driver.authenticator = 'SNOWFLAKE_JWT';
    driver.privateKey = config.private_key;
    if (config.private_key_passphrase !== undefined) driver.privateKeyPass = config.private_key_passphrase;
  } else if (config.password !== undefined) {
    driver.password = config.password;
  }
  if (config.warehouse !== undefined) driver.warehouse = config.warehouse;
  if (config.database !== undefined) driver.database = config.database;
  if (config.schema !== undefined) driver.schema = config.schema;
  if (config.role !== undefined) driver.role = config.role;
  if (config.access_url !== undefined) driver.accessUrl = config.access_url;
  return driver;
}

/**
 * Opens a connection and logs in, within `loginTimeoutMs`. `connect(callback)` is wrapped by
 * hand: the driver's `connectAsync()` resolves even when the login fails, which would hand back
 * a connection that fails every statement. A connection that does not log in is destroyed, so
 * its keep-alive sockets are released.
 */
export async function openConnection(config: SnowflakeConfig, options: ConnectionOptions, outbound: ConnectorOutbound): Promise<snowflake.Connection> {
  if (config.access_url !== undefined) {
    // Refused before the driver starts: https unless allowed, and the host checked by what it
    // resolves to now (the agents check it again on every connection).
    const url = outbound.assertUrl(config.access_url);
    await outbound.resolve(url.hostname);
  }
  const driver = await snowflakeDriver();
  const agents = policyAgents(outbound);
  let connection: snowflake.Connection;
  try {
    connection = driver.createConnection({ ...driverOptions(config, options), ...({ agentClass: agents.agentClass } as object) });
  } catch (error) {
    agents.destroy();
    // The driver checks its options as it creates the connection: a key it cannot parse, say.
    throw new ConnectorError('configuration_invalid', `The snowflake driver refused the connection settings: ${safeMessage(error)}`, { retryable: false, cause: error });
  }
  connectionAgents.set(connection, agents);
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new ConnectorError('timeout', `The login did not complete within ${options.loginTimeoutMs} ms; will retry.`, { retryable: true })),
        options.loginTimeoutMs,
      );
      connection.connect((error) => {
        clearTimeout(timer);
        if (error) reject(error);
        else resolve();
      });
    });
  } catch (error) {
    void closeConnection(connection);
    throw error;
  }
  return connection;
}

/** The policy agents of each open connection, destroyed with it. */
const connectionAgents = new WeakMap<snowflake.Connection, PolicyAgents>();

/** Longest a logout may take before a close stops waiting for it, in milliseconds. */
const LOGOUT_WAIT_MS = 5_000;

/**
 * Logs a connection out and releases its sockets, whatever its state (logged in, never logged
 * in, terminated by the driver): the driver frees a connection's HTTP agents only in
 * `destroy`. Never throws, and waits at most {@link LOGOUT_WAIT_MS} for a server that does not
 * answer.
 */
export function closeConnection(connection: snowflake.Connection): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, LOGOUT_WAIT_MS);
    timer.unref();
    const done = () => {
      clearTimeout(timer);
      connectionAgents.get(connection)?.destroy();
      resolve();
    };
    try {
      connection.destroy(() => done());
    } catch {
      done();
    }
  });
}

/** What a column of the driver's result holds. */
function kindOf(column: snowflake.Column): ColumnKind {
  if (column.isNumber()) return column.getType() === 'real' ? 'real' : 'number';
  if (column.isDate()) return 'date';
  if (column.isTimestamp()) return 'timestamp';
  if (column.isString()) return 'text';
  return 'other';
}

/**
 * Runs one statement. An aborted `signal`, or `timeoutMs` passing, settles it at once with a
 * retryable `aborted` or `timeout` and asks the server to cancel it; the caller then drops the
 * connection, whose request may still be in the driver's retry loop.
 */
export function runStatement(connection: snowflake.Connection, sqlText: string, binds: Bind[] | Bind[][] | undefined, timeoutMs: number, signal?: AbortSignal): Promise<StatementResult> {
  return new Promise<StatementResult>((resolve, reject) => {
    if (signal?.aborted) {
      reject(new ConnectorError('aborted', 'The statement was cancelled.', { retryable: true }));
      return;
    }
    let settled = false;
    // `timer` and `onAbort` are set below, before anything can settle: the driver calls back
    // asynchronously.
    const finish = (settle: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      settle();
    };
    const statement = connection.execute({
      sqlText,
      // Numbers arrive as the server's text, so a NUMBER(38,0) past 2^53 or a NUMBER(38,10) is
      // read exactly; the source turns the ones a double holds exactly back into numbers.
      fetchAsString: ['Number'],
      ...(binds !== undefined ? { binds: binds as snowflake.Binds } : {}),
      complete(error, stmt, rows) {
        finish(() => {
          if (error) {
            reject(error);
            return;
          }
          const columns = stmt.getColumns() ?? [];
          resolve({
            rows: (rows ?? []) as Record<string, unknown>[],
            columns: columns.map((c) => c.getName()),
            kinds: new Map(columns.map((c) => [c.getName(), kindOf(c)])),
            updated: stmt.getNumUpdatedRows() ?? 0,
          });
        });
      },
    });
    const stop = (failure: ConnectorError) => {
      finish(() => reject(failure));
      try {
        statement.cancel(() => undefined);
      } catch {
        // Cancelling a statement the driver already finished or never sent: nothing to stop.
      }
    };
    const onAbort = () => stop(new ConnectorError('aborted', 'The statement was cancelled.', { retryable: true }));
    const timer = setTimeout(() => stop(new ConnectorError('timeout', `A statement ran past ${timeoutMs} ms and was cancelled; will retry.`, { retryable: true })), timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * One session held by a source or destination: logged in on first use, statements one at a
 * time, and logged in again after a failure that lost the session (a network error, an expired
 * token, a statement cancelled or timed out whose request may still be retrying), so one outage
 * does not poison every later batch.
 */
export class SnowflakeSession {
  private connection: Promise<snowflake.Connection> | undefined;
  private closed = false;

  constructor(
    private readonly config: SnowflakeConfig,
    private readonly options: ConnectionOptions,
    private readonly outbound: ConnectorOutbound,
  ) {}

  /** Runs a statement on the session, logging in first when needed. */
  async run(sqlText: string, binds?: Bind[] | Bind[][], signal?: AbortSignal): Promise<StatementResult> {
    if (this.closed) throw new ConnectorError('closed', 'The connector was closed.', { retryable: true });
    const pending = (this.connection ??= openConnection(this.config, this.options, this.outbound));
    let connection: snowflake.Connection;
    try {
      connection = await pending;
    } catch (error) {
      if (this.connection === pending) this.connection = undefined;
      throw error;
    }
    try {
      return await runStatement(connection, sqlText, binds, this.options.statementTimeoutMs, signal);
    } catch (error) {
      if (sessionLost(error) && this.connection === pending) {
        this.connection = undefined;
        void closeConnection(connection);
      }
      throw error;
    }
  }

  /** Ends the session. Idempotent: the engine may close on pause and again on stop. */
  async close(): Promise<void> {
    this.closed = true;
    const pending = this.connection;
    this.connection = undefined;
    if (pending === undefined) return;
    const connection = await pending.catch(() => undefined);
    if (connection !== undefined) await closeConnection(connection);
  }
}

/** The error's code as text: the server's (`002003`) or the driver's (`401001`). */
export function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' || typeof code === 'number' ? String(code) : undefined;
}

/** The error's SQLSTATE, when the server gave one. */
export function sqlState(error: unknown): string | undefined {
  const state = (error as { sqlState?: unknown } | null)?.sqlState;
  return typeof state === 'string' && /^[0-9A-Z]{5}$/.test(state) ? state : undefined;
}

/** Driver codes of a request that never got an answer (network error, timeout). */
const NETWORK_CODES = new Set(['401001', '401002', '401003']);
/**
 * Codes of a session that has expired or is gone: the server's (token expired, renewal refused)
 * and the driver's own for an HTTP 401 (401004) and for a connection it terminated after a
 * failed renewal (407001/407002).
 * A new login fixes all of them.
 */
const SESSION_CODES = new Set(['390104', '390111', '390112', '390114', '401004', '407001', '407002']);

/**
 * True when the session should not be used again: its connection or token is gone, or a
 * statement was given up on (cancelled, timed out) while its request may still be retrying.
 */
function sessionLost(error: unknown): boolean {
  if (error instanceof ConnectorError) return error.code === 'aborted' || error.code === 'timeout';
  const code = errorCode(error);
  const name = (error as { name?: unknown } | null)?.name;
  return (code !== undefined && (NETWORK_CODES.has(code) || SESSION_CODES.has(code))) || name === 'NetworkError';
}

/**
 * Errors that mean this one row can never be written as it is: data exceptions (SQLSTATE class
 * 22, which is also how Snowflake reports a NOT NULL violation) and the 100xxx data errors
 * (a timestamp or number not recognized, a string too long). Everything else is about the
 * session, the table or the server.
 */
export function isRecordError(error: unknown): boolean {
  const state = sqlState(error);
  const code = errorCode(error);
  return (state !== undefined && state.startsWith('22')) || (code !== undefined && /^100\d{3}$/.test(code));
}

/**
 * Turns whatever the driver threw into a {@link ConnectorError} whose message holds no password
 * or key: outages are retryable, authentication and configuration problems are not.
 */
export function classifyError(error: unknown, side: Side): ConnectorError {
  if (error instanceof ConnectorError) return error;
  const refused = policyRefusal(error);
  if (refused) return refused;
  const where = side === 'source' || side === 'destination' ? `The ${side} account` : 'The account';
  const unavailable = side === 'source' ? 'source_unavailable' : side === 'destination' ? 'destination_unavailable' : 'unavailable';
  const retry = (code: string, message: string) => new ConnectorError(code, message, { retryable: true, cause: error });
  const fatal = (code: string, message: string) => new ConnectorError(code, message, { retryable: false, cause: error });
  const code = errorCode(error);
  const state = sqlState(error);
  const name = (error as { name?: unknown } | null)?.name;
  const message = safeMessage(error);

  if (code !== undefined && SESSION_CODES.has(code)) return retry('session_expired', `${where}'s session expired (${code}); will log in again.`);
  if (code !== undefined && /^390\d{3}$/.test(code)) return fatal('auth_failed', `${where} refused the login (${code}): ${message}`);
  // Node's crypto, reading a key whose passphrase is wrong or whose PEM is damaged.
  if (/bad decrypt|DECODER routines|private key/i.test(message)) {
    return fatal('auth_failed', `${where}'s private key could not be read; check private_key and private_key_passphrase.`);
  }
  if ((code !== undefined && NETWORK_CODES.has(code)) || name === 'NetworkError') {
    return retry(unavailable, `${where} could not be reached (${code ?? String(name)}): ${message}`);
  }
  if (code === '002003') return fatal('table_not_found', `${where} has no such object, or the role may not see it (002003): ${message}`);
  if (code === '000904') return fatal('column_not_found', `${where} has no such column (000904): ${message}`);
  if (code === '003001' || state === '42501') return fatal('permission_denied', `${where} denied a privilege the connector needs (${code ?? state}): ${message}`);
  if (code === '000606') return fatal('configuration_invalid', `${where} has no warehouse for the session (000606): set warehouse, or a default warehouse for the user.`);
  if (code === '000604' || state === '57014') return retry('timeout', `A statement was cancelled or timed out (${code ?? state}); will retry.`);
  if (code !== undefined && /^404\d{3}$/.test(code)) return fatal('configuration_invalid', `The snowflake driver refused a setting (${code}): ${message}`);
  if (state !== undefined && (state.startsWith('08') || state.startsWith('53') || state.startsWith('57'))) {
    return retry(unavailable, `${where} is unavailable or overloaded (SQLSTATE ${state}); will retry.`);
  }
  if (state !== undefined && state.startsWith('42')) return fatal('query_failed', `${where} rejected a statement (${code ?? state}): ${message}`);
  return retry(unavailable, `${where} failed (${code ?? 'no code'}): ${message}; will retry.`);
}

/** An error's message, bounded. Neither the driver nor the server repeats a password or key in one. */
export function safeMessage(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.slice(0, 500);
}

/**
 * The outbound policy's refusal inside a driver error (the driver and axios wrap the socket's
 * error, keeping it as a cause or only its `code`), as a non-retryable `url_not_allowed`.
 */
function policyRefusal(error: unknown): ConnectorError | undefined {
  const queue: unknown[] = [error];
  for (let seen = 0; queue.length > 0 && seen < 20; seen++) {
    const current = queue.shift();
    if (!current || typeof current !== 'object') continue;
    if (current instanceof ConnectorError && current.code === 'url_not_allowed') return current;
    const e = current as { code?: unknown; cause?: unknown; err?: unknown; errors?: unknown };
    if (e.code === 'url_not_allowed') {
      return new ConnectorError('url_not_allowed', 'The account URL is not allowed: it is, or resolves to, a private, loopback or reserved address.', { retryable: false, cause: error });
    }
    queue.push(e.cause, e.err, ...(Array.isArray(e.errors) ? e.errors : []));
  }
  return undefined;
}

import { FerryError } from '../common/index.js';

/** How long a client is told to wait before retrying while storage is unreachable. */
const STORAGE_RETRY_AFTER_SECONDS = 5;

/** Socket-level failures reaching the database server. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE']);

/**
 * Postgres SQLSTATEs that say the server cannot serve now rather than that the statement is wrong:
 * too many connections, shutting down, starting up.
 */
const POSTGRES_UNAVAILABLE = new Set(['53300', '57P01', '57P02', '57P03']);

/** node-postgres reports a dropped socket with these messages and no code. */
const PG_DROPPED = /^(?:.* - )?(?:Connection terminated|Client has encountered a connection error|timeout expired|Connection terminated due to connection timeout)/;

function isUnreachable(error: unknown, depth: number): boolean {
  if (error === null || typeof error !== 'object' || depth > 4) return false;
  const { code, name, message, cause, errors } = error as { code?: unknown; name?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
  if (typeof code === 'string') {
    if (NETWORK_CODES.has(code) || POSTGRES_UNAVAILABLE.has(code) || code.startsWith('08')) return true;
    // SQLite: another process holds the write lock beyond busy_timeout; it will let go.
    if (code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_') || code === 'SQLITE_LOCKED') return true;
  }
  // knex gave up waiting for a pooled connection (every attempt to open one failed or hung).
  if (name === 'KnexTimeoutError') return true;
  if (typeof message === 'string' && PG_DROPPED.test(message)) return true;
  // An AggregateError (several addresses refused) or a wrapped cause.
  if (Array.isArray(errors) && errors.some((e) => isUnreachable(e, depth + 1))) return true;
  return isUnreachable(cause, depth + 1);
}

/**
 * True when `error` means the engine's storage cannot be reached or cannot take the work now
 * (connection refused or dropped, server shutting down or out of connections, pool timeout,
 * SQLite locked by another process), as opposed to a statement or data error.
 */
export function isStorageUnavailable(error: unknown): boolean {
  return !(error instanceof FerryError) && isUnreachable(error, 0);
}

/**
 * Turns a storage outage into the `unavailable` error (503 with `Retry-After`; docs/api.md, Errors),
 * keeping the driver's error as `cause` for the log; any other error is returned unchanged. The
 * driver's message is not reused: it can name hosts, users and SQL.
 */
export function translateStorageError(error: unknown): unknown {
  if (!isStorageUnavailable(error)) return error;
  return new FerryError('unavailable', 'Storage is unreachable; retry later.', { cause: error, retryAfterSeconds: STORAGE_RETRY_AFTER_SECONDS });
}

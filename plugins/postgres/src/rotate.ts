import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { ConnectorError, type ConnectorOutbound, type RotateInput } from '@ferry/core';
import type { PostgresConfig } from './config.js';
import { classifyError, clientConfig, withClient } from './connection.js';

/** The config fields a rotation may return: the connector's own credentials. */
export type RotatedFields = Pick<PostgresConfig, 'password' | 'connection_string'>;

/** Iterations of a generated SCRAM verifier; Postgres's own default. */
const SCRAM_ITERATIONS = 4096;

/**
 * A new password: 32 random bytes in base64url, so 256 bits of entropy and nothing a URL,
 * a SASLprep normalisation or a shell would change.
 */
export function generatePassword(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * The SCRAM-SHA-256 verifier of a password, in the form `ALTER ROLE ... PASSWORD` stores as it
 * is (what psql's `\password` sends): the server, its statement log and `pg_stat_activity`
 * never see the clear password. The password must be ASCII without spaces (SASLprep then
 * changes nothing), which {@link generatePassword}'s are.
 */
export function scramVerifier(password: string, salt: Buffer = randomBytes(16)): string {
  const salted = pbkdf2Sync(password, salt, SCRAM_ITERATIONS, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${SCRAM_ITERATIONS}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

/** The role the connector logs in as: `user`, or the user of `connection_string`. */
export function loginRole(config: PostgresConfig): string | undefined {
  if (config.user !== undefined) return config.user;
  if (config.connection_string === undefined) return undefined;
  try {
    const name = decodeURIComponent(new URL(config.connection_string).username);
    return name === '' ? undefined : name;
  } catch {
    return undefined;
  }
}

/** `connection_string` with its password replaced. */
export function withPassword(connectionString: string, password: string): string {
  const url = new URL(connectionString);
  url.password = encodeURIComponent(password);
  return url.toString();
}

/**
 * Rotation (docs/api.md, Connector rotation). Supplied credentials are tried before they are accepted.
 * Without any, a new password is set with `ALTER ROLE` through `admin_connection_string`.
 */
export async function rotatePostgres(config: PostgresConfig, input: RotateInput<PostgresConfig>, connectTimeoutMs: number, outbound: ConnectorOutbound): Promise<RotatedFields> {
  const supplied = input.config;
  if (supplied !== undefined) {
    const fields: RotatedFields = {};
    if (typeof supplied.password === 'string') fields.password = supplied.password;
    if (typeof supplied.connection_string === 'string') fields.connection_string = supplied.connection_string;
    // A connector configured by connection_string keeps its password inside it: a supplied
    // password alone is spliced in, since a separate `password` field would conflict.
    if (fields.password !== undefined && fields.connection_string === undefined && config.connection_string !== undefined) {
      fields.connection_string = withPassword(config.connection_string, fields.password);
      delete fields.password;
    }
    if (fields.password === undefined && fields.connection_string === undefined) {
      throw new ConnectorError('credentials_required', 'Supply a new password or connection_string to rotate to.', { retryable: false });
    }
    const next: PostgresConfig = { ...config, ...fields };
    if (fields.connection_string !== undefined) {
      // A new connection string replaces the discrete fields, as validateConfig requires.
      delete next.host;
      delete next.database;
      delete next.user;
      if (fields.password === undefined) delete next.password;
    }
    try {
      await withClient(clientConfig(next, { connectTimeoutMs, outbound }), (client) => client.query('SELECT 1'));
    } catch (error) {
      const classified = classifyError(error, 'rotate');
      throw new ConnectorError(classified.code, `The supplied credentials do not work: ${classified.message}`, { retryable: false, cause: error });
    }
    return fields;
  }

  if (config.admin_connection_string === undefined) {
    throw new ConnectorError('credentials_required', 'This connector cannot make its own credentials: supply a new password or connection_string, or configure admin_connection_string.', { retryable: false });
  }
  const role = loginRole(config);
  if (role === undefined) throw new ConnectorError('configuration_invalid', 'The connector has no user whose password could be changed.', { retryable: false });
  const password = generatePassword();
  try {
    await withClient(
      clientConfig({ connection_string: config.admin_connection_string, ...(config.ssl !== undefined ? { ssl: config.ssl } : {}) }, { connectTimeoutMs, outbound }),
      // ALTER ROLE takes no bind parameters: the role is quoted by pg's escapeIdentifier (any
      // role name is allowed here; it is not spliced as config text) and the verifier, which
      // only holds base64 and `$:`, is still passed through escapeLiteral.
      (client) => client.query(`ALTER ROLE ${client.escapeIdentifier(role)} PASSWORD ${client.escapeLiteral(scramVerifier(password))}`),
    );
  } catch (error) {
    const classified = classifyError(error, 'rotate');
    throw new ConnectorError(classified.code, `Could not set a new password through admin_connection_string: ${classified.message}`, { retryable: false, cause: error });
  }
  return config.connection_string !== undefined ? { connection_string: withPassword(config.connection_string, password) } : { password };
}

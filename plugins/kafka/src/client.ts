import { ConnectorError, type ConnectorOutbound, type Logger } from '@ferry/core';
import type { ISocketFactory, Kafka, KafkaConfig as KafkaJsConfig, SASLOptions } from 'kafkajs';
import { kafkaJs } from './kafkajs.js';
import type { KafkaConfig } from './config.js';

/** How the plugin's kafkajs clients retry a request before the error reaches the engine. */
export interface ClientOptions {
  /** Retries of one request inside kafkajs (default 5): the engine backs off and retries on top. */
  retries: number;
  /** Where kafkajs's own warnings and errors go. */
  logger: Logger;
  /** The engine's outbound policy: every broker connection goes through it. */
  outbound: ConnectorOutbound;
}

/** kafkajs's keep-alive delay on broker sockets, as its default socket factory sets it. */
const KEEP_ALIVE_DELAY_MS = 60_000;

/**
 * kafkajs's socket factory through the outbound policy: the bootstrap brokers and every broker
 * the cluster's metadata names are resolved, checked, and connected to only at a permitted
 * address (a literal is checked before any socket exists). A refused broker's socket fails with
 * `url_not_allowed`, which kafkajs keeps as the connection error's `code`.
 */
export function policySocketFactory(outbound: ConnectorOutbound): ISocketFactory {
  return ({ host, port, ssl, onConnect }) => {
    const tls = ssl ? (typeof ssl === 'object' ? ssl : {}) : undefined;
    const socket = outbound.connect({ host, port, ...(tls ? { tls } : {}) }, onConnect);
    socket.setKeepAlive(true, KEEP_ALIVE_DELAY_MS);
    return socket;
  };
}

/**
 * A kafkajs client for a config. kafkajs's own retries are kept short: past them the error goes
 * to the engine, which holds the pipeline and backs off for as long as the outage lasts, and
 * reports it. Its log lines go to the engine's logger, errors as warnings (the plugin reports
 * the failure itself), nothing below warn.
 */
export async function createKafka(config: KafkaConfig, options: ClientOptions): Promise<Kafka> {
  const { Kafka, logLevel } = await kafkaJs();
  const settings: KafkaJsConfig = {
    clientId: config.client_id ?? 'ferry',
    brokers: config.brokers,
    socketFactory: policySocketFactory(options.outbound),
    connectionTimeout: config.connection_timeout_ms ?? 10_000,
    requestTimeout: config.request_timeout_ms ?? 30_000,
    retry: { retries: options.retries, initialRetryTime: 200, maxRetryTime: 5_000 },
    logLevel: logLevel.WARN,
    logCreator: () => (entry) => {
      const { message, ...fields } = entry.log;
      const line = { kafka: entry.namespace, ...pick(fields, ['broker', 'groupId', 'topic', 'partition', 'retryCount', 'error']) };
      if (entry.level === logLevel.ERROR) options.logger.warn(line, `kafka: ${message}`);
      else options.logger.debug(line, `kafka: ${message}`);
    },
  };
  const ssl = config.ssl;
  if (ssl === true) settings.ssl = true;
  else if (ssl && typeof ssl === 'object') {
    settings.ssl = {
      ...(ssl.ca !== undefined ? { ca: [ssl.ca] } : {}),
      ...(ssl.cert !== undefined ? { cert: ssl.cert } : {}),
      ...(ssl.key !== undefined ? { key: ssl.key } : {}),
      ...(ssl.passphrase !== undefined ? { passphrase: ssl.passphrase } : {}),
      rejectUnauthorized: ssl.reject_unauthorized ?? true,
    };
  }
  if (config.sasl) settings.sasl = { mechanism: config.sasl.mechanism, username: config.sasl.username, password: config.sasl.password } as SASLOptions;
  return new Kafka(settings);
}

/** Only the log fields worth keeping, and never a value that could hold a credential. */
function pick(fields: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of keys) if (fields[key] !== undefined) out[key] = fields[key];
  return out;
}

/** Which side an error happened on, for its code. */
export type Side = 'source' | 'destination' | 'check';

/** Node's certificate verification codes and OpenSSL's and Node's TLS error codes. */
const TLS_CODES = /^(ERR_TLS_|ERR_SSL_|DEPTH_ZERO_SELF_SIGNED_CERT$|SELF_SIGNED_CERT_IN_CHAIN$|UNABLE_TO_|CERT_|HOSTNAME_MISMATCH$)/;

/** Protocol errors that concern the request's records, not the cluster: a resend will not help. */
export const RECORD_ERRORS = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE', 'INVALID_RECORD', 'CORRUPT_MESSAGE', 'INVALID_TIMESTAMP']);

/**
 * Turns whatever kafkajs threw into a {@link ConnectorError} without secrets. kafkajs wraps the
 * last failure of its retries: the cause is unwrapped first. Authentication, authorization and a
 * missing topic are not retryable; a broker that is down, a leader election, a timeout are.
 */
export function classifyError(error: unknown, side: Side): ConnectorError {
  if (error instanceof ConnectorError) return error;
  const refused = policyRefusal(error);
  if (refused) return refused;
  let e = error as { name?: string; type?: string; message?: string; retriable?: boolean; cause?: unknown; code?: string } | null;
  for (let depth = 0; depth < 5 && e && (e.name === 'KafkaJSNumberOfRetriesExceeded' || e.name === 'KafkaJSNonRetriableError') && e.cause; depth++) e = e.cause as typeof e;
  const name = e?.name ?? '';
  const type = e?.type ?? '';
  const where = side === 'check' ? 'The cluster' : `The ${side} cluster`;
  const unavailable = side === 'source' ? 'source_unavailable' : side === 'destination' ? 'destination_unavailable' : 'unavailable';
  const retry = (code: string, message: string) => new ConnectorError(code, message, { retryable: true, cause: error });
  const fatal = (code: string, message: string) => new ConnectorError(code, message, { retryable: false, cause: error });
  if (name === 'KafkaJSSASLAuthenticationError' || type === 'SASL_AUTHENTICATION_FAILED' || type === 'ILLEGAL_SASL_STATE' || type === 'UNSUPPORTED_SASL_MECHANISM') {
    return fatal('auth_failed', `${where} refused the credentials.`);
  }
  if (name === 'KafkaJSServerDoesNotSupportApiKey') return fatal('unsupported', `${where} does not support a request the client needs (${e?.message ?? 'an API version'}).`);
  if (type === 'TOPIC_AUTHORIZATION_FAILED' || type === 'GROUP_AUTHORIZATION_FAILED' || type === 'CLUSTER_AUTHORIZATION_FAILED') return fatal('permission_denied', `${where} denied access (${type}).`);
  if (type === 'UNKNOWN_TOPIC_OR_PARTITION' || name === 'KafkaJSTopicMetadataNotLoaded') return fatal('topic_not_found', `${where} has no such topic.`);
  if (type === 'INVALID_TOPIC_EXCEPTION') return fatal('topic_invalid', `${where} refused the topic name.`);
  if (RECORD_ERRORS.has(type)) return fatal('record_rejected', `${where} refused the record (${type}).`);
  if (name === 'KafkaJSRequestTimeoutError' || type === 'REQUEST_TIMED_OUT') return retry('timeout', `${where} did not answer in time.`);
  if (name === 'KafkaJSConnectionError' || name === 'KafkaJSConnectionClosedError' || name === 'KafkaJSBrokerNotFound' || name === 'KafkaJSLockTimeout') {
    const code = typeof e?.code === 'string' ? e.code : '';
    if (code === 'ECONNREFUSED' || /ECONNREFUSED/.test(e?.message ?? '')) return retry('connection_refused', `${where} refused the connection (ECONNREFUSED).`);
    // By the socket's code, never by words in the message: a reset during a TLS handshake (a
    // rolling restart) or a broker host named `kafka-ssl-1` that does not resolve is an outage.
    if (TLS_CODES.test(code)) return fatal('tls_failed', `${where}: the TLS handshake failed (${code}); check ssl and the brokers' certificates.`);
    return retry(unavailable, `${where} is unreachable (${code || name}); will retry.`);
  }
  // UNKNOWN (-1) is the broker's unexpected server error: as transient as any outage.
  if (e?.retriable === false && name === 'KafkaJSProtocolError' && type !== 'UNKNOWN') return fatal('request_failed', `${where} refused a request (${type || name}).`);
  return retry(unavailable, `${where} failed (${type || name || 'unknown error'}); will retry.`);
}

/**
 * The outbound policy's refusal inside a kafkajs error (its retries wrap the connection error,
 * which keeps only the socket error's `code`), as a non-retryable `url_not_allowed`.
 */
function policyRefusal(error: unknown): ConnectorError | undefined {
  let e = error as { code?: unknown; cause?: unknown; originalError?: unknown } | null;
  for (let depth = 0; e && depth < 6; depth++) {
    if (e instanceof ConnectorError) return e.code === 'url_not_allowed' ? e : undefined;
    if (e.code === 'url_not_allowed') {
      return new ConnectorError('url_not_allowed', 'A broker is not allowed: it is, or resolves to, a private, loopback or reserved address.', { retryable: false, cause: error });
    }
    e = (e.cause ?? e.originalError) as typeof e;
  }
  return undefined;
}

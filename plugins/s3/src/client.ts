import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import { ConnectorError, type ConnectorOutbound } from '@ferry/core';
import { DEFAULT_REGION, type S3Config } from './config.js';
import { awsSdk, type AwsSdk } from './sdk.js';

/** Options of the clients a connector opens. */
export interface ClientOptions {
  /** Most sockets one client keeps open. */
  maxSockets: number;
  /** Per-request timeout, in milliseconds. */
  requestTimeoutMs: number;
  /** The engine's clock, for when assumed-role credentials need renewing. */
  now: () => number;
  /** The engine's outbound policy: every connection of the client goes through it. */
  outbound: ConnectorOutbound;
}

type Credentials = NonNullable<S3ClientConfig['credentials']>;

/**
 * The SDK's request handler options with agents of the outbound policy: each connection resolves
 * the endpoint's host and connects only to a permitted address (a literal one is checked before
 * any socket exists), so neither a refused endpoint nor a name re-pointed at an internal
 * address gets a byte. The SDK follows no redirects (a 301 from S3 is an error).
 */
function requestHandler(options: ClientOptions) {
  const agentOptions = { maxSockets: options.maxSockets, keepAlive: true };
  return {
    requestTimeout: options.requestTimeoutMs,
    httpsAgent: options.outbound.agent('https:', agentOptions),
    httpAgent: options.outbound.agent('http:', agentOptions),
  };
}

/**
 * The SDK client for a config: access keys when given, else the SDK's default chain (the
 * environment, an instance role); with `role_arn`, credentials of that role, assumed with the
 * former (and `external_id`) and refreshed before they expire. Throws a non-retryable
 * `url_not_allowed` when the outbound policy refuses `endpoint` (http to a host it does not
 * allow, or a private, loopback or metadata address).
 */
export async function createClient(config: S3Config, options: ClientOptions): Promise<S3Client> {
  if (config.endpoint !== undefined) options.outbound.assertUrl(config.endpoint);
  const sdk = await awsSdk();
  const base: Credentials | undefined =
    config.access_key_id !== undefined && config.secret_access_key !== undefined
      ? { accessKeyId: config.access_key_id, secretAccessKey: config.secret_access_key, ...(config.session_token !== undefined ? { sessionToken: config.session_token } : {}) }
      : undefined;
  const region = config.region ?? DEFAULT_REGION;
  const checksums = config.checksums === 'when_required' ? 'WHEN_REQUIRED' : 'WHEN_SUPPORTED';
  return new sdk.S3Client({
    region,
    ...(config.endpoint !== undefined ? { endpoint: config.endpoint } : {}),
    forcePathStyle: config.force_path_style ?? false,
    ...(config.role_arn !== undefined ? { credentials: assumedRole(sdk, config.role_arn, config.external_id, region, base, options) } : base ? { credentials: base } : {}),
    requestChecksumCalculation: checksums,
    responseChecksumValidation: checksums,
    // The engine retries a failed batch with its own backoff and health reporting; the SDK's
    // three attempts stay for the odd dropped connection.
    maxAttempts: 3,
    requestHandler: requestHandler(options),
  });
}

/** Credentials of `roleArn`, assumed through STS and renewed five minutes before they expire. */
function assumedRole(sdk: AwsSdk, roleArn: string, externalId: string | undefined, region: string, base: Credentials | undefined, options: ClientOptions): () => Promise<{ accessKeyId: string; secretAccessKey: string; sessionToken: string; expiration: Date }> {
  const now = options.now;
  // STS is reached through the same policy as the store.
  const sts = new sdk.STSClient({ region, ...(base ? { credentials: base } : {}), requestHandler: requestHandler(options) });
  let current: { accessKeyId: string; secretAccessKey: string; sessionToken: string; expiration: Date } | undefined;
  return async () => {
    if (current && current.expiration.getTime() - 5 * 60_000 > now()) return current;
    const answer = await sts.send(new sdk.AssumeRoleCommand({ RoleArn: roleArn, RoleSessionName: 'ferry', ...(externalId !== undefined ? { ExternalId: externalId } : {}) }));
    const c = answer.Credentials;
    if (!c?.AccessKeyId || !c.SecretAccessKey || !c.SessionToken || !c.Expiration) {
      throw new ConnectorError('auth_failed', `Assuming ${roleArn} returned no credentials.`, { retryable: false });
    }
    current = { accessKeyId: c.AccessKeyId, secretAccessKey: c.SecretAccessKey, sessionToken: c.SessionToken, expiration: c.Expiration };
    return current;
  };
}

/** Which side an error happened on, for its code. */
export type Side = 'source' | 'destination' | 'check';

/**
 * Turns whatever the SDK threw into a {@link ConnectorError} without secrets: throttling, 5xx
 * and network failures are retryable; credentials, permissions and a missing bucket are not.
 */
export function classifyError(error: unknown, side: Side): ConnectorError {
  if (error instanceof ConnectorError) return error;
  // The outbound policy's refusal, however the SDK wrapped it: not retryable.
  for (let cause = (error as { cause?: unknown } | null)?.cause, depth = 0; cause && depth < 5; cause = (cause as { cause?: unknown }).cause, depth++) {
    if (cause instanceof ConnectorError) return cause;
  }
  const e = error as { name?: unknown; code?: unknown; message?: unknown; $metadata?: { httpStatusCode?: number }; $retryable?: unknown } | null;
  const name = typeof e?.name === 'string' ? e.name : '';
  const status = e?.$metadata?.httpStatusCode;
  const where = side === 'check' ? 'The store' : `The ${side} store`;
  const unavailable = side === 'source' ? 'source_unavailable' : side === 'destination' ? 'destination_unavailable' : 'unavailable';
  const retry = (code: string, message: string) => new ConnectorError(code, message, { retryable: true, cause: error });
  const fatal = (code: string, message: string) => new ConnectorError(code, message, { retryable: false, cause: error });
  if (name === 'NoSuchBucket') return fatal('bucket_not_found', `${where} has no such bucket.`);
  if (name === 'InvalidAccessKeyId' || name === 'SignatureDoesNotMatch' || name === 'ExpiredToken' || name === 'InvalidToken' || name === 'InvalidClientTokenId') {
    return fatal('auth_failed', `${where} refused the credentials (${name}).`);
  }
  if (name === 'AccessDenied' || status === 403) return fatal('permission_denied', `${where} denied access (${name || 'HTTP 403'}).`);
  if (name === 'SlowDown' || name === 'Throttling' || name === 'ThrottlingException' || status === 429 || status === 503) return retry('throttled', `${where} asked to slow down; will retry.`);
  if (name === 'TimeoutError' || name === 'RequestTimeout' || name === 'RequestTimeoutException') return retry('timeout', `${where} did not answer in time.`);
  const code = typeof e?.code === 'string' ? e.code : '';
  if (code === 'ECONNREFUSED') return retry('connection_refused', `${where} refused the connection (ECONNREFUSED).`);
  if (/^E[A-Z]+$/.test(code) || (status !== undefined && status >= 500) || status === undefined) return retry(unavailable, `${where} is unavailable (${code || name || `HTTP ${status}`}); will retry.`);
  return fatal('request_failed', `${where} refused a request (${name || `HTTP ${status}`}).`);
}

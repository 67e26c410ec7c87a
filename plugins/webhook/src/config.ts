import { assertUrlAllowed, generateWebhookSecret, Secret, webhookSecretBytes, type ConnectorDirection } from '@ferry/core';
import { Type, type Static } from '@sinclair/typebox';

/** Default number of events per request. */
export const DEFAULT_BATCH_SIZE = 100;
/**
 * Default number of requests one write may have in flight at once: enough to hide the round
 * trips of a nearby receiver, few enough for a small one to take.
 */
export const DEFAULT_CONCURRENCY = 4;
/**
 * The most requests in flight a connector may ask for: the plugin's connection pool keeps 32
 * connections per origin, shared by its destinations, so more would only queue.
 */
export const MAX_CONCURRENCY = 32;
/** Default time a request may take, in milliseconds. */
export const DEFAULT_TIMEOUT_MS = 15_000;
/**
 * Default number of times a request that failed transiently (a timeout, a broken connection,
 * 408, 429, 500, 502, 503, 504) is sent again within one write before the write fails and the
 * engine holds the flow: three retries turn a 5 % rate of bad answers into about one failed
 * request in 160,000, while a receiver that keeps failing costs at most 150 ms of delays (350 ms
 * for 429s) and three more requests per request before the hold takes over.
 */
export const DEFAULT_RETRIES = 3;
/**
 * The most retries a connector may ask for: with delays capped at a second, ten already keep a
 * failing write out of the engine's hold for several seconds, and its health reporting with it.
 */
export const MAX_RETRIES = 10;
/**
 * The most of a response body the plugin reads (4 KiB, as for webhook deliveries), set on its outbound client;
 * the rest is discarded and the connection closed.
 */
export const MAX_RESPONSE_BYTES = 4096;

/**
 * The `webhook` connector's config (its README's Config table). `headers` is one secret as a whole: the
 * core cannot seal a secret nested inside a record, but it seals an object-valued secret field.
 */
export const webhookConfigSchema = Type.Object(
  {
    signing_secret: Type.Optional(Secret(Type.String({ minLength: 1, maxLength: 200, description: '`whsec_` + base64 of 24 to 64 bytes; generated when omitted.' }))),
    url: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: 'Where a destination POSTs its batches (https unless allowed).' })),
    batch_size: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: DEFAULT_BATCH_SIZE })),
    concurrency: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_CONCURRENCY, default: DEFAULT_CONCURRENCY, description: 'Most requests of one write in flight at once.' })),
    headers: Type.Optional(Secret(Type.Record(Type.String({ minLength: 1, maxLength: 256 }), Type.String({ maxLength: 8192 }), { maxProperties: 50 }))),
    timeout_ms: Type.Optional(Type.Integer({ minimum: 1000, maximum: 60_000, default: DEFAULT_TIMEOUT_MS })),
    retries: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_RETRIES, default: DEFAULT_RETRIES, description: 'Times a request that failed transiently is sent again within one write (0: never).' })),
  },
  { additionalProperties: false },
);

/** The config as the plugin sees it. */
export type WebhookConfig = Static<typeof webhookConfigSchema>;

/** A config problem, pointer relative to the config. */
export interface ConfigProblem {
  pointer: string;
  code: string;
  detail: string;
}

/**
 * Headers a static `headers` entry may not set: the signature and the body framing belong to the
 * plugin, and a receiver must never see a forged signature next to the real one.
 */
const RESERVED_HEADERS = new Set([
  'webhook-id', 'webhook-timestamp', 'webhook-signature', 'x-service-signature',
  'content-type', 'content-length', 'transfer-encoding', 'host', 'connection',
]);
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// Header values may not break the request line framing; tabs and visible characters only.
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** The outbound allow list the plugin applies: `true` allows every host, as the engine's `*`. */
export function allowList(allowHttp: boolean | readonly string[] | undefined): readonly string[] {
  if (allowHttp === true) return ['*'];
  return allowHttp || [];
}

/**
 * Rules the schema cannot say: a destination needs a `url` the outbound policy accepts, a given
 * secret must be well formed, and static headers must be sendable. Details never repeat values.
 */
export function validateWebhookConfig(config: WebhookConfig, direction: ConnectorDirection, allow: readonly string[]): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  if (config.signing_secret !== undefined && !webhookSecretBytes(config.signing_secret)) {
    problems.push({ pointer: '/signing_secret', code: 'format', detail: 'Expected `whsec_` followed by standard base64 of 24 to 64 bytes.' });
  }
  if (direction !== 'source') {
    if (config.url === undefined) {
      problems.push({ pointer: '/url', code: 'required', detail: 'A webhook destination needs a url.' });
    } else {
      const refused = urlProblem(config.url, allow);
      if (refused) problems.push({ pointer: '/url', code: 'url_not_allowed', detail: refused });
    }
  }
  for (const [name, value] of Object.entries(config.headers ?? {})) {
    const pointer = `/headers/${name.replace(/~/g, '~0').replace(/\//g, '~1')}`;
    if (!HEADER_NAME.test(name)) problems.push({ pointer, code: 'invalid', detail: 'Not a valid HTTP header name.' });
    else if (RESERVED_HEADERS.has(name.toLowerCase())) problems.push({ pointer, code: 'invalid', detail: 'This header is set by the connector and cannot be overridden.' });
    else if (!HEADER_VALUE.test(value)) problems.push({ pointer, code: 'invalid', detail: 'The value contains characters a header cannot carry.' });
  }
  return problems;
}

/** Why the outbound policy refuses `url`, or null when it accepts it. */
export function urlProblem(url: string, allow: readonly string[]): string | null {
  try {
    assertUrlAllowed(url, allow);
    return null;
  } catch (e) {
    return e instanceof Error ? e.message : 'The URL is not allowed.';
  }
}

/**
 * Fills what the plugin generates on create: a `signing_secret` when none was given. Returns a
 * new object and leaves its input alone.
 */
export function prepareWebhookConfig(config: WebhookConfig): WebhookConfig {
  if (config.signing_secret !== undefined) return { ...config };
  return { ...config, signing_secret: generateWebhookSecret() };
}

import { ConnectorError, defineConnector, generateWebhookSecret, OutboundClient, webhookSecretBytes, type ConnectorDefinition, type ConnectorDirection, type ConnectorOutbound } from '@ferry/core';
import {
  allowList,
  DEFAULT_BATCH_SIZE,
  DEFAULT_CONCURRENCY,
  DEFAULT_RETRIES,
  DEFAULT_TIMEOUT_MS,
  MAX_RESPONSE_BYTES,
  prepareWebhookConfig,
  urlProblem,
  validateWebhookConfig,
  webhookConfigSchema,
  type WebhookConfig,
} from './config.js';
import { webhookDestination } from './destination.js';

/** This plugin's version, also sent in `User-Agent`. */
export const WEBHOOK_PLUGIN_VERSION = '0.1.0';

/** Options of {@link webhook}. */
export interface WebhookOptions {
  /**
   * Hosts, IPs or CIDRs this plugin's destinations may reach over plain http and despite being
   * private or loopback, in addition to the engine's `outboundAllow` (`FERRY_OUTBOUND_ALLOW`),
   * which always applies; `true` allows every host (`*`). Default: nothing beyond the engine's
   * list. Rarely needed: set the engine's list instead, which covers every connector.
   */
  allowHttp?: boolean | readonly string[];
  /**
   * DNS resolution of the plugin's requests; default the system resolver. Whatever it answers
   * still goes through the outbound policy at connect time (tests use it to point names at
   * loopback).
   */
  lookup?: NonNullable<ConstructorParameters<typeof OutboundClient>[0]>['lookup'];
}

/** The `webhook` connector definition, with its `prepareConfig` typed for this config. */
export type WebhookConnector = ConnectorDefinition<typeof webhookConfigSchema> & {
  /**
   * Completes a config before it is stored on create: generates `signing_secret` when it is
   * omitted. Returns a new object; the input is not changed.
   */
  prepareConfig(config: WebhookConfig, direction: ConnectorDirection): WebhookConfig;
};

/**
 * The `webhook` connector type (its README describes the config). As a destination it POSTs event
 * batches to `url`, signed with the connector's `signing_secret` the Standard Webhooks way. As a
 * source, events arrive at the core's ingest endpoint (`POST /v2/ingest/{connector_id}`), which
 * stores them in the connector's inbox before its 202; the pipeline reads them from there.
 *
 * @example
 * ```ts
 * const engine = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }), plugins: [webhook()] });
 * ```
 */
export function webhook(options: WebhookOptions = {}): WebhookConnector {
  const extra = allowList(options.allowHttp);
  // The engine's list (from the context) and the plugin's own extra entries.
  const allowOf = (outbound: ConnectorOutbound | undefined): readonly string[] => [...(outbound?.allow ?? []), ...extra];
  // One client (one connection pool) per allow list, shared by the checks and destinations of
  // the engines that have that list, made on first use so a plugin that only validates configs
  // holds no pool; each request runs its timeout on the clock of the engine context that sent it.
  const pools = new Map<string, OutboundClient>();
  const client = (allow: readonly string[]) => {
    const key = JSON.stringify(allow);
    let pool = pools.get(key);
    if (!pool) pools.set(key, (pool = new OutboundClient({ allow, maxResponseBytes: MAX_RESPONSE_BYTES, ...(options.lookup ? { lookup: options.lookup } : {}) })));
    return pool;
  };
  const userAgent = `ferry-webhook/${WEBHOOK_PLUGIN_VERSION}`;

  const definition = defineConnector({
    type: 'webhook',
    version: WEBHOOK_PLUGIN_VERSION,
    directions: ['source', 'destination', 'bidirectional'],
    configSchema: webhookConfigSchema,
    // Senders sign with it: generated when omitted, shown once, then read on /signing-secret.
    readableSecret: 'signing_secret',

    validateConfig: (config, direction, outbound) => validateWebhookConfig(config, direction, allowOf(outbound)),

    async check(ctx) {
      const url = ctx.config.url;
      // A pure source has nothing to reach: its endpoint is the engine's own.
      if (url === undefined) return { health: 'healthy', latencyMs: 0 };
      const allow = allowOf(ctx.outbound);
      const refused = urlProblem(url, allow);
      if (refused) return { health: 'down', latencyMs: 0, error: { code: 'url_not_allowed', message: refused } };
      const timeoutMs = ctx.config.timeout_ms ?? DEFAULT_TIMEOUT_MS;
      const started = ctx.clock.now();
      const outcome = await client(allow).send({ url, method: 'HEAD', headers: { 'user-agent': userAgent }, timeoutMs, signal: ctx.signal, clock: ctx.clock });
      const latencyMs = Math.max(0, ctx.clock.now() - started);
      switch (outcome.kind) {
        // Any answer, even 404 or 405 to a HEAD, proves the receiver is reachable.
        case 'response':
          return { health: 'healthy', latencyMs };
        case 'timeout':
          return { health: 'down', latencyMs, error: { code: 'timeout', message: `No answer within ${timeoutMs} ms.` } };
        case 'blocked':
          return { health: 'down', latencyMs, error: { code: 'url_not_allowed', message: outcome.reason } };
        case 'network':
          return { health: 'down', latencyMs, error: { code: 'unreachable', message: `The receiver could not be reached (${outcome.code}).` } };
      }
    },

    // The events were verified and stored by the engine's ingest endpoint; reading them is
    // reading the connector's inbox, in arrival order.
    source(ctx) {
      return { read: (checkpoint, max) => ctx.inbox.read(checkpoint, max) };
    },

    destination(ctx) {
      const { url, signing_secret: secret } = ctx.config;
      const invalid = (message: string) => new ConnectorError('configuration_invalid', message, { retryable: false });
      if (url === undefined) throw invalid('A webhook destination needs a url.');
      const allow = allowOf(ctx.outbound);
      const refused = urlProblem(url, allow);
      if (refused) throw new ConnectorError('url_not_allowed', refused, { retryable: false });
      if (secret === undefined || !webhookSecretBytes(secret)) throw invalid('The connector has no valid signing_secret.');
      return webhookDestination(
        {
          url,
          secret,
          batchSize: ctx.config.batch_size ?? DEFAULT_BATCH_SIZE,
          concurrency: ctx.config.concurrency ?? DEFAULT_CONCURRENCY,
          timeoutMs: ctx.config.timeout_ms ?? DEFAULT_TIMEOUT_MS,
          retries: ctx.config.retries ?? DEFAULT_RETRIES,
          headers: { ...ctx.config.headers },
          clock: ctx.clock,
          userAgent,
        },
        client(allow),
      );
    },

    async rotate(_ctx, input) {
      const given = input.config?.signing_secret;
      if (given === undefined) return { signing_secret: generateWebhookSecret() };
      if (typeof given !== 'string' || !webhookSecretBytes(given)) {
        throw new ConnectorError('invalid_secret', 'signing_secret must be `whsec_` followed by standard base64 of 24 to 64 bytes.', { retryable: false });
      }
      return { signing_secret: given };
    },
  });

  return Object.freeze({
    ...definition,
    prepareConfig: (config: WebhookConfig, _direction: ConnectorDirection) => prepareWebhookConfig(config),
  });
}

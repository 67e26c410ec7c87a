import { ConnectorError, defineConnector, probeCheck, type ConnectorDefinition, type ConnectorOutbound, type Logger } from '@ferry/core';
import { classifyError, createKafka } from './client.js';
import { kafkaJs } from './kafkajs.js';
import { brokerAddress, kafkaConfigSchema, validateKafkaConfig, type KafkaConfig } from './config.js';
import { kafkaDestination } from './destination.js';
import { kafkaSource, type ConsumerTimings } from './source.js';

/** This plugin's version. */
export const KAFKA_PLUGIN_VERSION = '0.1.0';

/** Options of {@link kafka}. */
export interface KafkaOptions {
  /**
   * Retries of one request inside kafkajs before the error reaches the engine (default 5); the
   * engine then backs off and tries again for as long as the outage lasts.
   */
  retries?: number;
  /** Consumer group timings of sources (kafkajs's defaults, but a 1 s fetch wait). */
  consumer?: Partial<ConsumerTimings>;
}

/** The `kafka` connector definition. */
export type KafkaConnector = ConnectorDefinition<typeof kafkaConfigSchema>;

/**
 * The `kafka` connector type (its README describes the config), on kafkajs. As a destination it produces
 * each event as a JSON message keyed by its id (or a payload field), with `ferry-id` and
 * `ferry-type` headers; as a source it consumes topics in a consumer group, one message one
 * event, and commits the group's offsets only after the engine committed the batch.
 *
 * @example
 * ```ts
 * const engine = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }), plugins: [kafka()] });
 * ```
 */
export function kafka(options: KafkaOptions = {}): KafkaConnector {
  const retries = options.retries ?? 5;
  if (!Number.isInteger(retries) || retries < 0 || retries > 20) throw new RangeError('kafka(): retries must be an integer from 0 to 20.');
  const timings: ConsumerTimings = { sessionTimeoutMs: 30_000, heartbeatIntervalMs: 3_000, maxWaitTimeMs: 1_000, ...options.consumer };
  if (timings.heartbeatIntervalMs * 3 > timings.sessionTimeoutMs) throw new RangeError('kafka(): the heartbeat interval must be at most a third of the session timeout.');

  /** Proves the brokers answer these credentials and know the topics this side uses. */
  const probe = async (config: KafkaConfig, logger: Logger, outbound: ConnectorOutbound) => {
    // Every bootstrap broker resolved and checked first: a refused one answers at once, instead
    // of after kafkajs's retries (each of which the socket factory would refuse too).
    await Promise.all(config.brokers.map((broker) => outbound.resolve(brokerAddress(broker).host)));
    const admin = (await createKafka(config, { retries: Math.min(retries, 2), logger, outbound })).admin();
    try {
      await admin.connect();
      const topics = [...(config.topics ?? []), ...(config.topic !== undefined ? [config.topic] : [])];
      if (topics.length > 0) await admin.fetchTopicMetadata({ topics });
      else await admin.describeCluster();
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  };

  return defineConnector({
    type: 'kafka',
    version: KAFKA_PLUGIN_VERSION,
    directions: ['source', 'destination'],
    configSchema: kafkaConfigSchema,

    validateConfig: (config, direction, outbound) => validateKafkaConfig(config, direction, outbound),

    check: (ctx) =>
      probeCheck(
        ctx.clock,
        () => probe(ctx.config, ctx.logger, ctx.outbound),
        (error) => classifyError(error, 'check'),
      ),

    async source(ctx) {
      const groupId = ctx.config.group_id ?? `ferry-${ctx.pipelineId}`;
      return kafkaSource(await createKafka(ctx.config, { retries, logger: ctx.logger, outbound: ctx.outbound }), ctx.config, groupId, timings, ctx.logger, retries);
    },

    async destination(ctx) {
      return kafkaDestination(await createKafka(ctx.config, { retries, logger: ctx.logger, outbound: ctx.outbound }), ctx.config, (await kafkaJs()).CompressionTypes);
    },

    /**
     * Supplied credentials (`sasl`, or `ssl` with a new client key), proven against the brokers
     * before they are accepted. New ones cannot be made here (the cluster's admin makes them),
     * so a rotation without them is refused.
     */
    async rotate(ctx, input) {
      const supplied = input.config;
      if (!supplied || (supplied.sasl === undefined && supplied.ssl === undefined)) {
        throw new ConnectorError('credentials_required', 'Supply new sasl credentials (or an ssl client key) to rotate a kafka connector.', { retryable: false });
      }
      const fields: Partial<KafkaConfig> = {};
      if (supplied.sasl !== undefined) fields.sasl = { ...ctx.config.sasl, ...supplied.sasl } as KafkaConfig['sasl'];
      if (supplied.ssl !== undefined) fields.ssl = typeof supplied.ssl === 'object' && typeof ctx.config.ssl === 'object' ? { ...ctx.config.ssl, ...supplied.ssl } : supplied.ssl;
      try {
        await probe({ ...ctx.config, ...fields }, ctx.logger, ctx.outbound);
      } catch (error) {
        throw classifyError(error, 'check');
      }
      return fields;
    },
  });
}

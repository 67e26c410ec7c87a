/**
 * The `kafka` connector type for Ferry: events produced to a topic, and topics consumed in a
 * consumer group whose offsets follow the pipeline's committed checkpoint.
 * @packageDocumentation
 */
export { kafka, KAFKA_PLUGIN_VERSION, type KafkaConnector, type KafkaOptions } from './kafka-connector.js';
export {
  kafkaConfigSchema,
  validateKafkaConfig,
  DEFAULT_CLIENT_ID,
  DEFAULT_SOURCE_BATCH_SIZE,
  DEFAULT_MAX_MESSAGE_BYTES,
  DEFAULT_SOURCE_TYPE,
  type KafkaConfig,
  type ConfigProblem,
} from './config.js';
export { ID_HEADER, TYPE_HEADER } from './destination.js';
export type { KafkaPosition, ConsumerTimings } from './source.js';

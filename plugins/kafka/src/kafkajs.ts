import type * as KafkaJs from 'kafkajs';

let loading: Promise<typeof KafkaJs> | undefined;

/**
 * kafkajs, imported on first use: it is about 140 modules (90 ms here) that a server registering
 * this plugin but never opening a Kafka connector should not load at every start.
 */
export function kafkaJs(): Promise<typeof KafkaJs> {
  loading ??= import('kafkajs').then((module) => ((module as unknown as { default?: typeof KafkaJs }).default ?? module) as typeof KafkaJs);
  return loading;
}

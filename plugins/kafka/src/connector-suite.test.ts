import type { JsonObject } from '@ferry/core';
import { closedPort } from '@ferry/testing';
import { runConnectorSuite } from '@ferry/testing/suites';
import { afterAll, beforeAll } from 'vitest';
import { kafka } from './index.js';
import { freshTopic, MOCK_TIMINGS, readTopic, startCluster, type TestCluster } from './test-cluster.js';

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

let groups = 0;

runConnectorSuite('kafka', {
  plugin: kafka({ retries: 1, consumer: MOCK_TIMINGS }),
  secretFields: ['sasl.password', 'ssl.key', 'ssl.passphrase'],
  source: {
    // Slices of 10, so that the suite's first consumption ends inside the 25 messages.
    config: async () => ({ brokers: cluster.brokers, topics: [await freshTopic(cluster)], from_beginning: true, batch_size: 10, group_id: `suite-${groups++}`, type: 'suite.message' }),
    async produce(config, from, count) {
      // One partition: the suite checks order, which Kafka keeps within a partition only.
      const topic = (config.topics as string[])[0]!;
      await cluster.producer.send({ topic, messages: Array.from({ length: count }, (_, i) => ({ partition: 0, value: JSON.stringify({ n: from + i }) })) });
    },
  },
  destination: {
    // A small message limit: the suite's big record is refused before it is sent.
    config: async () => ({ brokers: cluster.brokers, topic: await freshTopic(cluster), max_message_bytes: 2048 }),
    async landed(config) {
      return (await readTopic(cluster, String(config.topic))).map((m) => ({ id: m.headers['ferry-id']!, type: m.headers['ferry-type']!, payload: m.value.payload as never }));
    },
    async rejectable() {
      return { id: 'evt_too_large', type: 'suite.event', occurredAt: '2026-01-01T00:00:00.000Z', payload: { blob: 'x'.repeat(4096) } };
    },
    idempotence: 'none',
  },
  async unreachable(direction): Promise<JsonObject> {
    const brokers = [`127.0.0.1:${await closedPort()}`];
    return direction === 'source' ? { brokers, topics: ['nowhere'] } : { brokers, topic: 'nowhere' };
  },
});

import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKafkaMock, type KafkaMock } from './kafka-mock.js';

let mock: KafkaMock;
beforeAll(async () => {
  mock = await startKafkaMock({ brokers: 3, topics: { orders: 3 } });
});
afterAll(async () => {
  await mock?.stop();
});

describe('startKafkaMock', () => {
  it('runs a cluster of real brokers on loopback that kafkajs produces to and consumes from in a group', async () => {
    expect(mock.brokers).toHaveLength(3);
    expect(mock.brokers.every((b) => /^127\.0\.0\.1:\d+$/.test(b))).toBe(true);
    const kafka = new Kafka({ clientId: 'kit-test', brokers: mock.brokers, logLevel: logLevel.NOTHING });
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic: 'orders', acks: -1, messages: Array.from({ length: 30 }, (_, i) => ({ key: `k${i}`, value: JSON.stringify({ n: i }) })) });
    await producer.disconnect();
    const consumer = kafka.consumer({ groupId: 'kit-test', sessionTimeout: 6000, heartbeatInterval: 500, maxWaitTimeInMs: 100 });
    await consumer.connect();
    await consumer.subscribe({ topic: 'orders', fromBeginning: true });
    const seen: number[] = [];
    await new Promise<void>((resolve, reject) => {
      consumer
        .run({
          eachMessage: async ({ message }) => {
            seen.push((JSON.parse(String(message.value)) as { n: number }).n);
            if (seen.length === 30) resolve();
          },
        })
        .catch(reject);
    });
    await consumer.disconnect();
    expect(seen.sort((a, b) => a - b)).toEqual([...Array(30).keys()]);
  });

  it('stops, and a second stop is harmless', async () => {
    const other = await startKafkaMock();
    await other.stop();
    await other.stop();
  });
});

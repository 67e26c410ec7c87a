import type { JsonObject } from '@ferry/core';
import { startKafkaMock, type KafkaMock } from '@ferry/test-servers';
import { Kafka, logLevel, type Admin, type KafkaMessage, type Producer } from 'kafkajs';

/** Consumer timings the mock cluster needs: it answers a leaving member slowly otherwise. */
export const MOCK_TIMINGS = { sessionTimeoutMs: 6000, heartbeatIntervalMs: 500, maxWaitTimeMs: 100 } as const;

/** The mock cluster and plain kafkajs clients of it, to set up and read back what the plugin did. */
export interface TestCluster {
  readonly mock: KafkaMock;
  readonly brokers: string[];
  readonly kafka: Kafka;
  readonly admin: Admin;
  readonly producer: Producer;
  stop(): Promise<void>;
}

/** Starts a mock cluster (librdkafka's) with a connected admin and producer. */
export async function startCluster(): Promise<TestCluster> {
  const mock = await startKafkaMock();
  const kafka = new Kafka({ brokers: mock.brokers, clientId: 'ferry-test', logLevel: logLevel.NOTHING, retry: { retries: 2 } });
  const admin = kafka.admin();
  const producer = kafka.producer();
  await Promise.all([admin.connect(), producer.connect()]);
  return {
    mock,
    brokers: mock.brokers,
    kafka,
    admin: oneAtATime(admin),
    producer,
    stop: async () => {
      await Promise.all([admin.disconnect(), producer.disconnect()]);
      await mock.stop();
    },
  };
}

/**
 * The admin client with its requests run one after another. Tests of a file run concurrently
 * (each on its own topic and group, so that the mock's 3 s group joins overlap); kafkajs's admin
 * keeps one metadata cache whose target topics concurrent calls replace, and then answers a
 * topic's offsets with no partitions.
 */
function oneAtATime(admin: Admin): Admin {
  let last: Promise<unknown> = Promise.resolve();
  return new Proxy(admin, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function' || property === 'on' || property === 'logger' || property === 'events') return value;
      return (...args: unknown[]) => {
        const run = last.then(() => (value as (...a: unknown[]) => unknown).apply(target, args));
        last = run.catch(() => undefined);
        return run;
      };
    },
  });
}

let topics = 0;

/** A new topic's name: the mock creates a topic (4 partitions) when it is first asked about. */
export async function freshTopic(cluster: TestCluster): Promise<string> {
  const topic = `topic-${process.pid}-${topics++}`;
  await cluster.admin.fetchTopicMetadata({ topics: [topic] });
  return topic;
}

/** A read-back message: the value parsed, the headers as text. */
export interface ReadMessage {
  partition: number;
  offset: string;
  key: string | null;
  value: JsonObject;
  headers: Record<string, string>;
  timestamp: string;
}

/**
 * Every message in `topic`, read with a consumer of a new group from the beginning until each
 * partition's end as it was when the read began (its high watermark), in partition then
 * offset order.
 */
export async function readTopic(cluster: TestCluster, topic: string): Promise<ReadMessage[]> {
  const ends = await cluster.admin.fetchTopicOffsets(topic);
  const wanted = new Map(ends.filter((p) => BigInt(p.high) > 0n).map((p) => [p.partition, BigInt(p.high)]));
  if (wanted.size === 0) return [];
  const out: ReadMessage[] = [];
  const consumer = cluster.kafka.consumer({ groupId: `read-${topic}-${topics++}`, sessionTimeout: MOCK_TIMINGS.sessionTimeoutMs, heartbeatInterval: MOCK_TIMINGS.heartbeatIntervalMs, maxWaitTimeInMs: MOCK_TIMINGS.maxWaitTimeMs });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`reading ${topic} did not reach its end in 60 s`)), 60_000);
      const check = () => {
        if ([...wanted.values()].every((left) => left <= 0n)) {
          clearTimeout(timer);
          resolve();
        }
      };
      void consumer.run({
        eachMessage: async ({ partition, message }) => {
          out.push(readMessage(partition, message));
          const end = wanted.get(partition);
          if (end !== undefined && BigInt(message.offset) + 1n >= end) wanted.set(partition, 0n);
          check();
        },
      });
    });
  } finally {
    await consumer.disconnect();
  }
  return out.sort((a, b) => a.partition - b.partition || Number(BigInt(a.offset) - BigInt(b.offset)));
}

function readMessage(partition: number, message: KafkaMessage): ReadMessage {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(message.headers ?? {})) {
    const one = Array.isArray(value) ? value[0] : value;
    if (one !== undefined) headers[name] = one.toString();
  }
  return {
    partition,
    offset: message.offset,
    key: message.key?.toString() ?? null,
    value: message.value ? (JSON.parse(message.value.toString()) as JsonObject) : {},
    headers,
    timestamp: message.timestamp,
  };
}

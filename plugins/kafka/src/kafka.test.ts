import { ConnectorError, type DestinationEvent, type JsonObject, type PushSource, type SourceBatch } from '@ferry/core';
import { connectorContext, type ConnectorContextOptions } from '@ferry/testing';
import { startKafkaMock } from '@ferry/test-servers';
import { createServer, type AddressInfo } from 'node:net';
import { Kafka, logLevel } from 'kafkajs';
import { Value } from '@sinclair/typebox/value';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kafka, kafkaConfigSchema, type KafkaConfig, type KafkaPosition } from './index.js';
import { freshTopic, MOCK_TIMINGS, readTopic, startCluster, type TestCluster } from './test-cluster.js';

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

const plugin = kafka({ retries: 1, consumer: MOCK_TIMINGS });
/** The mock cluster listens on loopback: an engine reaching it allows 127.0.0.1. */
const loopbackContext = <T,>(config: T, options: ConnectorContextOptions = {}) => connectorContext(config, { outboundAllow: ['127.0.0.1'], ...options });
const withDefaults = (config: JsonObject) => Value.Default(kafkaConfigSchema, structuredClone(config)) as KafkaConfig;
const event = (i: number, payload: JsonObject = { n: i }): DestinationEvent => ({
  id: `evt_${String(i).padStart(4, '0')}`,
  type: 'order.created',
  occurredAt: new Date(Date.UTC(2026, 0, 2, 3, 4, i)).toISOString(),
  payload,
});

async function write(config: JsonObject, events: DestinationEvent[]) {
  const writer = await plugin.destination!(loopbackContext(withDefaults(config)));
  try {
    return await writer.write(events, new AbortController().signal);
  } finally {
    await writer.close?.();
  }
}

let groups = 0;

/** Consumes `config` from `from` until `want` records came; the batches as handed over. */
async function consume(config: JsonObject, from: KafkaPosition | null, want: number, onBatch?: (batch: SourceBatch) => Promise<void>) {
  const source = (await plugin.source!(loopbackContext(withDefaults(config), { direction: 'source' }))) as PushSource;
  const batches: SourceBatch[] = [];
  const done = new AbortController();
  await source.consume(
    from,
    async (batch) => {
      await onBatch?.(batch);
      batches.push(batch);
      if (batches.reduce((n, b) => n + b.records.length, 0) >= want) done.abort();
    },
    done.signal,
  );
  return { batches, records: batches.flatMap((b) => b.records), checkpoint: batches.at(-1)?.checkpoint as KafkaPosition | undefined };
}

describe.concurrent('kafka destination', () => {
  it('produces each event as its JSON with ferry headers, keyed by its id, stamped with occurred_at', async () => {
    const topic = await freshTopic(cluster);
    const results = await write({ brokers: cluster.brokers, topic }, [event(1), event(2)]);
    expect(results).toEqual([{ ok: true }, { ok: true }]);
    const messages = (await readTopic(cluster, topic)).sort((a, b) => String(a.key).localeCompare(String(b.key)));
    expect(messages.map((m) => m.key)).toEqual(['evt_0001', 'evt_0002']);
    expect(messages[0]!.headers).toEqual({ 'ferry-id': 'evt_0001', 'ferry-type': 'order.created' });
    expect(messages[0]!.value).toEqual({ id: 'evt_0001', type: 'order.created', occurred_at: '2026-01-02T03:04:01.000Z', payload: { n: 1 } });
    expect(messages[0]!.timestamp).toBe(String(Date.UTC(2026, 0, 2, 3, 4, 1)));
  });

  it('keys by a payload path; an event without it is refused alone, the others land (gzip, acks 1)', async () => {
    const topic = await freshTopic(cluster);
    const results = await write({ brokers: cluster.brokers, topic, key: 'payload.customer.id', compression: 'gzip', acks: 1 }, [
      event(1, { customer: { id: 'c-7' } }),
      event(2, { customer: {} }),
      event(3, { customer: { id: 42 } }),
    ]);
    expect(results.map((r) => r.ok)).toEqual([true, false, true]);
    const refused = (results[1] as { ok: false; error: ConnectorError }).error;
    expect(refused).toBeInstanceOf(ConnectorError);
    expect([refused.code, refused.retryable]).toEqual(['key_missing', false]);
    const messages = await readTopic(cluster, topic);
    expect(messages.map((m) => m.key).sort()).toEqual(['42', 'c-7']);
    // One key, one partition: a customer's events stay in order.
    const again = await write({ brokers: cluster.brokers, topic, key: 'payload.customer.id' }, [event(4, { customer: { id: 'c-7' } })]);
    expect(again).toEqual([{ ok: true }]);
    const byKey = (await readTopic(cluster, topic)).filter((m) => m.key === 'c-7');
    expect(new Set(byKey.map((m) => m.partition)).size).toBe(1);
  });
});

describe.concurrent('kafka source', () => {
  it('turns each message into one event: Ferry events as they are, others by type_header, type_path or type', async () => {
    const topic = await freshTopic(cluster);
    const at = Date.UTC(2026, 3, 1, 12, 0, 0);
    await cluster.producer.send({
      topic,
      messages: [
        { partition: 0, timestamp: String(at), headers: { 'ferry-id': 'evt_x', 'ferry-type': 'order.created' }, value: JSON.stringify({ id: 'evt_x', type: 'order.created', occurred_at: '2025-12-31T23:59:59.000Z', payload: { n: 0 } }) },
        { partition: 0, timestamp: String(at), headers: { kind: 'order.paid' }, value: JSON.stringify({ n: 1, meta: { kind: 'order.meta' } }) },
        { partition: 0, timestamp: String(at), value: JSON.stringify({ n: 2, meta: { kind: 'order.meta' } }) },
        { partition: 0, timestamp: String(at), value: JSON.stringify({ n: 3 }) },
        { partition: 0, timestamp: String(at), value: 'plain text' },
        { partition: 0, timestamp: String(at), value: JSON.stringify([1, 2]) },
        { partition: 0, timestamp: String(at), key: 'gone', value: null },
        { partition: 0, timestamp: String(at), value: Buffer.from([0xff, 0xfe, 0x00]) },
      ],
    });
    const config = { brokers: cluster.brokers, topics: [topic], from_beginning: true, group_id: `types-${groups++}`, type_header: 'kind', type_path: 'meta.kind', type: 'order.other' };
    const { records, checkpoint } = await consume(config, null, 8);
    expect(records.map((r) => r.type)).toEqual(['order.created', 'order.paid', 'order.meta', 'order.other', 'order.other', 'order.other', 'order.other', 'order.other']);
    // A Ferry event is positioned by its ferry-id (a copy produced again is the same event); the rest by offset.
    expect(records[0]).toEqual({ position: 'ferry-id/evt_x', type: 'order.created', occurredAt: '2025-12-31T23:59:59.000Z', payload: { n: 0 } });
    expect(records[1]!.position).toBe(`${topic}/0/1`);
    expect(records[3]!.occurredAt).toBe(new Date(at).toISOString());
    expect(records.slice(4).map((r) => r.payload)).toEqual([{ value: 'plain text' }, { value: [1, 2] }, { value: null }, { value_base64: Buffer.from([0xff, 0xfe, 0x00]).toString('base64') }]);
    expect(checkpoint).toEqual({ [topic]: { '0': '8' } });
    // Without a type anywhere, the default.
    const bare = await consume({ brokers: cluster.brokers, topics: [topic], from_beginning: true, group_id: `types-${groups++}` }, null, 8);
    expect(bare.records[3]!.type).toBe('kafka.message');
  });

  it('reads every partition; the checkpoint holds the next offset of each', async () => {
    const topic = await freshTopic(cluster);
    await cluster.producer.send({ topic, messages: Array.from({ length: 40 }, (_, i) => ({ partition: i % 4, value: JSON.stringify({ n: i }) })) });
    const { records, checkpoint } = await consume({ brokers: cluster.brokers, topics: [topic], from_beginning: true, group_id: `parts-${groups++}` }, null, 40);
    expect(records.map((r) => (r.payload as { n: number }).n).sort((a, b) => a - b)).toEqual([...Array(40).keys()]);
    expect(checkpoint).toEqual({ [topic]: { '0': '10', '1': '10', '2': '10', '3': '10' } });
  });

  it('commits the group offset only after the batch was handed over and its handler returned; a failing handler commits nothing', async () => {
    const topic = await freshTopic(cluster);
    const groupId = `commit-${groups++}`;
    const committed = async () => (await cluster.admin.fetchOffsets({ groupId, topics: [topic] }))[0]!.partitions.find((p) => p.partition === 0)!.offset;
    await cluster.producer.send({ topic, messages: Array.from({ length: 5 }, (_, i) => ({ partition: 0, value: JSON.stringify({ n: i }) })) });
    const config = { brokers: cluster.brokers, topics: [topic], from_beginning: true, group_id: groupId, batch_size: 5 };

    // The engine could not commit the batch: the error ends the consumption, the group's offset does not move.
    const failure = new ConnectorError('storage_down', 'the checkpoint could not be written', { retryable: true });
    await expect(consume(config, null, 5, async () => Promise.reject(failure))).rejects.toBe(failure);
    expect(await committed()).toBe('-1');

    // While the handler runs (the engine commits), the group's offset has not moved; afterwards it is the checkpoint's.
    const during: string[] = [];
    const { checkpoint } = await consume(config, null, 5, async () => {
      during.push(await committed());
    });
    expect(during).toEqual(['-1']);
    expect(checkpoint).toEqual({ [topic]: { '0': '5' } });
    expect(await committed()).toBe('5');
  });

  it('hands the next slice over while the last one commits, two at most, and moves the group offset slice after slice', async () => {
    const topic = await freshTopic(cluster);
    const groupId = `ahead-${groups++}`;
    await cluster.producer.send({ topic, messages: Array.from({ length: 20 }, (_, i) => ({ partition: 0, value: JSON.stringify({ n: i }) })) });
    let outstanding = 0;
    let most = 0;
    const { batches, records } = await consume({ brokers: cluster.brokers, topics: [topic], from_beginning: true, group_id: groupId, batch_size: 5 }, null, 20, async () => {
      most = Math.max(most, ++outstanding);
      // The engine commits: the source hands the next slice over meanwhile.
      await new Promise((resolve) => setImmediate(resolve));
      outstanding--;
    });
    expect(most).toBe(2);
    expect(records.map((r) => (r.payload as { n: number }).n)).toEqual([...Array(20).keys()]);
    expect(batches.map((b) => (b.checkpoint as KafkaPosition)[topic]!['0'])).toEqual(['5', '10', '15', '20']);
    const offset = (await cluster.admin.fetchOffsets({ groupId, topics: [topic] }))[0]!.partitions.find((p) => p.partition === 0)!.offset;
    expect(offset).toBe('20');
  });

  it('gathers batches across partitions and fetches, up to batch_size, in each partition\'s order, each message once', async () => {
    const topic = await freshTopic(cluster);
    // Ten produce requests: each partition holds ten small record batches, and a fetch returns one
    // per partition; a batch handed over takes messages from several of them.
    for (let round = 0; round < 10; round++) {
      await cluster.producer.send({ topic, messages: Array.from({ length: 12 }, (_, i) => ({ partition: i % 4, value: JSON.stringify({ n: round * 12 + i }) })) });
    }
    let outstanding = 0;
    let most = 0;
    const { batches, records, checkpoint } = await consume({ brokers: cluster.brokers, topics: [topic], from_beginning: true, group_id: `gather-${groups++}`, batch_size: 25 }, null, 120, async () => {
      most = Math.max(most, ++outstanding);
      await new Promise((resolve) => setTimeout(resolve, 5));
      outstanding--;
    });
    expect(most).toBeLessThanOrEqual(2);
    expect(batches.every((b) => b.records.length <= 25)).toBe(true);
    // Fewer calls than the 40 record batches the topic holds: most carry a full 25.
    expect(batches.length).toBeLessThan(12);
    const offsets = records.map((r) => r.position.split('/').map(Number).slice(1) as [number, number]);
    expect(records.map((r) => (r.payload as { n: number }).n).sort((a, b) => a - b)).toEqual([...Array(120).keys()]);
    for (const partition of [0, 1, 2, 3]) {
      expect(offsets.filter(([p]) => p === partition).map(([, o]) => o)).toEqual([...Array(30).keys()]);
    }
    // Each checkpoint is the position after everything handed over until then, partition by partition.
    const seen: Record<string, number> = {};
    for (const batch of batches) {
      for (const record of batch.records) {
        const [, partition, offset] = record.position.split('/');
        seen[partition!] = Number(offset) + 1;
      }
      expect((batch.checkpoint as KafkaPosition)[topic]).toEqual(Object.fromEntries(Object.entries(seen).map(([p, o]) => [p, String(o)])));
    }
    expect(checkpoint).toEqual({ [topic]: { '0': '30', '1': '30', '2': '30', '3': '30' } });
  });

  it('after a failed batch, moves neither the checkpoint nor the group offset past the last batch that committed', async () => {
    const topic = await freshTopic(cluster);
    const groupId = `fail-${groups++}`;
    for (let round = 0; round < 4; round++) {
      await cluster.producer.send({ topic, messages: Array.from({ length: 10 }, (_, i) => ({ partition: 0, value: JSON.stringify({ n: round * 10 + i }) })) });
    }
    const config = { brokers: cluster.brokers, topics: [topic], from_beginning: true, group_id: groupId, batch_size: 10 };
    const failure = new ConnectorError('storage_down', 'the checkpoint could not be written', { retryable: true });
    let calls = 0;
    // The second batch fails (and the engine fails every call after it): the first one holds.
    await expect(consume(config, null, 40, async () => (++calls >= 2 ? Promise.reject(failure) : undefined))).rejects.toBe(failure);
    const committed = (await cluster.admin.fetchOffsets({ groupId, topics: [topic] }))[0]!.partitions.find((p) => p.partition === 0)!.offset;
    expect(committed).toBe('10');
    // Reading again from the first batch's checkpoint gives the rest, each message once.
    const again = await consume(config, { [topic]: { '0': '10' } }, 30);
    expect(again.records.map((r) => (r.payload as { n: number }).n)).toEqual(Array.from({ length: 30 }, (_, i) => i + 10));
  });

  it('reads from the checkpoint, not the group: behind it, the committed part is skipped; ahead of it, it seeks back', async () => {
    const topic = await freshTopic(cluster);
    const groupId = `seek-${groups++}`;
    await cluster.producer.send({ topic, messages: Array.from({ length: 10 }, (_, i) => ({ partition: 0, value: JSON.stringify({ n: i }) })) });
    const config = { brokers: cluster.brokers, topics: [topic], from_beginning: true, group_id: groupId, batch_size: 10 };
    const numbers = (records: { payload: JsonObject }[]) => records.map((r) => r.payload.n);
    // The group is at 0; the checkpoint at 6 (the group's commit was lost in a crash).
    expect(numbers((await consume(config, { [topic]: { '0': '6' } }, 4)).records)).toEqual([6, 7, 8, 9]);
    // The group is at 10 now; a checkpoint moved back to 3 reads from 3.
    expect(numbers((await consume(config, { [topic]: { '0': '3' } }, 7)).records)).toEqual([3, 4, 5, 6, 7, 8, 9]);
  });

  it('refuses to go on when the partition ends before the checkpoint (a recreated topic), rather than skip what it holds', async () => {
    const topic = await freshTopic(cluster);
    await cluster.producer.send({ topic, messages: Array.from({ length: 5 }, (_, i) => ({ partition: 0, value: JSON.stringify({ n: i }) })) });
    const config = { brokers: cluster.brokers, topics: [topic], from_beginning: true, group_id: `beyond-${groups++}`, batch_size: 10 };
    await expect(consume(config, { [topic]: { '0': '100' } }, 5)).rejects.toMatchObject({ code: 'checkpoint_beyond_log', retryable: false });
  });
});

describe('kafka source when the cluster goes away', () => {
  it('ends the consumption with a retryable error, for the engine to start again from the checkpoint', async () => {
    const own = await startKafkaMock({ topics: { gone: 1 } });
    try {
      const config = withDefaults({ brokers: own.brokers, topics: ['gone'], from_beginning: true, group_id: 'gone' });
      const source = (await plugin.source!(loopbackContext(config, { direction: 'source' }))) as PushSource;
      let joined!: () => void;
      const running = new Promise<void>((resolve) => (joined = resolve));
      const producer = new Kafka({ brokers: own.brokers, logLevel: logLevel.NOTHING }).producer();
      await producer.connect();
      await producer.send({ topic: 'gone', messages: [{ value: JSON.stringify({ n: 1 }) }] });
      await producer.disconnect();
      // The outcome is taken at once: the consumption may end (rejected) while the cluster is
      // still stopping, and a rejection nobody listens to yet is reported as unhandled.
      const outcome = source
        .consume(
          null,
          async () => {
            joined();
          },
          new AbortController().signal,
        )
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      await running;
      await own.stop();
      const error = await outcome;
      expect(error).toBeInstanceOf(ConnectorError);
      expect((error as ConnectorError).retryable).toBe(true);
    } finally {
      await own.stop();
    }
  }, 60_000);
});

describe('kafka source stopped before it joined', () => {
  it('ends at once when its signal aborts while the broker has not answered yet (and a write fails at once)', async () => {
    // A broker that takes connections and never answers: kafkajs waits out request_timeout_ms
    // (and retries), far past the test's timeout; only ending on the abort itself passes.
    let connected!: () => void;
    let connections = new Promise<void>((resolve) => (connected = resolve));
    const silent = createServer(() => connected());
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const config = withDefaults({ brokers: [`127.0.0.1:${(silent.address() as AddressInfo).port}`], topics: ['never'], group_id: 'never', request_timeout_ms: 60_000 });
      const source = (await plugin.source!(loopbackContext(config, { direction: 'source' }))) as PushSource;
      const stop = new AbortController();
      const consumed = source.consume(null, async () => undefined, stop.signal);
      await connections; // kafkajs is connecting: the broker took its socket
      stop.abort();
      await expect(consumed).resolves.toBeUndefined();

      // A destination's write, likewise: a retryable `aborted`, not a wait on kafkajs's retries.
      const writer = await plugin.destination!(loopbackContext(withDefaults({ ...config, topic: 'never' })));
      const cancel = new AbortController();
      connections = new Promise<void>((resolve) => (connected = resolve));
      const writing = writer.write([event(1)], cancel.signal);
      await connections;
      cancel.abort();
      await expect(writing).rejects.toMatchObject({ code: 'aborted', retryable: true });
      void writer.close?.();
    } finally {
      silent.close();
    }
  }, 10_000);
});

describe('kafka check and rotation', () => {
  it('is healthy when the brokers answer and know the topics', async () => {
    const topic = await freshTopic(cluster);
    expect((await plugin.check!(loopbackContext(withDefaults({ brokers: cluster.brokers, topic })))).health).toBe('healthy');
    expect((await plugin.check!(loopbackContext(withDefaults({ brokers: cluster.brokers, topics: [topic] }), { direction: 'source' }))).health).toBe('healthy');
  });

  it('rotates only supplied credentials, and proves them against the brokers first', async () => {
    const config = withDefaults({ brokers: cluster.brokers, topic: await freshTopic(cluster) });
    await expect(plugin.rotate!(loopbackContext(config), {})).rejects.toMatchObject({ code: 'credentials_required', retryable: false });
    // The mock cluster has no SASL: supplied credentials are tried against it and refused.
    const error = await plugin.rotate!(loopbackContext(config), { config: { sasl: { mechanism: 'plain', username: 'ferry', password: 'new-password' } } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectorError);
    expect((error as ConnectorError).retryable).toBe(false);
    expect((error as ConnectorError).message).not.toContain('new-password');
  });
});

describe('kafka()', () => {
  it('refuses options that cannot work', () => {
    expect(() => kafka({ retries: -1 })).toThrow(RangeError);
    expect(() => kafka({ consumer: { sessionTimeoutMs: 1000, heartbeatIntervalMs: 500 } })).toThrow(RangeError);
  });
});

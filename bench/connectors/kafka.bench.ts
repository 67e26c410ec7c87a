/**
 * The kafka plugin as a source and as a destination, against kafkajs doing the same work,
 * measured in the same run (the workload and engine: ./harness.ts), on librdkafka's mock cluster
 * (one broker, topics of 16 partitions: the mock keeps only the newest 5 MiB of a partition, and
 * the source cases read every message back) on loopback.
 *
 *  - `kafka: destination raw`: events/s of a kafkajs produce loop sending the very messages the
 *    plugin sends (the event JSON, keyed by id, with the ferry headers), a batch per request,
 *    `acks` -1, one request after another.
 *  - `kafka: destination`: events/s of a streaming pipeline from a memory source to the kafka
 *    destination, timed from the pipeline's creation until its checkpoint holds the last event.
 *  - `kafka: source raw`: events/s of a kafkajs consumer (`eachBatch`) parsing every message of
 *    that topic as JSON, timed from its first batch to its last message: joining a group takes
 *    the mock about 3 s, which both source cases leave out.
 *  - `kafka: source`: events/s of a streaming pipeline from the kafka source (the same topic,
 *    from the beginning) to a memory sink, timed from the first event the sink took to the last.
 * Each engine case's ratio is against the raw case just before it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { Kafka, logLevel, type Message } from 'kafkajs';
import { kafka } from '@ferry/kafka';
import { MemoryHub } from '@ferry/testing';
import { startKafkaMock, type KafkaMock } from '@ferry/test-servers';
import { emit } from '../emit.js';
import { BATCH, EVENTS, WS, log, prebuiltRecords, record, startEngine, until } from './harness.js';
import { engineContext } from '@ferry/core/internal';

/** The mock needs short group timings, or a consumer's leaving hangs. */
const plugin = () => kafka({ consumer: { sessionTimeoutMs: 6000, heartbeatIntervalMs: 500, maxWaitTimeMs: 100 } });

async function benchKafka(dir: string): Promise<void> {
  let cluster: KafkaMock | undefined;
  try {
    cluster = await startKafkaMock({ topics: { raw: 16, engine: 16 } });
    const client = new Kafka({ brokers: cluster.brokers, clientId: 'bench', logLevel: logLevel.NOTHING });

    // Destination, raw: the messages a pipeline sends, a batch per produce request.
    const occurredAt = new Date(Date.UTC(2026, 0, 1)).toISOString();
    const producer = client.producer();
    await producer.connect();
    const batches: Message[][] = [];
    for (let start = 0; start < EVENTS; start += BATCH) {
      const messages: Message[] = [];
      for (let i = start; i < Math.min(EVENTS, start + BATCH); i++) {
        const id = `evt_${String(i).padStart(26, '0')}`;
        messages.push({ key: id, value: JSON.stringify({ id, type: 'bench.event', occurred_at: occurredAt, payload: record(i) }), headers: { 'ferry-id': id, 'ferry-type': 'bench.event' }, timestamp: String(Date.parse(occurredAt)) });
      }
      batches.push(messages);
    }
    let started = performance.now();
    for (const messages of batches) await producer.send({ topic: 'raw', messages, acks: -1 });
    const rawWrite = EVENTS / ((performance.now() - started) / 1000);
    emit('connectors', 'kafka: destination raw', rawWrite, 'events/s');
    await producer.disconnect();
    batches.length = 0;

    // Destination, engine.
    const hub = new MemoryHub();
    const records = prebuiltRecords(EVENTS);
    hub.stream('in').generate(EVENTS, (i) => records[i]!);
    const engine = await startEngine(hub, dir, [plugin()]);
    try {
      const source = await engine.connectors.create(WS, { type: 'memory', direction: 'source', config: { name: 'in' } });
      const destination = await engine.connectors.create(WS, { type: 'kafka', direction: 'destination', config: { brokers: cluster.brokers, topic: 'engine' } });
      started = performance.now();
      const pipeline = await engine.pipelines.create(WS, { name: 'to-kafka', source_connector_id: source.id, destination_connector_id: destination.id, batch_size: BATCH, activate: true });
      await until(async () => (await engineContext(engine).storage.repos.checkpoints.get(pipeline.id)) === EVENTS, 'the kafka destination to take every event');
      emit('connectors', 'kafka: destination', EVENTS / ((performance.now() - started) / 1000), 'events/s', rawWrite);
      await engine.pipelines.pause(WS, pipeline.id);
    } finally {
      await engine.stop();
    }

    // Source, raw: every message of the topic the engine wrote, parsed.
    const consumer = client.consumer({ groupId: 'bench-raw', sessionTimeout: 6000, heartbeatInterval: 500, maxWaitTimeInMs: 100 });
    await consumer.connect();
    await consumer.subscribe({ topics: ['engine'], fromBeginning: true });
    let parsed = 0;
    let first = 0;
    await consumer.run({
      eachBatch: async ({ batch }) => {
        if (first === 0) first = performance.now();
        for (const message of batch.messages) parsed += JSON.parse(message.value!.toString()) ? 1 : 0;
      },
    });
    await until(() => parsed >= EVENTS, 'the raw consumer to read every message');
    const rawRead = EVENTS / ((performance.now() - first) / 1000);
    emit('connectors', 'kafka: source raw', rawRead, 'events/s');
    await consumer.disconnect();

    // Source, engine: the same topic into a memory sink.
    const readHub = new MemoryHub();
    const sink = readHub.sink('out', { keep: false });
    const reader = await startEngine(readHub, dir, [plugin()]);
    try {
      const source = await reader.connectors.create(WS, { type: 'kafka', direction: 'source', config: { brokers: cluster.brokers, topics: ['engine'], from_beginning: true, batch_size: BATCH } });
      const destination = await reader.connectors.create(WS, { type: 'memory', direction: 'destination', config: { name: 'out' } });
      const pipeline = await reader.pipelines.create(WS, { name: 'from-kafka', source_connector_id: source.id, destination_connector_id: destination.id, batch_size: BATCH, activate: true });
      await until(() => sink.accepted > 0, 'the kafka source to hand over its first batch');
      started = performance.now();
      await until(() => sink.accepted >= EVENTS, 'the kafka source to read every event');
      emit('connectors', 'kafka: source', EVENTS / ((performance.now() - started) / 1000), 'events/s', rawRead);
      if (sink.accepted !== EVENTS) log(`kafka source: the sink took ${sink.accepted} events for ${EVENTS}`);
      await reader.pipelines.pause(WS, pipeline.id);
    } finally {
      await reader.stop();
    }
  } finally {
    await cluster?.stop();
  }
}

const dir = mkdtempSync('/dev/shm/ferry-bench-kafka-');
try {
  log(`kafka: ${EVENTS} events, batches of ${BATCH}`);
  await benchKafka(dir);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

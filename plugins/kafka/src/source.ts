import { ConnectorError, getPath, parseExactJson, type Checkpoint, type JsonObject, type JsonValue, type Logger, type PushSource, type SourceBatch, type SourceRecord } from '@ferry/core';
import type { EachBatchPayload, Kafka, KafkaMessage } from 'kafkajs';
import { classifyError } from './client.js';
import { DEFAULT_SOURCE_BATCH_SIZE, DEFAULT_SOURCE_TYPE, type KafkaConfig } from './config.js';
import { ID_HEADER } from './destination.js';

/**
 * A kafka source's checkpoint: per topic and partition, the offset of the next message to hand
 * over (`{ "orders": { "0": "1042", "1": "977" } }`). Offsets are strings: they are 64-bit.
 */
export type KafkaPosition = Record<string, Record<string, string>>;

/** Consumer timings (kafkajs's names), tunable per plugin instance. */
export interface ConsumerTimings {
  /** A member silent this long is out of the group (default 30000). */
  sessionTimeoutMs: number;
  /** How often a member says it is alive (default 3000). */
  heartbeatIntervalMs: number;
  /** Longest a fetch waits on the broker for new messages (default 1000): the latency of an idle stream. */
  maxWaitTimeMs: number;
}

/**
 * The kafka source: a consumer in the group `group_id` (default `ferry-<pipeline id>`) hands
 * each fetched batch over in slices of `batch_size`, one message one event: the next slice while
 * the engine commits the last one (two at most), and a slice's offsets are committed to Kafka
 * once the engine committed its checkpoint. The checkpoint decides where reading resumes, not
 * the group's offsets: these trail it by at most two slices (a crash between the two commits),
 * and a partition whose fetch starts
 * elsewhere is brought back to it (skipping what was committed, or seeking back to a checkpoint
 * that was moved back), so a crash re-reads and never skips.
 */
export function kafkaSource(kafka: Kafka, config: KafkaConfig, groupId: string, timings: ConsumerTimings, logger: Logger, retries = 5): PushSource {
  const topics = config.topics!;
  const batchSize = config.batch_size ?? DEFAULT_SOURCE_BATCH_SIZE;
  const typeOf = recordType(config);

  return {
    async consume(from: Checkpoint | null, handler: (batch: SourceBatch) => Promise<void>, signal: AbortSignal): Promise<void> {
      let position: KafkaPosition = isPosition(from) ? structuredClone(from) : {};
      let settle!: (error?: unknown) => void;
      const finished = new Promise<unknown>((resolve) => (settle = (error?: unknown) => resolve(error)));
      let done = false;
      // The batch being handed over, so that the consumer leaves only after its offset commit.
      let running: Promise<void> = Promise.resolve();
      const finish = (error?: unknown) => {
        if (done) return;
        done = true;
        settle(error);
      };
      if (signal.aborted) return;
      const onAbort = () => finish();
      signal.addEventListener('abort', onAbort, { once: true });

      const consumer = kafka.consumer({
        groupId,
        sessionTimeout: timings.sessionTimeoutMs,
        heartbeatInterval: timings.heartbeatIntervalMs,
        maxWaitTimeInMs: timings.maxWaitTimeMs,
        allowAutoTopicCreation: false,
        // A failure ends this consumption and goes to the engine, which counts it and starts
        // again from the checkpoint after a backoff: not a restart hidden inside kafkajs.
        retry: { retries, initialRetryTime: 200, maxRetryTime: 5_000, restartOnFailure: async () => false },
      });
      consumer.on(consumer.events.CRASH, (event) => finish(classifyError(event.payload.error, 'source')));
      // Each time partitions are assigned (the first join, a rebalance), reading starts at the
      // checkpoint, wherever the group's offsets are: behind it after a crash between the two
      // commits, ahead of it when the checkpoint was moved back. kafkajs applies a seek at the
      // next fetch, and this runs before it.
      consumer.on(consumer.events.GROUP_JOIN, (event) => {
        for (const [topic, partitions] of Object.entries(event.payload.memberAssignment)) {
          for (const partition of partitions) {
            const offset = position[topic]?.[String(partition)];
            if (offset !== undefined) consumer.seek({ topic, partition, offset });
          }
        }
      });
      // Connecting and joining can take long (kafkajs retries a broker that does not answer, a
      // join waits for the group): an abort ends the consumption without waiting for them.
      const setup = (async () => {
        await consumer.connect();
        if (done) return;
        await consumer.subscribe({ topics, fromBeginning: config.from_beginning ?? false });
        if (done) return;
        await consumer.run({
          autoCommit: false,
          eachBatchAutoResolve: false,
          partitionsConsumedConcurrently: 1,
          eachBatch: (payload) => (running = takeBatch(payload)),
        });
      })().catch((error: unknown) => finish(classifyError(error, 'source')));
      let setUp = false;
      void setup.then(() => (setUp = true));
      const outcome = await finished;
      signal.removeEventListener('abort', onAbort);
      await running.catch(() => undefined);
      // A disconnect waits for a connect in progress; a setup still under way (kafkajs retrying
      // a broker that does not answer) disconnects once it ends, in the background.
      if (setUp) await consumer.disconnect().catch(() => undefined);
      else void setup.then(() => consumer.disconnect().catch(() => undefined));
      if (outcome !== undefined) throw outcome;

      async function takeBatch({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload): Promise<void> {
        const { topic, partition } = batch;
        const expected = position[topic]?.[String(partition)];
        let messages = batch.messages;
        if (done || messages.length === 0) return;
        if (expected !== undefined && BigInt(batch.highWatermark) < BigInt(expected)) {
          // The partition ends before the checkpoint: the topic was recreated or truncated, and
          // kafkajs reset the group to one end of the log. Skipping to the old checkpoint would
          // drop every new message below it, silently.
          finish(
            new ConnectorError(
              'checkpoint_beyond_log',
              `Partition ${topic}/${partition} ends at offset ${batch.highWatermark}, before the checkpoint's ${expected}: the topic was recreated or truncated. Move the pipeline's checkpoint back to read it.`,
              { retryable: false },
            ),
          );
          return;
        }
        if (expected !== undefined) {
          // Fetched before the seek took (or again after a rebalance): committed already, skipped.
          const skipped = messages.filter((m) => BigInt(m.offset) < BigInt(expected));
          if (skipped.length > 0) resolveOffset(skipped[skipped.length - 1]!.offset);
          messages = messages.slice(skipped.length);
        }
        // A slice is handed over while the one before it commits (the engine writes it
        // meanwhile), two at most; each one's offsets move once its handler resolved.
        const handed: { done: Promise<void>; next: KafkaPosition; last: string; nextOffset: string }[] = [];
        /** Waits for the oldest slice handed over; false (and the consumption ended) when it failed. */
        const settleOldest = async (): Promise<boolean> => {
          const oldest = handed.shift()!;
          try {
            await oldest.done;
          } catch (error) {
            finish(error);
            return false;
          }
          position = oldest.next;
          resolveOffset(oldest.last);
          // The group's offsets follow the committed checkpoint, for the tools that watch a
          // group's lag. Losing this commit loses nothing: a restart reads the checkpoint.
          await consumer.commitOffsets([{ topic, partition, offset: oldest.nextOffset }]).catch((error: unknown) => {
            logger.debug({ topic, partition, code: classifyError(error, 'source').code }, 'kafka: committing the group offset failed; the checkpoint holds');
          });
          if (!done) await heartbeat().catch(() => undefined);
          return true;
        };
        let ahead = position;
        try {
          for (let at = 0; at < messages.length; at += batchSize) {
            if (done || !isRunning() || isStale()) return;
            const slice = messages.slice(at, at + batchSize);
            const last = slice[slice.length - 1]!.offset;
            const nextOffset = (BigInt(last) + 1n).toString();
            const next: KafkaPosition = { ...ahead, [topic]: { ...ahead[topic], [String(partition)]: nextOffset } };
            ahead = next;
            const call = handler({ records: slice.map((m) => toRecord(topic, partition, m, typeOf)), checkpoint: next });
            // Awaited by settleOldest; never left unhandled meanwhile.
            call.catch(() => undefined);
            handed.push({ done: call, next, last, nextOffset });
            while (handed.length >= 2) if (!(await settleOldest())) return;
          }
        } finally {
          // Whatever was handed over settles before the next fetch (or the end): the position
          // of every later checkpoint starts from what committed.
          while (handed.length > 0) if (!(await settleOldest())) await Promise.allSettled(handed.splice(0).map((h) => h.done));
        }
      }
    },
  };
}

/** True for a checkpoint this source wrote. */
function isPosition(value: Checkpoint | null): value is KafkaPosition {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  return Object.values(value).every((partitions) => partitions !== null && typeof partitions === 'object' && !Array.isArray(partitions) && Object.values(partitions).every((o) => typeof o === 'string' && /^[0-9]+$/.test(o)));
}

/** How a message's event type is found, by the config: a header, a path in the value, the constant. */
function recordType(config: KafkaConfig): (headers: KafkaMessage['headers'], value: JsonObject | undefined) => string {
  const fallback = config.type ?? DEFAULT_SOURCE_TYPE;
  return (headers, value) => {
    if (config.type_header !== undefined) {
      const header = headerText(headers, config.type_header);
      if (header) return header;
    }
    if (config.type_path !== undefined && value !== undefined) {
      const found = getPath(value, config.type_path);
      if (typeof found === 'string' && found.length > 0) return found;
    }
    return fallback;
  };
}

/** A header's value as text (its first, when repeated). */
function headerText(headers: KafkaMessage['headers'], name: string): string | undefined {
  const raw = headers?.[name];
  const one = Array.isArray(raw) ? raw[0] : raw;
  if (one === undefined) return undefined;
  return Buffer.isBuffer(one) ? one.toString('utf8') : String(one);
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The latest time a Date holds, in milliseconds since the epoch. */
const MAX_DATE_MS = 8.64e15;

/**
 * One message as a record. A message with a `ferry-id` header is a Ferry event: its value's
 * `type`, `occurred_at` and `payload` are taken as they are, so a chain through a topic does not
 * nest, and its position is `ferry-id/<id>`, so a message produced twice is one event. Any other JSON object is the payload; another JSON value, text
 * or bytes is wrapped as `{ value }` (bytes that are not UTF-8 as `{ value_base64 }`), a
 * tombstone as `{ value: null }`. The position is `topic/partition/offset`.
 */
export function toRecord(topic: string, partition: number, message: KafkaMessage, typeOf: (headers: KafkaMessage['headers'], value: JsonObject | undefined) => string): SourceRecord {
  const position = `${topic}/${partition}/${message.offset}`;
  const ms = Number(message.timestamp);
  // A timestamp outside what a Date holds (nanoseconds written as CreateTime) is no timestamp:
  // the engine then uses the read time, rather than failing on the message forever.
  const timestamp = Number.isFinite(ms) && ms > 0 && ms <= MAX_DATE_MS ? new Date(ms).toISOString() : undefined;
  const parsed = parseValue(message.value);
  const object = isObject(parsed) ? parsed : undefined;
  const ferryId = headerText(message.headers, ID_HEADER);
  if (object && ferryId !== undefined && isObject(object.payload)) {
    return {
      // The Ferry event's own id is its position, not where it sits in the topic: a message
      // produced twice (a retried batch upstream) yields the same event id here, one event.
      position: `${ID_HEADER}/${ferryId}`,
      type: typeof object.type === 'string' && object.type.length > 0 ? object.type : typeOf(message.headers, object.payload),
      occurredAt: typeof object.occurred_at === 'string' ? object.occurred_at : timestamp,
      payload: object.payload,
    };
  }
  let payload: JsonObject;
  if (object) payload = object;
  else if (parsed !== undefined) payload = { value: parsed };
  else if (message.value === null) payload = { value: null };
  else {
    try {
      payload = { value: utf8.decode(message.value) };
    } catch {
      payload = { value_base64: message.value.toString('base64') };
    }
  }
  return { position, type: typeOf(message.headers, object), occurredAt: timestamp, payload };
}

/** The message value as JSON (numbers exact), or undefined when it is not JSON (or absent). */
function parseValue(value: Buffer | null): JsonValue | undefined {
  if (value === null || value.length === 0) return undefined;
  try {
    return parseExactJson(value.toString('utf8'));
  } catch {
    return undefined;
  }
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

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
 * The kafka source: a consumer in the group `group_id` (default `ferry-<pipeline id>`) hands what
 * it fetched over in batches of up to `batch_size` messages, one message one event. A batch takes
 * messages across partitions and fetches: a fetch holds one record batch per partition (often a
 * few dozen messages), and a batch costs the engine a transaction and a round trip to its writer
 * whatever its size, so a call per record batch would spend most of the engine's time on those.
 * The next batch is handed over while the engine commits the last one (two at most), and kafkajs
 * fetches meanwhile, into a buffer of less than a batch. A batch's offsets are committed to Kafka
 * once the engine committed its checkpoint. The checkpoint decides where reading resumes, not the group's offsets: these
 * trail it (a crash between the two commits), and a partition whose fetch starts elsewhere is
 * brought back to it (skipping what was committed, or seeking back to a checkpoint that was moved
 * back), so a crash re-reads and never skips.
 */
export function kafkaSource(kafka: Kafka, config: KafkaConfig, groupId: string, timings: ConsumerTimings, logger: Logger, retries = 5): PushSource {
  const topics = config.topics!;
  const batchSize = config.batch_size ?? DEFAULT_SOURCE_BATCH_SIZE;
  const typeOf = recordType(config);

  return {
    async consume(from: Checkpoint | null, handler: (batch: SourceBatch) => Promise<void>, signal: AbortSignal): Promise<void> {
      /** What the engine committed: the checkpoint of the last batch whose handler resolved. */
      let position: KafkaPosition = isPosition(from) ? structuredClone(from) : {};
      /** Where each partition's next batch starts: after every message taken from kafkajs (handed over or buffered). */
      const taken: KafkaPosition = structuredClone(position);
      /** The position after every batch handed over: the next batch's checkpoint starts from it. */
      let ahead: KafkaPosition = position;
      /** Messages taken and not handed over yet, partition batch after partition batch. */
      const buffer: { topic: string; partition: number; messages: KafkaMessage[] }[] = [];
      let buffered = 0;
      /** Batches handed over whose handler has not resolved yet, oldest first (two at most). */
      const handed: { checkpoint: KafkaPosition; call: Promise<void>; committed: boolean }[] = [];
      /** The group's offsets as last committed (or known): only those that moved are sent. */
      const groupOffsets: KafkaPosition = {};
      /** The group offset commit under way, if any; a request for another while it runs is `commitAgain`. */
      let committing: Promise<void> | undefined;
      let commitAgain = false;
      /** Wakes a fetch waiting for room in the buffer (a batch committed, or the end). */
      let wake: (() => void) | undefined;
      let partialSoon = false;

      let settle!: (error?: unknown) => void;
      const finished = new Promise<unknown>((resolve) => (settle = (error?: unknown) => resolve(error)));
      let done = false;
      const finish = (error?: unknown) => {
        if (done) return;
        done = true;
        settle(error);
        wake?.();
      };
      if (signal.aborted) return;
      const onAbort = () => finish();
      signal.addEventListener('abort', onAbort, { once: true });

      /** Hands `count` buffered messages over as one batch, its checkpoint after them. */
      const handOver = (count: number) => {
        const records: SourceRecord[] = [];
        const checkpoint: KafkaPosition = { ...ahead };
        const copied = new Set<string>();
        while (records.length < count) {
          const chunk = buffer[0]!;
          const take = Math.min(count - records.length, chunk.messages.length);
          const messages = take === chunk.messages.length ? chunk.messages : chunk.messages.slice(0, take);
          if (take === chunk.messages.length) buffer.shift();
          else chunk.messages = chunk.messages.slice(take);
          for (const message of messages) records.push(toRecord(chunk.topic, chunk.partition, message, typeOf));
          if (!copied.has(chunk.topic)) {
            copied.add(chunk.topic);
            checkpoint[chunk.topic] = { ...checkpoint[chunk.topic] };
          }
          checkpoint[chunk.topic]![String(chunk.partition)] = (BigInt(messages[messages.length - 1]!.offset) + 1n).toString();
        }
        buffered -= count;
        ahead = checkpoint;
        const entry = { checkpoint, call: handler({ records, checkpoint }), committed: false };
        handed.push(entry);
        entry.call.then(
          () => {
            entry.committed = true;
            // The engine resolves its calls in order; the position moves over those that committed.
            while (handed[0]?.committed) position = handed.shift()!.checkpoint;
            commitGroup();
            if (!done) pump();
            wake?.();
          },
          (error: unknown) => finish(error),
        );
      };

      /**
       * Hands over whatever can go: a full batch while fewer than two are outstanding, and what the
       * buffer holds when none is (the engine is idle: the messages wait no longer), once the
       * partition batches of the fetch at hand have all been taken (on the next turn of the loop).
       */
      const pump = () => {
        while (!done && handed.length < 2 && buffered >= batchSize) handOver(batchSize);
        if (!done && handed.length === 0 && buffered > 0 && !partialSoon) {
          partialSoon = true;
          setImmediate(() => {
            partialSoon = false;
            if (!done && handed.length === 0 && buffered > 0) handOver(Math.min(buffered, batchSize));
          });
        }
      };

      /**
       * Commits the group's offsets up to the committed checkpoint, for the tools that watch a
       * group's lag: one request at a time, the latest position each time, never waited for by
       * the batches (losing one loses nothing: a restart reads the checkpoint).
       */
      const commitGroup = () => {
        if (committing) {
          commitAgain = true;
          return;
        }
        committing = (async () => {
          do {
            commitAgain = false;
            const offsets: { topic: string; partition: number; offset: string }[] = [];
            for (const [topic, partitions] of Object.entries(position)) {
              for (const [partition, offset] of Object.entries(partitions)) {
                if (groupOffsets[topic]?.[partition] !== offset) offsets.push({ topic, partition: Number(partition), offset });
              }
            }
            if (offsets.length === 0) continue;
            try {
              await consumer.commitOffsets(offsets);
              for (const { topic, partition, offset } of offsets) (groupOffsets[topic] ??= {})[String(partition)] = offset;
            } catch (error) {
              logger.debug({ code: classifyError(error, 'source').code }, 'kafka: committing the group offsets failed; the checkpoint holds');
            }
          } while (commitAgain);
        })().finally(() => (committing = undefined));
      };

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
      // Each time partitions are assigned (the first join, a rebalance), reading goes on after
      // what this consumption took, wherever the group's offsets are: at the checkpoint on the
      // first join (behind the group after a crash between the two commits, ahead of it when the
      // checkpoint was moved back), after the messages handed over or buffered on a rebalance
      // (they are handed over, or the consumption fails and starts again from the checkpoint).
      // kafkajs applies a seek at the next fetch, and this runs before it.
      consumer.on(consumer.events.GROUP_JOIN, (event) => {
        for (const [topic, partitions] of Object.entries(event.payload.memberAssignment)) {
          for (const partition of partitions) {
            const offset = taken[topic]?.[String(partition)];
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
          eachBatch: takeBatch,
        });
      })().catch((error: unknown) => finish(classifyError(error, 'source')));
      let setUp = false;
      void setup.then(() => (setUp = true));
      const outcome = await finished;
      signal.removeEventListener('abort', onAbort);
      // What was handed over settles (the engine commits it, or fails it), and the group's offsets
      // follow what committed, before the consumer leaves.
      await Promise.allSettled(handed.map((h) => h.call));
      while (committing) await committing;
      // A disconnect waits for a connect in progress; a setup still under way (kafkajs retrying
      // a broker that does not answer) disconnects once it ends, in the background.
      if (setUp) await consumer.disconnect().catch(() => undefined);
      else void setup.then(() => consumer.disconnect().catch(() => undefined));
      if (outcome !== undefined) throw outcome;

      async function takeBatch({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload): Promise<void> {
        const { topic, partition } = batch;
        if (done || !isRunning() || isStale() || batch.messages.length === 0) return;
        const expected = taken[topic]?.[String(partition)];
        let messages = batch.messages;
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
          // Fetched before the seek took (or again after a rebalance): taken already, skipped.
          const from = BigInt(expected);
          let skip = 0;
          while (skip < messages.length && BigInt(messages[skip]!.offset) < from) skip++;
          if (skip > 0) {
            resolveOffset(messages[skip - 1]!.offset);
            messages = messages.slice(skip);
          }
        }
        if (messages.length === 0) return;
        const last = messages[messages.length - 1]!.offset;
        // The next fetch of this partition starts after these messages: they are this
        // consumption's now (handed over, or dropped with it when it fails). The group's offset
        // moves only once the engine committed them.
        resolveOffset(last);
        (taken[topic] ??= {})[String(partition)] = (BigInt(last) + 1n).toString();
        buffer.push({ topic, partition, messages });
        buffered += messages.length;
        pump();
        // Backpressure: with two batches outstanding and a full one buffered, fetching waits for a
        // commit, beating the group's heart meanwhile (kafkajs beats only between batches).
        while (!done && buffered >= batchSize) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, timings.heartbeatIntervalMs);
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          wake = undefined;
          if (!done) await heartbeat().catch(() => undefined);
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
  const parsed = parseValue(message.value);
  const object = isObject(parsed) ? parsed : undefined;
  const ferryId = object ? headerText(message.headers, ID_HEADER) : undefined;
  if (object && ferryId !== undefined && isObject(object.payload)) {
    return {
      // The Ferry event's own id is its position, not where it sits in the topic: a message
      // produced twice (a retried batch upstream) yields the same event id here, one event.
      position: `${ID_HEADER}/${ferryId}`,
      type: typeof object.type === 'string' && object.type.length > 0 ? object.type : typeOf(message.headers, object.payload),
      occurredAt: typeof object.occurred_at === 'string' ? object.occurred_at : timestampOf(message),
      payload: object.payload,
    };
  }
  const position = `${topic}/${partition}/${message.offset}`;
  const timestamp = timestampOf(message);
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

/** The message's timestamp as an ISO time, or undefined when it has none a Date holds. */
function timestampOf(message: KafkaMessage): string | undefined {
  const ms = Number(message.timestamp);
  // A timestamp outside what a Date holds (nanoseconds written as CreateTime) is no timestamp:
  // the engine then uses the read time, rather than failing on the message forever.
  return Number.isFinite(ms) && ms > 0 && ms <= MAX_DATE_MS ? new Date(ms).toISOString() : undefined;
}

/** The message value as JSON (numbers exact), or undefined when it is not JSON (or absent). */
function parseValue(value: Buffer | null): JsonValue | undefined {
  if (value === null || value.length === 0) return undefined;
  const text = value.toString('utf8');
  try {
    return parseExactJson(text);
  } catch {
    return undefined;
  }
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

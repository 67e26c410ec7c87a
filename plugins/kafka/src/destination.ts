import { ConnectorError, getPath, type Destination, type DestinationEvent, type JsonValue, type WriteResult } from '@ferry/core';
import type { CompressionTypes, Kafka, Message, Producer } from 'kafkajs';
import { classifyError } from './client.js';
import { DEFAULT_MAX_MESSAGE_BYTES, type KafkaConfig } from './config.js';

/** Headers every produced message carries: a Ferry source reading the topic takes the event as it is. */
export const ID_HEADER = 'ferry-id';
/** See {@link ID_HEADER}. */
export const TYPE_HEADER = 'ferry-type';

/**
 * The kafka destination: each batch is one produce request to `topic` (kafkajs splits it by
 * partition leader; a batch over `max_message_bytes` is split into several), each event one message `{ id, type, occurred_at, payload }` with the
 * `ferry-id` and `ferry-type` headers, keyed by the event id or a payload field so that a key's
 * events stay in order on one partition, its timestamp the event's `occurred_at`.
 *
 * Kafka cannot drop a message sent twice: a batch re-delivered after a crash is produced again
 * (at least once). Consumers dedupe by the `ferry-id` header; a Ferry source reading the topic
 * gets the same event id back only through its own positions, so it does not.
 */
export function kafkaDestination(kafka: Kafka, config: KafkaConfig, compressionTypes: typeof CompressionTypes): Destination {
  const topic = config.topic!;
  const maxBytes = config.max_message_bytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  const keyPath = config.key && config.key !== 'event_id' ? config.key.slice('payload.'.length) : undefined;
  const compression = config.compression === 'gzip' ? compressionTypes.GZIP : compressionTypes.None;
  const acks = config.acks ?? -1;
  // The mock brokers of the tests and many managed clusters refuse topic creation by clients:
  // a missing topic is an error the user sees, not a topic made with the broker's defaults.
  const producer: Producer = kafka.producer({ allowAutoTopicCreation: false });
  let connecting: Promise<void> | undefined;
  const connect = () =>
    (connecting ??= producer.connect().catch((error: unknown) => {
      connecting = undefined;
      throw classifyError(error, 'destination');
    }));

  const send = (messages: Message[]) => producer.send({ topic, messages, acks, compression, timeout: config.request_timeout_ms ?? 30_000 });

  return {
    async write(events: readonly DestinationEvent[], signal: AbortSignal): Promise<WriteResult[]> {
      const results: WriteResult[] = new Array(events.length);
      const messages: Message[] = [];
      const indexes: number[] = [];
      const sizes: number[] = [];
      for (let i = 0; i < events.length; i++) {
        const event = events[i]!;
        const key = keyPath === undefined ? event.id : keyText(getPath(event.payload, keyPath));
        if (key === undefined) {
          results[i] = refused('key_missing', `The payload has no value at ${keyPath ?? ''} to key the message with.`);
          continue;
        }
        const value = JSON.stringify({ id: event.id, type: event.type, occurred_at: event.occurredAt, payload: event.payload });
        const size = Buffer.byteLength(value) + Buffer.byteLength(key) + ID_HEADER.length + TYPE_HEADER.length + Buffer.byteLength(event.id) + Buffer.byteLength(event.type);
        if (size > maxBytes) {
          results[i] = refused('record_too_large', `The message is ${size} bytes; max_message_bytes is ${maxBytes}.`);
          continue;
        }
        const ms = Date.parse(event.occurredAt);
        messages.push({ key, value, headers: { [ID_HEADER]: event.id, [TYPE_HEADER]: event.type }, ...(Number.isFinite(ms) ? { timestamp: String(ms) } : {}) });
        indexes.push(i);
        sizes.push(size);
      }
      if (messages.length === 0) return results;
      await abortable(connect(), signal);
      for (const group of requests(sizes, maxBytes)) {
        if (signal.aborted) throw new ConnectorError('aborted', 'The write was cancelled.', { retryable: true });
        try {
          await abortable(send(group.map((j) => messages[j]!)), signal);
          for (const j of group) results[indexes[j]!] = { ok: true };
          continue;
        } catch (error) {
          const classified = classifyError(error, 'destination');
          if (classified.code !== 'record_rejected') throw classified;
        }
        // The broker refused a record of the request: one at a time, so that only the refused
        // ones fail. Messages a partition leader had already taken are sent again here, as any
        // retry of a produce request may (at least once).
        for (const j of group) {
          if (signal.aborted) throw new ConnectorError('aborted', 'The write was cancelled.', { retryable: true });
          try {
            await abortable(send([messages[j]!]), signal);
            results[indexes[j]!] = { ok: true };
          } catch (error) {
            const classified = classifyError(error, 'destination');
            if (classified.code !== 'record_rejected') throw classified;
            results[indexes[j]!] = { ok: false, error: classified };
          }
        }
      }
      return results;
    },

    async close() {
      await producer.disconnect();
    },
  };
}

/** What a record adds to a record batch beyond its key, value and headers (varints, attributes, deltas): a generous bound. */
const RECORD_OVERHEAD_BYTES = 70;
/** A record batch's own header. */
const BATCH_OVERHEAD_BYTES = 100;

/**
 * Splits a batch's messages (by their sizes) into produce requests of at most `maxBytes`: the
 * broker's `message.max.bytes` limits a partition's whole record batch, not one message, and
 * kafkajs puts all of a request's messages for a partition into one record batch. Without the
 * split a batch of ordinary events over 1 MiB would be refused and go one message at a time.
 */
export function requests(sizes: readonly number[], maxBytes: number): number[][] {
  const out: number[][] = [];
  let current: number[] = [];
  let bytes = BATCH_OVERHEAD_BYTES;
  for (let j = 0; j < sizes.length; j++) {
    const size = sizes[j]! + RECORD_OVERHEAD_BYTES;
    if (current.length > 0 && bytes + size > maxBytes) {
      out.push(current);
      current = [];
      bytes = BATCH_OVERHEAD_BYTES;
    }
    current.push(j);
    bytes += size;
  }
  if (current.length > 0) out.push(current);
  return out;
}

/**
 * `work`, unless `signal` aborts first: then a retryable `aborted` at once. kafkajs goes on with
 * its own retries (a reconnect inside a send can take minutes); what it still delivers is a
 * copy the engine's at-least-once already allows for.
 */
function abortable<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.reject(new ConnectorError('aborted', 'The write was cancelled.', { retryable: true }));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new ConnectorError('aborted', 'The write was cancelled.', { retryable: true }));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** A record this destination will never send as it is. */
function refused(code: string, message: string): WriteResult {
  return { ok: false, error: new ConnectorError(code, message, { retryable: false }) };
}

/** A payload value as a message key: text as it is, numbers and booleans as text, objects as JSON; nothing for a missing value or null. */
function keyText(value: JsonValue | undefined): string | undefined {
  if (value === undefined || value === null) return undefined;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

import { ConnectorError, getPath, type Destination, type DestinationEvent, type JsonValue, type WriteResult } from '@ferry/core';
import { CompressionTypes, type Kafka, type Message, type Producer } from 'kafkajs';
import { classifyError } from './client.js';
import { DEFAULT_MAX_MESSAGE_BYTES, type KafkaConfig } from './config.js';

/** Headers every produced message carries: a Ferry source reading the topic takes the event as it is. */
export const ID_HEADER = 'ferry-id';
/** See {@link ID_HEADER}. */
export const TYPE_HEADER = 'ferry-type';

/**
 * The kafka destination: each batch is one produce request to `topic` (kafkajs splits it by
 * partition leader), each event one message `{ id, type, occurred_at, payload }` with the
 * `ferry-id` and `ferry-type` headers, keyed by the event id or a payload field so that a key's
 * events stay in order on one partition, its timestamp the event's `occurred_at`.
 *
 * Kafka cannot drop a message sent twice: a batch re-delivered after a crash is produced again
 * (at least once). Consumers dedupe by the `ferry-id` header; a Ferry source reading the topic
 * gets the same event id back only through its own positions, so it does not.
 */
export function kafkaDestination(kafka: Kafka, config: KafkaConfig): Destination {
  const topic = config.topic!;
  const maxBytes = config.max_message_bytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  const keyPath = config.key && config.key !== 'event_id' ? config.key.slice('payload.'.length) : undefined;
  const compression = config.compression === 'gzip' ? CompressionTypes.GZIP : CompressionTypes.None;
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
      for (let i = 0; i < events.length; i++) {
        const event = events[i]!;
        const key = keyPath === undefined ? event.id : keyText(getPath(event.payload, keyPath));
        if (key === undefined) {
          results[i] = refused('key_missing', `The payload has no value at ${keyPath ?? ''} to key the message with.`);
          continue;
        }
        const value = JSON.stringify({ id: event.id, type: event.type, occurred_at: event.occurredAt, payload: event.payload });
        const size = Buffer.byteLength(value) + Buffer.byteLength(key) + ID_HEADER.length + TYPE_HEADER.length + event.id.length + event.type.length;
        if (size > maxBytes) {
          results[i] = refused('record_too_large', `The message is ${size} bytes; max_message_bytes is ${maxBytes}.`);
          continue;
        }
        const ms = Date.parse(event.occurredAt);
        messages.push({ key, value, headers: { [ID_HEADER]: event.id, [TYPE_HEADER]: event.type }, ...(Number.isFinite(ms) ? { timestamp: String(ms) } : {}) });
        indexes.push(i);
      }
      if (messages.length === 0) return results;
      await connect();
      if (signal.aborted) throw new ConnectorError('aborted', 'The write was cancelled before it was sent.', { retryable: true });
      try {
        await send(messages);
        for (const i of indexes) results[i] = { ok: true };
        return results;
      } catch (error) {
        const classified = classifyError(error, 'destination');
        if (classified.code !== 'record_rejected') throw classified;
      }
      // The broker refused a record of the batch: one at a time, so that only the refused ones
      // fail. Messages of the batch that a partition leader had already taken are sent again
      // here, as any retry of a produce request may (at least once).
      for (let j = 0; j < messages.length; j++) {
        if (signal.aborted) throw new ConnectorError('aborted', 'The write was cancelled.', { retryable: true });
        try {
          await send([messages[j]!]);
          results[indexes[j]!] = { ok: true };
        } catch (error) {
          const classified = classifyError(error, 'destination');
          if (classified.code !== 'record_rejected') throw classified;
          results[indexes[j]!] = { ok: false, error: classified };
        }
      }
      return results;
    },

    async close() {
      await producer.disconnect();
    },
  };
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

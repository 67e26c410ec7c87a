import { promisify } from 'node:util';
import { gzip as gzipCallback } from 'node:zlib';
import type { S3Client } from '@aws-sdk/client-s3';
import { ConnectorError, type Destination, type DestinationEvent, type WriteResult } from '@ferry/core';
import { classifyError } from './client.js';
import { awsSdk } from './sdk.js';
import { DEFAULT_MAX_BATCH_BYTES, MIN_PART_BYTES, type S3Config } from './config.js';

const gzip = promisify(gzipCallback);

/** One object a batch becomes: its key, and the events (by index in the batch) in it. */
export interface PlannedObject {
  readonly key: string;
  readonly indexes: readonly number[];
  readonly lines: readonly string[];
}

/**
 * Splits a batch into objects of at most `max_batch_bytes` of lines each, in order, and names
 * each one deterministically: `<prefix><yyyy>/<mm>/<dd>/<pipeline>-<first id>-<last id>.jsonl`
 * (`.json` for the json format, `.gz` added when compressed), the date being its first event's
 * `occurred_at` (UTC). The same batch delivered again gets the same keys, so it overwrites what it
 * wrote before instead of adding to it. An event whose line alone is over the limit is refused.
 */
export function planObjects(
  events: readonly DestinationEvent[],
  config: S3Config,
  pipelineId: string,
): { objects: PlannedObject[]; refused: Map<number, ConnectorError> } {
  const max = config.max_batch_bytes ?? DEFAULT_MAX_BATCH_BYTES;
  const objects: PlannedObject[] = [];
  const refused = new Map<number, ConnectorError>();
  let indexes: number[] = [];
  let lines: string[] = [];
  let bytes = 0;
  const close = () => {
    if (indexes.length === 0) return;
    objects.push({ key: objectKey(config, pipelineId, events[indexes[0]!]!, events[indexes.at(-1)!]!), indexes, lines });
    indexes = [];
    lines = [];
    bytes = 0;
  };
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    const line = JSON.stringify({ id: e.id, type: e.type, occurred_at: e.occurredAt, payload: e.payload });
    const size = Buffer.byteLength(line) + 1;
    if (size > max) {
      refused.set(i, new ConnectorError('record_too_large', `The event is ${size} bytes as a line, over max_batch_bytes (${max}).`, { retryable: false }));
      continue;
    }
    if (bytes + size > max) close();
    indexes.push(i);
    lines.push(line);
    bytes += size;
  }
  close();
  return { objects, refused };
}

/** The key of an object holding events `first` to `last` of a pipeline's batch. */
export function objectKey(config: S3Config, pipelineId: string, first: DestinationEvent, last: DestinationEvent): string {
  const when = new Date(first.occurredAt);
  const day = Number.isNaN(when.getTime()) ? 'undated' : `${when.getUTCFullYear()}/${pad(when.getUTCMonth() + 1)}/${pad(when.getUTCDate())}`;
  const extension = (config.format === 'json' ? '.json' : '.jsonl') + (config.compression === 'gzip' ? '.gz' : '');
  return `${config.prefix ?? ''}${day}/${pipelineId}-${first.id}-${last.id}${extension}`;
}

const pad = (n: number) => String(n).padStart(2, '0');

/** The bytes of an object: JSON Lines, or one JSON array, gzipped when asked. */
async function objectBody(config: S3Config, lines: readonly string[]): Promise<Buffer> {
  const text = config.format === 'json' ? `[${lines.join(',\n')}]\n` : `${lines.join('\n')}\n`;
  const raw = Buffer.from(text);
  return config.compression === 'gzip' ? gzip(raw) : raw;
}

/**
 * A destination writing each batch as one or more objects (see {@link planObjects}). Objects
 * over 5 MiB go up in parts (multipart upload); an object is written whole or not at all, and a
 * batch whose object fails is failed whole, to be delivered again to the same keys.
 */
export function s3Destination(client: S3Client, config: S3Config, pipelineId: string): Destination {
  const contentType = config.compression === 'gzip' ? 'application/gzip' : config.format === 'json' ? 'application/json' : 'application/x-ndjson';
  return {
    async write(events, signal) {
      const results: WriteResult[] = events.map(() => ({ ok: true }));
      const { objects, refused } = planObjects(events, config, pipelineId);
      const { Upload } = await awsSdk();
      for (const [index, error] of refused) results[index] = { ok: false, error };
      for (const object of objects) {
        if (signal.aborted) throw new ConnectorError('aborted', 'The write was cancelled.', { retryable: true });
        const body = await objectBody(config, object.lines);
        try {
          const upload = new Upload({
            client,
            params: { Bucket: config.bucket, Key: object.key, Body: body, ContentType: contentType },
            partSize: MIN_PART_BYTES,
            queueSize: 2,
            leavePartsOnError: false,
          });
          const abort = () => void upload.abort().catch(() => undefined);
          signal.addEventListener('abort', abort, { once: true });
          try {
            await upload.done();
          } finally {
            signal.removeEventListener('abort', abort);
          }
        } catch (error) {
          throw classifyError(error, 'destination');
        }
      }
      return results;
    },
    close: async () => client.destroy(),
  };
}

import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { S3Client } from '@aws-sdk/client-s3';
import { ConnectorError, parseExactJson, type Checkpoint, type JsonObject, type JsonValue, type PullSource, type SourceRecord } from '@ferry/core';
import { classifyError } from './client.js';
import { awsSdk } from './sdk.js';
import type { S3Config } from './config.js';

/** The event type of a line that carries none, when the config sets no `type`. */
export const DEFAULT_SOURCE_TYPE = 's3.record';
/** Most objects one read goes through (many small objects still make batches of `max`). */
const MAX_OBJECTS_PER_READ = 100;
/** Largest JSON-array object read (it is parsed whole); JSON Lines objects stream, of any size. */
const MAX_JSON_ARRAY_BYTES = 64 * 1024 * 1024;

/**
 * Where a source is: in object `key`, after `line` lines (and `offset` bytes, for an uncompressed
 * JSON Lines object, which is then read on from there with a range request); `done` once the
 * object is read to its end.
 */
export interface S3Position {
  key: string;
  line: number;
  offset: number;
  done: boolean;
}

/** The position a checkpoint holds, or null for "from the first object". */
export function parsePosition(checkpoint: Checkpoint | null): S3Position | null {
  if (checkpoint === null || checkpoint === undefined) return null;
  const c = checkpoint as Partial<S3Position>;
  if (typeof c !== 'object' || typeof c.key !== 'string' || !Number.isInteger(c.line) || c.line! < 0 || !Number.isInteger(c.offset) || c.offset! < 0 || typeof c.done !== 'boolean') {
    throw new ConnectorError('invalid_checkpoint', 'The checkpoint is not an s3 position.', { retryable: false });
  }
  return { key: c.key, line: c.line!, offset: c.offset!, done: c.done };
}

/**
 * A pull source over the objects under `prefix`, in key order (S3 lists keys in UTF-8 binary
 * order), each line of a JSON Lines object (or element of a JSON array object) one event. A read
 * goes on from the checkpoint's object and line, also in the middle of an object after a crash.
 * Objects must not change once written: a rewritten object already read is not read again.
 */
export function s3Source(client: S3Client, config: S3Config): PullSource {
  const prefix = config.prefix ?? '';
  return {
    async read(checkpoint, max, signal) {
      const start = parsePosition(checkpoint);
      const records: SourceRecord[] = [];
      let position: S3Position | null = start;
      let current: S3Position | null = start && !start.done ? start : null;
      let listed: string[] = [];
      let after = start?.key;
      try {
        for (let visited = 0; visited < MAX_OBJECTS_PER_READ && records.length < max; visited++) {
          if (signal.aborted) throw new ConnectorError('aborted', 'The read was cancelled.', { retryable: true });
          if (!current) {
            if (listed.length === 0) listed = await listAfter(client, config.bucket, prefix, after, signal);
            const key = listed.shift();
            if (key === undefined) break;
            current = { key, line: 0, offset: 0, done: false };
          }
          position = await readObject(client, config, current, max - records.length, records, signal);
          if (!position.done) break;
          after = position.key;
          current = null;
        }
      } catch (error) {
        throw classifyError(error, 'source');
      }
      return { records, checkpoint: position as unknown as Checkpoint };
    },
    close: async () => client.destroy(),
  };
}

/**
 * Keys listed per request. A read usually takes one or two objects, and it lists again from its
 * own position each time (a list kept from an earlier read could miss an object written since),
 * so a short page costs the store less than the 1,000 it could answer.
 */
const LIST_PAGE = 20;

/** The next keys after `after` under `prefix`, in order, leaving out "folder" keys. */
async function listAfter(client: S3Client, bucket: string, prefix: string, after: string | undefined, signal: AbortSignal): Promise<string[]> {
  const { ListObjectsV2Command } = await awsSdk();
  const answer = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ...(after !== undefined ? { StartAfter: after } : {}), MaxKeys: LIST_PAGE }), { abortSignal: signal });
  return (answer.Contents ?? []).map((o) => o.Key!).filter((key) => key !== undefined && !key.endsWith('/'));
}

/**
 * Reads up to `limit` records of one object from `from` into `out`; returns the position after
 * them (`done` when the object's end was reached).
 */
async function readObject(client: S3Client, config: S3Config, from: S3Position, limit: number, out: SourceRecord[], signal: AbortSignal): Promise<S3Position> {
  const gzipped = from.key.endsWith('.gz');
  const base = gzipped ? from.key.slice(0, -3) : from.key;
  const isArray = base.endsWith('.json') || (!base.endsWith('.jsonl') && !base.endsWith('.ndjson') && config.format === 'json');
  // Only an uncompressed JSON Lines object can be entered in the middle, by its byte offset.
  const ranged = !gzipped && !isArray && from.offset > 0;
  let answer;
  try {
    const { GetObjectCommand } = await awsSdk();
    answer = await client.send(new GetObjectCommand({ Bucket: config.bucket, Key: from.key, ...(ranged ? { Range: `bytes=${from.offset}-` } : {}) }), { abortSignal: signal });
  } catch (error) {
    // The last batch ended exactly at the object's end: nothing is left after the offset.
    const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
    if (ranged && (e.name === 'InvalidRange' || e.$metadata?.httpStatusCode === 416)) return { ...from, done: true };
    throw error;
  }
  const modified = answer.LastModified?.toISOString();
  const body = answer.Body as Readable;
  const stream: Readable = gzipped ? body.pipe(createGunzip()) : body;
  const record = (value: JsonValue | undefined, raw: string, line: number) => out.push(toRecord(value, raw, `${from.key}:${line}`, config, modified));
  try {
    if (isArray) {
      if ((answer.ContentLength ?? 0) > MAX_JSON_ARRAY_BYTES) {
        throw new ConnectorError('object_too_large', `${from.key} is a JSON array over ${MAX_JSON_ARRAY_BYTES} bytes; write JSON Lines instead.`, { retryable: false });
      }
      const text = await readAll(stream, MAX_JSON_ARRAY_BYTES);
      let items: JsonValue[];
      try {
        const parsed = parseExactJson(text);
        items = Array.isArray(parsed) ? parsed : [parsed];
      } catch {
        // Not JSON as a whole: one record holding the text (cut at 10,000 characters).
        record(undefined, text.slice(0, 10_000), 1);
        return { key: from.key, line: 1, offset: 0, done: true };
      }
      const end = Math.min(items.length, from.line + limit);
      for (let i = from.line; i < end; i++) record(items[i], '', i + 1);
      return { key: from.key, line: end, offset: 0, done: end >= items.length };
    }
    let line = from.line;
    let offset = from.offset;
    // An uncompressed object's size: a batch that ends at its last line then says `done`, so the
    // next read goes on to the next object instead of asking for the bytes past its end.
    const size = gzipped || answer.ContentLength === undefined ? undefined : (ranged ? from.offset : 0) + answer.ContentLength;
    let skip = ranged ? 0 : from.line; // a gzipped (or ranged-from-0) object is read from its start
    let taken = 0;
    let rest = Buffer.alloc(0);
    const take = (bytes: Buffer): boolean => {
      if (skip > 0) {
        skip--;
        return false;
      }
      line++;
      offset += bytes.length + 1;
      const text = bytes.toString('utf8').replace(/\r$/, '');
      if (text.trim() === '') return false;
      let value: JsonValue | undefined;
      try {
        value = parseExactJson(text);
      } catch {
        value = undefined;
      }
      record(value, text, line);
      taken++;
      return taken >= limit;
    };
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      let data = rest.length > 0 ? Buffer.concat([rest, chunk]) : chunk;
      let newline: number;
      while ((newline = data.indexOf(0x0a)) !== -1) {
        const full = take(data.subarray(0, newline));
        data = data.subarray(newline + 1);
        if (full) return { key: from.key, line, offset: gzipped ? 0 : offset, done: size !== undefined && offset >= size };
      }
      rest = Buffer.from(data);
    }
    // The last line of an object need not end with a newline: the object is complete.
    if (rest.length > 0) {
      take(rest);
      offset -= 1;
    }
    return { key: from.key, line, offset: gzipped ? 0 : offset, done: true };
  } finally {
    stream.destroy();
    body.destroy();
  }
}

async function readAll(stream: Readable, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new ConnectorError('object_too_large', `An object decompresses to more than ${limit} bytes.`, { retryable: false });
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * One line (or array element) as a record. An object with an object `payload` is an event as
 * Ferry writes them: its `type` and `occurred_at` are used. Any other object is the payload
 * itself; a value that is not an object is wrapped as `{ value }`, and a line that is not JSON
 * as `{ raw }`, so nothing in the object is lost. The type falls back to the config's `type`,
 * then `s3.record`; the time to the object's last-modified time, which stays the same on a re-read.
 */
function toRecord(value: JsonValue | undefined, raw: string, position: string, config: S3Config, modified: string | undefined): SourceRecord {
  const fallbackType = config.type ?? DEFAULT_SOURCE_TYPE;
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const object = value as JsonObject;
    const payload = object.payload;
    if (payload !== null && typeof payload === 'object' && !Array.isArray(payload)) {
      const type = typeof object.type === 'string' && object.type !== '' ? object.type : fallbackType;
      const when = typeof object.occurred_at === 'string' ? object.occurred_at : modified;
      return { position, type, payload: payload as JsonObject, ...(when !== undefined ? { occurredAt: when } : {}) };
    }
    return { position, type: fallbackType, payload: object, ...(modified !== undefined ? { occurredAt: modified } : {}) };
  }
  const payload: JsonObject = value === undefined ? { raw } : { value };
  return { position, type: fallbackType, payload, ...(modified !== undefined ? { occurredAt: modified } : {}) };
}

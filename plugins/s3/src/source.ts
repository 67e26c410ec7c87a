import { Readable } from 'node:stream';
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
 * Largest object fetched ahead (see {@link s3Source}): it is held whole in memory until the read
 * that takes it. A larger object is fetched, and streamed, by that read.
 */
const PREFETCH_MAX_BYTES = 8 * 1024 * 1024;

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
 *
 * When a read finishes an object and its listing names the next one, that object is fetched
 * ahead (one at a time, whole, at most {@link PREFETCH_MAX_BYTES}) while the engine handles the
 * batch: the next read then waits for its listing alone instead of its listing and then the
 * object (measured with bench/connectors/s3.bench.ts, one 1,000-line object a batch: the two
 * round trips in a row were most of a read). What a read yields does not change: it still lists
 * after its checkpoint and takes the object fetched ahead only when that listing's first key is
 * that object, with the same ETag (an object rewritten meanwhile is fetched again); anything
 * else (another checkpoint after a retry or a restart, a failed fetch) drops it and fetches anew.
 */
export function s3Source(client: S3Client, config: S3Config): PullSource {
  const prefix = config.prefix ?? '';
  let ahead: Ahead | undefined;
  // Keys the first listing of a read asks for: the objects the last read went through, and one
  // more to fetch ahead. A store's listing costs by the key (s3rver's, 40 % more for 20 keys
  // than for 2), and a read of one large object needs two keys, not twenty.
  let firstPage = LIST_PAGE;
  /** Fetches `object` ahead, in place of any object fetched ahead before. */
  const fetchAhead = (object: Listed, signal: AbortSignal) => {
    ahead?.controller.abort();
    const controller = new AbortController();
    ahead = { key: object.key, controller, body: prefetch(client, config.bucket, object.key, AbortSignal.any([signal, controller.signal])) };
  };
  /** The body of `object` fetched ahead, if it is that object's (same key and ETag) and arrived whole. */
  const takeAhead = async (object: Listed): Promise<Prefetched | undefined> => {
    const taken = ahead;
    ahead = undefined;
    if (!taken) return undefined;
    if (taken.key !== object.key) {
      taken.controller.abort();
      return undefined;
    }
    const body = await taken.body;
    return body && object.etag !== undefined && body.etag === object.etag ? body : undefined;
  };
  return {
    async read(checkpoint, max, signal) {
      const start = parsePosition(checkpoint);
      const records: SourceRecord[] = [];
      let position: S3Position | null = start;
      let current: S3Position | null = start && !start.done ? start : null;
      let listed: Listed[] = [];
      let after = start?.key;
      let lists = 0;
      let visited = 0;
      try {
        for (; visited < MAX_OBJECTS_PER_READ && records.length < max; visited++) {
          if (signal.aborted) throw new ConnectorError('aborted', 'The read was cancelled.', { retryable: true });
          let prefetched: Prefetched | undefined;
          if (!current) {
            if (listed.length === 0) listed = await listAfter(client, config.bucket, prefix, after, lists++ === 0 ? firstPage : LIST_PAGE, signal);
            const next = listed.shift();
            if (next === undefined) break;
            current = { key: next.key, line: 0, offset: 0, done: false };
            prefetched = await takeAhead(next);
          }
          position = await readObject(client, config, current, max - records.length, records, signal, prefetched);
          if (!position.done) break;
          after = position.key;
          current = null;
          // The read ends here and the listing names the next object: fetch it for the next read.
          const next = listed[0];
          if (next && (records.length >= max || visited + 1 >= MAX_OBJECTS_PER_READ) && next.size !== undefined && next.size <= PREFETCH_MAX_BYTES) fetchAhead(next, signal);
        }
      } catch (error) {
        throw classifyError(error, 'source');
      }
      firstPage = Math.min(LIST_PAGE, Math.max(2, visited + 1));
      return { records, checkpoint: position as unknown as Checkpoint };
    },
    close: async () => {
      ahead?.controller.abort();
      ahead = undefined;
      client.destroy();
    },
  };
}

/** A key as listed, with its ETag (which changes when the object is written again) and size. */
interface Listed {
  key: string;
  etag: string | undefined;
  size: number | undefined;
}

/** An object fetched ahead: its bytes, with what the read needs from the answer's headers. */
interface Prefetched {
  bytes: Buffer;
  etag: string | undefined;
  lastModified: Date | undefined;
}

/** The object being fetched ahead; its body is undefined when the fetch failed or was not kept. */
interface Ahead {
  key: string;
  controller: AbortController;
  body: Promise<Prefetched | undefined>;
}

/**
 * Fetches a whole object of at most {@link PREFETCH_MAX_BYTES}. Never rejects: a failure, an
 * abort or a larger object gives undefined, and the read that wanted it fetches it itself (and
 * reports any failure then).
 */
async function prefetch(client: S3Client, bucket: string, key: string, signal: AbortSignal): Promise<Prefetched | undefined> {
  let body: Readable | undefined;
  try {
    const { GetObjectCommand } = await awsSdk();
    const answer = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }), { abortSignal: signal });
    body = answer.Body as Readable;
    if (answer.ContentLength === undefined || answer.ContentLength > PREFETCH_MAX_BYTES) return undefined;
    const chunks: Buffer[] = [];
    for await (const chunk of body as AsyncIterable<Buffer>) chunks.push(chunk);
    return { bytes: Buffer.concat(chunks), etag: answer.ETag, lastModified: answer.LastModified };
  } catch {
    return undefined;
  } finally {
    body?.destroy();
  }
}

/**
 * Most keys listed per request. A read usually takes one or two objects, and it lists again from
 * its own position each time (a list kept from an earlier read could miss an object written
 * since), so a short page costs the store less than the 1,000 it could answer.
 */
const LIST_PAGE = 20;

/** The next keys (at most `page`) after `after` under `prefix`, in order, leaving out "folder" keys. */
async function listAfter(client: S3Client, bucket: string, prefix: string, after: string | undefined, page: number, signal: AbortSignal): Promise<Listed[]> {
  const { ListObjectsV2Command } = await awsSdk();
  const answer = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ...(after !== undefined ? { StartAfter: after } : {}), MaxKeys: page }), { abortSignal: signal });
  const listed: Listed[] = [];
  for (const o of answer.Contents ?? []) if (o.Key !== undefined && !o.Key.endsWith('/')) listed.push({ key: o.Key, etag: o.ETag, size: o.Size });
  return listed;
}

/**
 * Reads up to `limit` records of one object from `from` into `out`; returns the position after
 * them (`done` when the object's end was reached). `prefetched` is the object fetched ahead,
 * for a read from its start.
 */
async function readObject(client: S3Client, config: S3Config, from: S3Position, limit: number, out: SourceRecord[], signal: AbortSignal, prefetched?: Prefetched): Promise<S3Position> {
  const gzipped = from.key.endsWith('.gz');
  const base = gzipped ? from.key.slice(0, -3) : from.key;
  const isArray = base.endsWith('.json') || (!base.endsWith('.jsonl') && !base.endsWith('.ndjson') && config.format === 'json');
  // Only an uncompressed JSON Lines object can be entered in the middle, by its byte offset.
  const ranged = !gzipped && !isArray && from.offset > 0;
  let answer: { Body?: unknown; ContentLength?: number; LastModified?: Date };
  if (prefetched && !ranged) {
    answer = { Body: Readable.from([prefetched.bytes]), ContentLength: prefetched.bytes.length, LastModified: prefetched.lastModified };
  } else {
    try {
      const { GetObjectCommand } = await awsSdk();
      answer = await client.send(new GetObjectCommand({ Bucket: config.bucket, Key: from.key, ...(ranged ? { Range: `bytes=${from.offset}-` } : {}) }), { abortSignal: signal });
    } catch (error) {
      // The last batch ended exactly at the object's end: nothing is left after the offset.
      const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
      if (ranged && (e.name === 'InvalidRange' || e.$metadata?.httpStatusCode === 416)) return { ...from, done: true };
      throw error;
    }
  }
  const modified = answer.LastModified?.toISOString();
  const body = answer.Body as Readable;
  const stream: Readable = gzipped ? body.pipe(createGunzip()) : body;
  const fallbackType = config.type ?? DEFAULT_SOURCE_TYPE;
  const record = (value: JsonValue | undefined, raw: string, line: number) => out.push(toRecord(value, raw, `${from.key}:${line}`, fallbackType, modified));
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
    /** One line, `bytes` long in the object (its newline not counted); true once `limit` records are taken. */
    const take = (text: string, bytes: number): boolean => {
      if (skip > 0) {
        skip--;
        return false;
      }
      line++;
      offset += bytes + 1;
      if (text.charCodeAt(text.length - 1) === 0x0d) text = text.slice(0, -1);
      // A line starting with `{` is not blank: the usual line skips the scan for whitespace.
      if (text.charCodeAt(0) !== 0x7b && text.trim() === '') return false;
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
    const at = () => ({ key: from.key, line, offset: gzipped ? 0 : offset, done: size !== undefined && offset >= size });
    let rest: Buffer | undefined;
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      const data = rest ? Buffer.concat([rest, chunk]) : chunk;
      const end = data.lastIndexOf(0x0a);
      if (end === -1) {
        rest = Buffer.from(data);
        continue;
      }
      // The chunk's whole lines, decoded at once (a newline byte is never inside a UTF-8
      // sequence, so this decodes each line as decoding it alone would). A character is at
      // least one byte; when the text is as long as its bytes, every line's text is as long as
      // its bytes, and the lines are cut from the text without decoding each one.
      const text = data.toString('utf8', 0, end);
      if (text.length === end) {
        for (let start = 0; start <= end; ) {
          let newline = text.indexOf('\n', start);
          if (newline === -1) newline = end;
          if (take(text.slice(start, newline), newline - start)) return at();
          start = newline + 1;
        }
      } else {
        for (let start = 0; start <= end; ) {
          let newline = data.indexOf(0x0a, start);
          if (newline === -1 || newline > end) newline = end;
          if (take(data.toString('utf8', start, newline), newline - start)) return at();
          start = newline + 1;
        }
      }
      // Copied: a slice would keep the whole chunk alive.
      rest = end + 1 < data.length ? Buffer.from(data.subarray(end + 1)) : undefined;
    }
    // The last line of an object need not end with a newline: the object is complete.
    if (rest) {
      take(rest.toString('utf8'), rest.length);
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
function toRecord(value: JsonValue | undefined, raw: string, position: string, fallbackType: string, modified: string | undefined): SourceRecord {
  let type = fallbackType;
  let payload: JsonObject;
  let when = modified;
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const inner = value.payload;
    if (inner !== null && typeof inner === 'object' && !Array.isArray(inner)) {
      if (typeof value.type === 'string' && value.type !== '') type = value.type;
      if (typeof value.occurred_at === 'string') when = value.occurred_at;
      payload = inner;
    } else {
      payload = value;
    }
  } else {
    payload = value === undefined ? { raw } : { value };
  }
  const record: SourceRecord = { position, type, payload };
  if (when !== undefined) record.occurredAt = when;
  return record;
}

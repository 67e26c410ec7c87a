import type { Readable } from 'node:stream';
import { exceedsJsonDepth, tooDeepError } from '@ferry/core/internal';
import { HttpProblem } from './problem.js';
import type { HttpBody, HttpHeaders } from './types.js';

/** First value of a header. */
export function header(headers: HttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function tooLarge(limit: number): HttpProblem {
  return new HttpProblem('payload_too_large', `The request body is larger than ${limit} bytes.`);
}

/**
 * Reads a body's bytes, refusing more than `limit` bytes (413) as soon as it is known: from
 * `Content-Length` before reading, else while reading, so an endless chunked body is cut off
 * rather than buffered. The bytes are returned undecoded: a signature is checked over them, and
 * decoding refuses (never replaces) what is not UTF-8.
 */
export async function readBody(body: HttpBody | undefined, headers: HttpHeaders, limit: number): Promise<Buffer> {
  const declared = Number(header(headers, 'content-length'));
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit);
  if (body === undefined) return Buffer.alloc(0);
  if (typeof body === 'string') {
    const bytes = Buffer.from(body);
    if (bytes.byteLength > limit) throw tooLarge(limit);
    return bytes;
  }
  if (body instanceof Uint8Array) {
    if (body.byteLength > limit) throw tooLarge(limit);
    return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  // A stream is left open when its body is refused half-way: destroying a request destroys its
  // connection, and the 413 must still be written (then the connection closes after it).
  const source = typeof (body as { iterator?: unknown }).iterator === 'function' ? (body as Readable).iterator({ destroyOnReturn: false }) : body;
  for await (const chunk of source as AsyncIterable<string | Uint8Array>) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    size += buf.byteLength;
    if (size > limit) throw tooLarge(limit);
    chunks.push(buf);
  }
  return Buffer.concat(chunks, size);
}

/**
 * True when the media type is JSON: `application/json`, with any parameters as long as a
 * charset, when given, is UTF-8 (JSON has no other encoding on the wire, RFC 8259).
 */
export function isJsonContentType(value: string | undefined): boolean {
  if (value === undefined) return false;
  const [type, ...params] = value.split(';').map((p) => p.trim().toLowerCase());
  if (type !== 'application/json') return false;
  return params.every((p) => !p.startsWith('charset=') || /^charset="?utf-8"?$/.test(p));
}

/**
 * Parses a JSON body: 400 `validation_failed` (field code `too_deep`) when nested more than 64
 * deep, found by a scan of the text before anything parses or walks it; 400 `malformed_json`
 * when it is not JSON.
 */
export function parseJson(text: string): unknown {
  if (exceedsJsonDepth(text)) throw tooDeepError();
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    // Only the position is passed on: V8's messages can quote the input, which may hold a secret.
    const position = error instanceof Error ? /position (\d+)/.exec(error.message)?.[1] : undefined;
    const where = position === undefined ? (text.trim() === '' ? ' (it is empty)' : '') : ` (at position ${position})`;
    throw new HttpProblem('malformed_json', `The request body is not valid JSON${where}.`);
  }
  return value;
}

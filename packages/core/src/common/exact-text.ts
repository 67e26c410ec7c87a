import { isUtf8 } from 'node:buffer';
import { FerryError } from './errors.js';

/**
 * Where a byte sequence stops being UTF-8 (RFC 3629): the offset of the first byte of the bad
 * sequence, and whether that sequence is the 3-byte form of a UTF-16 surrogate (`ED A0 80` to
 * `ED BF BF`, CESU-8), which is how a lone surrogate arrives on the wire.
 */
export interface Utf8Fault {
  offset: number;
  surrogate: boolean;
}

/** The second byte's range after each lead byte, for the leads whose range is not 80..BF. */
function secondRange(lead: number): [number, number] {
  if (lead === 0xe0) return [0xa0, 0xbf]; // shorter forms are overlong
  if (lead === 0xed) return [0x80, 0x9f]; // A0..BF would encode a surrogate
  if (lead === 0xf0) return [0x90, 0xbf]; // overlong below
  if (lead === 0xf4) return [0x80, 0x8f]; // above U+10FFFF beyond
  return [0x80, 0xbf];
}

/**
 * The first place `bytes` is not UTF-8, or undefined when it all is: overlong forms, surrogates,
 * code points above U+10FFFF, stray continuation bytes and truncated sequences are faults, as
 * in every strict decoder. Node's native check answers the common case; the scan that locates
 * the fault runs only on bytes already known to be bad.
 */
export function utf8Fault(bytes: Uint8Array): Utf8Fault | undefined {
  if (isUtf8(bytes)) return undefined;
  let i = 0;
  while (i < bytes.length) {
    const lead = bytes[i]!;
    if (lead < 0x80) {
      i++;
      continue;
    }
    const length = lead >= 0xc2 && lead <= 0xdf ? 2 : lead >= 0xe0 && lead <= 0xef ? 3 : lead >= 0xf0 && lead <= 0xf4 ? 4 : 0;
    if (length === 0) return { offset: i, surrogate: false };
    const [low, high] = secondRange(lead);
    const second = bytes[i + 1];
    const surrogate = lead === 0xed && second !== undefined && second >= 0xa0 && second <= 0xbf && isContinuation(bytes[i + 2]);
    if (second === undefined || second < low || second > high) return { offset: i, surrogate };
    for (let k = 2; k < length; k++) if (!isContinuation(bytes[i + k])) return { offset: i, surrogate: false };
    i += length;
  }
  // isUtf8 and this scan agree on every input; this line is only reached if they did not.
  return { offset: bytes.length, surrogate: false };
}

function isContinuation(byte: number | undefined): boolean {
  return byte !== undefined && byte >= 0x80 && byte <= 0xbf;
}

/**
 * Decodes UTF-8 exactly or not at all: a byte sequence that is not UTF-8 is refused, never
 * replaced with U+FFFD (which would store something other than what was sent, and make three
 * different invalid names one). The CESU-8 form of a surrogate is `invalid_character`, as a
 * lone surrogate is wherever text enters; anything else that is not UTF-8 is `invalid_encoding`.
 * `what` names the text in the message (`The request body`).
 */
export function decodeUtf8Exact(bytes: Uint8Array, what: string): string {
  const fault = utf8Fault(bytes);
  if (fault) throw encodingError(fault, what);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
}

/** The error for a {@link Utf8Fault} in the text `what` names. */
export function encodingError(fault: Utf8Fault, what: string): FerryError {
  return fault.surrogate
    ? new FerryError('invalid_character', `${what} holds the UTF-8 bytes of a lone UTF-16 surrogate (at byte ${fault.offset}), which no storage keeps.`)
    : new FerryError('invalid_encoding', `${what} is not valid UTF-8 (at byte ${fault.offset}).`);
}

/**
 * How deep objects and arrays may nest in a body: deeper documents only serve to exhaust stacks
 * in whatever walks them later (docs/api.md, The HTTP protocol: Bodies).
 */
export const MAX_JSON_DEPTH = 64;

/**
 * True when JSON text nests objects and arrays more than `max` deep. A scan of the text, before
 * any parser or walker sees it, with a counter rather than the call stack, so no depth of input
 * can overflow it: brackets inside strings are skipped, and text that is not JSON answers
 * whatever its brackets say (the parser refuses it next).
 */
export function exceedsJsonDepth(text: string, max: number = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // A string is skipped whole, by the native search for its closing quote (one not escaped by
      // an odd run of backslashes): most of a document's characters are in strings, and a loop
      // over them was a third slower (36 against 56 µs for 100 ingested events).
      let end = text.indexOf('"', i + 1);
      while (end > 0) {
        let k = end - 1;
        while (text.charCodeAt(k) === 0x5c) k--;
        if ((end - 1 - k) % 2 === 0) break;
        end = text.indexOf('"', end + 1);
      }
      if (end < 0) return false;
      i = end;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** The `too_deep` error of a body nested past {@link MAX_JSON_DEPTH}. */
export function tooDeepError(): FerryError {
  return new FerryError('validation_failed', 'The request body is nested too deeply.', {
    errors: [{ pointer: '', code: 'too_deep', detail: `Objects and arrays may be nested at most ${MAX_JSON_DEPTH} levels deep.` }],
  });
}

/** What {@link decodePercent} found wrong, besides bytes that are not UTF-8. */
export type PercentFault = 'malformed_escape';

/**
 * Percent-decodes one path segment or query component into exact text (RFC 3986), refusing
 * rather than replacing: `%` not followed by two hex digits answers `'malformed_escape'`; bytes
 * that are not UTF-8 answer their {@link Utf8Fault}. Characters up to U+00FF stand for the byte
 * of that value (Node hands a request target over byte for byte, as Latin-1); any above it is
 * taken as already decoded and contributes its UTF-8 bytes. With `plusIsSpace`, `+` is a space
 * (form encoding, as query strings use it).
 */
export function decodePercent(text: string, plusIsSpace: boolean): { text: string } | { fault: Utf8Fault | PercentFault } {
  if (!/[%+\u0080-\uffff]/.test(text)) return { text };
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x25) {
      const hex = text.slice(i + 1, i + 3);
      if (!/^[0-9A-Fa-f]{2}$/.test(hex)) return { fault: 'malformed_escape' };
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else if (c === 0x2b && plusIsSpace) bytes.push(0x20);
    else if (c <= 0xff) bytes.push(c);
    else {
      // A character above U+00FF (with its surrogate pair, if any): its own UTF-8 bytes.
      const cp = text.codePointAt(i)!;
      if (cp >= 0xd800 && cp <= 0xdfff) return { fault: { offset: bytes.length, surrogate: true } };
      for (const b of Buffer.from(String.fromCodePoint(cp), 'utf8')) bytes.push(b);
      if (cp > 0xffff) i++;
    }
  }
  const buf = Buffer.from(bytes);
  const fault = utf8Fault(buf);
  return fault ? { fault } : { text: buf.toString('utf8') };
}

import { hash } from 'node:crypto';
import { ID_PREFIXES } from '../common/index.js';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/**
 * The id of the event a pipeline makes of the record at `position` in its source.
 *
 * Derived, not drawn: a re-read after a crash or a restart yields the same id, so the event log
 * updates its row instead of adding one, and idempotent destinations (upsert on id,
 * deterministic object keys, `webhook-id`) drop the duplicate.
 *
 * With the record's own time (`occurredAtMs`, which a source reports the same way on every
 * read) the id is a true ULID: that time in its first 10 characters, then 80 bits of
 * SHA-256(pipeline id, position). Ids of a stream then grow with time, so each batch lands at
 * the end of the event log's id index instead of on a thousand random pages of it: on SQLite
 * that is 2.3 times the throughput of random ids (measured, 200,000 events). Without a time the
 * body is 128 bits of the hash, spelled as a ULID is (26 Crockford base-32 characters, the
 * first one 0-7); either form passes every check an `evt_` id does.
 */
export function deriveEventId(pipelineId: string, position: string, occurredAtMs?: number): string {
  // One-shot hashing, the digest as a 'binary' (latin1) string, one character per byte: a Buffer per event
  // cost three times the whole hashing (measured 1.8 against 0.6 µs per id), and hex took a
  // tenth longer to make and twice the work to decode.
  const d = hash('sha256', `${pipelineId}\0${position}`, 'binary');
  if (occurredAtMs !== undefined && Number.isInteger(occurredAtMs) && occurredAtMs >= 0 && occurredAtMs < 2 ** 48) {
    // 48 bits of time in 10 characters (2 padding bits first): the high 18 bits and the low 30,
    // each small enough for 32-bit arithmetic.
    const high = Math.floor(occurredAtMs / 2 ** 30);
    const low = occurredAtMs % 2 ** 30;
    const time = CROCKFORD[high >>> 15]! + CROCKFORD[(high >>> 10) & 31]! + PAIRS[high & 1023]! + PAIRS[low >>> 20]! + PAIRS[(low >>> 10) & 1023]! + PAIRS[low & 1023]!;
    // The first 80 bits of the digest (bytes 0-9), 20 at a time.
    return `${ID_PREFIXES.event}_${time}${highQuad(d, 0)}${lowQuad(d, 2)}${highQuad(d, 5)}${lowQuad(d, 7)}`;
  }
  // 128 bits with 2 padding bits first: the first byte as 10 bits (two characters), then 120
  // bits (bytes 1-15) in six groups of four characters.
  return `${ID_PREFIXES.event}_${PAIRS[d.charCodeAt(0)]}${highQuad(d, 1)}${lowQuad(d, 3)}${highQuad(d, 6)}${lowQuad(d, 8)}${highQuad(d, 11)}${lowQuad(d, 13)}`;
}

/** Every 10-bit value as its two Crockford characters: the encoding goes two characters at a time. */
const PAIRS: readonly string[] = Array.from({ length: 1024 }, (_, v) => CROCKFORD[v >> 5]! + CROCKFORD[v & 31]!);

/** The 20 bits of byte `at`, byte `at + 1` and the high half of byte `at + 2`, as four Crockford characters. */
function highQuad(bytes: string, at: number): string {
  const v = (bytes.charCodeAt(at) << 12) | (bytes.charCodeAt(at + 1) << 4) | (bytes.charCodeAt(at + 2) >>> 4);
  return PAIRS[v >>> 10]! + PAIRS[v & 1023]!;
}

/** The 20 bits of the low half of byte `at`, then bytes `at + 1` and `at + 2`, as four Crockford characters. */
function lowQuad(bytes: string, at: number): string {
  const v = ((bytes.charCodeAt(at) & 15) << 16) | (bytes.charCodeAt(at + 1) << 8) | bytes.charCodeAt(at + 2);
  return PAIRS[v >>> 10]! + PAIRS[v & 1023]!;
}

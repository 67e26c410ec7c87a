import { hash } from 'node:crypto';
import { ID_PREFIXES } from '../ids.js';

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
  // One-shot hashing, digest as hex: a Buffer per event cost three times the whole hashing
  // (measured 1.8 against 0.6 µs per id); the hex digits are decoded below instead.
  const digest = hash('sha256', `${pipelineId}\0${position}`, 'hex');
  if (occurredAtMs !== undefined && Number.isInteger(occurredAtMs) && occurredAtMs >= 0 && occurredAtMs < 2 ** 48) {
    // 48 bits of time in 10 characters (2 padding bits first): the high 18 bits and the low 30,
    // each small enough for 32-bit arithmetic.
    const high = Math.floor(occurredAtMs / 2 ** 30);
    const low = occurredAtMs % 2 ** 30;
    const time = CROCKFORD[high >>> 15]! + CROCKFORD[(high >>> 10) & 31]! + PAIRS[high & 1023]! + PAIRS[low >>> 20]! + PAIRS[(low >>> 10) & 1023]! + PAIRS[low & 1023]!;
    return `${ID_PREFIXES.event}_${time}${quad(digest, 0)}${quad(digest, 5)}${quad(digest, 10)}${quad(digest, 15)}`;
  }
  // 128 bits with 2 padding bits first: the first byte as 10 bits (two characters), then 120
  // bits in six groups of four characters.
  const first = (nibble(digest, 0) << 4) | nibble(digest, 1);
  return `${ID_PREFIXES.event}_${PAIRS[first]}${quad(digest, 2)}${quad(digest, 7)}${quad(digest, 12)}${quad(digest, 17)}${quad(digest, 22)}${quad(digest, 27)}`;
}

/** Every 10-bit value as its two Crockford characters: the encoding goes two characters at a time. */
const PAIRS: readonly string[] = Array.from({ length: 1024 }, (_, v) => CROCKFORD[v >> 5]! + CROCKFORD[v & 31]!);

/** The value of the hex digit at `index` ('0'-'9' are 48-57, 'a'-'f' 97-102: lower case, as digests are). */
function nibble(hex: string, index: number): number {
  const c = hex.charCodeAt(index);
  return c <= 57 ? c - 48 : c - 87;
}

/** The 20 bits of the five hex digits from `index`, as four Crockford characters. */
function quad(hex: string, index: number): string {
  const v = (nibble(hex, index) << 16) | (nibble(hex, index + 1) << 12) | (nibble(hex, index + 2) << 8) | (nibble(hex, index + 3) << 4) | nibble(hex, index + 4);
  return PAIRS[v >>> 10]! + PAIRS[v & 1023]!;
}

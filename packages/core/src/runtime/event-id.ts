import { createHash } from 'node:crypto';
import { ID_PREFIXES } from '../ids.js';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/**
 * The id of the event a pipeline makes of the record at `position` in its source.
 *
 * Derived, not drawn: a re-read after a crash or a restart yields the same id, so the event log
 * updates its row instead of adding one, and idempotent destinations (upsert on id,
 * deterministic object keys, `webhook-id`) drop the duplicate. The body is 128 bits of
 * SHA-256(pipeline id, position) spelled the way a ULID is (26 Crockford base-32 characters, the
 * first one 0-7), so it passes every check an `evt_` id does.
 */
export function deriveEventId(pipelineId: string, position: string): string {
  const digest = createHash('sha256').update(pipelineId).update('\0').update(position).digest();
  let out = `${ID_PREFIXES.event}_`;
  // 128 bits as 26 characters of 5 bits, most significant first: 2 padding bits lead, as in a ULID.
  let acc = 0;
  let bits = 2;
  for (let i = 0; i < 16; i++) {
    acc = ((acc << 8) | digest[i]!) & 0xffff;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += CROCKFORD[(acc >> bits) & 31];
    }
  }
  return out;
}

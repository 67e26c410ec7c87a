import { randomFillSync } from 'node:crypto';
import { encodeTime, monotonicFactory } from 'ulid';
import type { Clock } from './clock.js';

/** The id prefixes, by resource (docs/api.md, Ids and timestamps). */
export const ID_PREFIXES = {
  connector: 'con',
  pipeline: 'pip',
  event: 'evt',
  run: 'run',
  webhook: 'whk',
  delivery: 'dlv',
  key: 'key',
  attempt: 'att',
  backfill: 'bfl',
} as const;

/** A resource kind that has an id prefix. */
export type IdKind = keyof typeof ID_PREFIXES;

/**
 * ulid's default source asks the OS for one byte per character (16 calls per id), which was a
 * visible share of an API write. Bytes are drawn from the same CSPRNG a buffer at a time instead;
 * a byte / 256 maps onto the 32 ULID characters uniformly.
 */
function pooledRandom(): () => number {
  const pool = Buffer.alloc(4096);
  let next = pool.length;
  return () => {
    if (next === pool.length) {
      randomFillSync(pool);
      next = 0;
    }
    return pool[next++]! / 256;
  };
}

/**
 * Makes prefixed ULIDs (`con_01J...`). Ids are time-ordered by the engine's clock, and
 * monotonic within one generator, so keyset pagination by id follows creation order.
 */
export class IdGenerator {
  private readonly next = monotonicFactory(pooledRandom());

  constructor(private readonly clock: Clock) {}

  /** A new id for a resource of `kind`. */
  create(kind: IdKind): string {
    return `${ID_PREFIXES[kind]}_${this.next(this.clock.now())}`;
  }
}

/** The body of every id: a ULID, 26 characters of Crockford base 32. */
const ULID = '[0-9A-HJKMNP-TV-Z]{26}';
const ULID_BODY = new RegExp(`^${ULID}$`);

/** The pattern (a JSON Schema `pattern`) of an id of `kind`. */
export function idPattern(kind: IdKind): string {
  return `^${ID_PREFIXES[kind]}_${ULID}$`;
}

/** True when `id` looks like an id of `kind` (prefix and ULID body). */
export function isId(kind: IdKind, id: string): boolean {
  const prefix = `${ID_PREFIXES[kind]}_`;
  return id.startsWith(prefix) && ULID_BODY.test(id.slice(prefix.length));
}

/**
 * The smallest id of `kind` made at `ms`: every id made before sorts below it, every id made at
 * or after it above. Lets a keyset over ids start or stop at a time.
 */
export function firstIdAt(kind: IdKind, ms: number): string {
  return `${ID_PREFIXES[kind]}_${encodeTime(Math.max(0, ms), 10)}`;
}

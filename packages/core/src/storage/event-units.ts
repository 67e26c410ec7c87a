import { hash } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { EventRecord, EventStatus } from '../common/index.js';
import type { JsonObject } from '../plugin-api/index.js';

/**
 * The event log's unit: a pipeline's batch of events, recorded as one row of `event_units`
 * rather than a row per event. Its events are serialized once, in blocks of
 * {@link BLOCK_EVENTS}, each a JSON document of columns, compressed on its own (a listing's page
 * decodes the block or two it shows, not the whole unit); the unit's row keeps beside it only what
 * a listing prunes whole units by (the span of `occurred_at`, how many were dead-lettered or
 * filtered), and `event_unit_types` the set of its types. A type that is rare in its unit (at
 * most one event in {@link RARE_SHARE}) has its events copied in its `event_unit_types` row: a
 * listing filtered on it reads those rows, not every unit's body.
 *
 * Columns rather than an object per event: ids, types and times side by side compress far better
 * than rows (see bench/README.md, the event log on disk), and a field every event of a block
 * shares (`status`, `attempts`) is written once.
 */

/**
 * An event as a unit holds it: the public record's fields; and, when it was made already (by the
 * destination, see `payloadJson`), the payload's JSON text, which the unit takes as it is.
 */
export type UnitEvent = Pick<EventRecord, 'id' | 'type' | 'occurred_at' | 'payload' | 'status' | 'attempts' | 'error' | 'dead_lettered_at'> & { payload_json?: string | undefined };

/** The unit's body, version 1: columns, one entry per event, in log order. */
interface UnitBody {
  v: 1;
  /** Event ids. */
  i: string[];
  /** The distinct types; `t` indexes them (absent when there is one). */
  y: string[];
  t?: number[];
  /** `occurred_at`, canonical ISO 8601. */
  o: string[];
  /** Status: one for all, or one per event. */
  s: EventStatus | EventStatus[];
  /** Attempts: one for all, or one per event. */
  a: number | number[];
  /** Errors and dead-letter times, by index: only dead-lettered events have them. */
  e?: Array<[number, EventRecord['error'], string | null]>;
  /** Payloads (absent when none is kept). */
  p?: Array<JsonObject | null>;
}

/** What a unit's row holds beside its body, computed as it is encoded. */
export interface UnitSummary {
  count: number;
  min_occurred_at: string;
  max_occurred_at: string;
  /** Events dead-lettered when the unit was written. */
  failed: number;
  /** Events filtered when the unit was written. */
  filtered: number;
  /** The distinct types, for `event_unit_types`. */
  types: string[];
  /** The events of each rare type, as {@link InlineEvents} JSON, by type. */
  inline: Map<string, string>;
}

/** A type is rare in a unit of n events when it has at most n / RARE_SHARE of them. */
export const RARE_SHARE = 16;

/** A rare type's events in its `event_unit_types` row: each with its index in the unit. */
export type InlineEvents = Array<[number, UnitEvent]>;

/** Events per block of a unit's body: a page of the listing decodes one or two blocks, not the unit. */
export const BLOCK_EVENTS = 128;

/** A unit ready to write: its summary, and its body as JSON blocks of {@link BLOCK_EVENTS} events (compressed by whoever writes it). */
export interface EncodedUnit extends UnitSummary {
  blocks: string[];
  /** Each block's least and greatest event id: what finds an id's block without decoding the others. */
  ranges: Array<[string, string]>;
}

/** Encodes a pipeline's batch of events (times already canonical) as a unit. */
export function encodeUnit(events: readonly UnitEvent[]): EncodedUnit {
  const n = events.length;
  const typeIndex = new Map<string, number>();
  const typeOf: number[] = new Array(n);
  let min = events[0]?.occurred_at ?? '';
  let max = min;
  let failed = 0;
  let filtered = 0;
  for (let k = 0; k < n; k++) {
    const e = events[k]!;
    const at = e.occurred_at;
    if (at < min) min = at;
    if (at > max) max = at;
    let t = typeIndex.get(e.type);
    if (t === undefined) typeIndex.set(e.type, (t = typeIndex.size));
    typeOf[k] = t;
    if (e.status === 'dead_lettered') failed++;
    else if (e.status === 'filtered') filtered++;
  }
  const types = [...typeIndex.keys()];
  const inline = new Map<string, string>();
  if (types.length > 1) {
    const counts = new Array<number>(types.length).fill(0);
    for (const t of typeOf) counts[t]!++;
    for (let t = 0; t < types.length; t++) {
      if (counts[t]! * RARE_SHARE > n) continue;
      const copies: InlineEvents = [];
      for (let k = 0; k < n; k++) {
        if (typeOf[k] !== t) continue;
        const e = events[k]!;
        // The record's fields only: an event row also has bookkeeping, and the payload's text.
        copies.push([k, { id: e.id, type: e.type, occurred_at: e.occurred_at, payload: e.payload, status: e.status, attempts: e.attempts, error: e.error, dead_lettered_at: e.dead_lettered_at }]);
      }
      inline.set(types[t]!, JSON.stringify(copies));
    }
  }
  const blocks: string[] = [];
  const ranges: Array<[string, string]> = [];
  for (let from = 0; from < n; from += BLOCK_EVENTS) {
    const to = Math.min(n, from + BLOCK_EVENTS);
    blocks.push(encodeBlock(events, from, to));
    let least = events[from]!.id;
    let greatest = least;
    for (let k = from + 1; k < to; k++) {
      const id = events[k]!.id;
      if (id < least) least = id;
      else if (id > greatest) greatest = id;
    }
    ranges.push([least, greatest]);
  }
  return { blocks, ranges, count: n, min_occurred_at: min, max_occurred_at: max, failed, filtered, types, inline };
}

/** The events `from` to `to` (excluded) as one block: columns, indexes local to the block. */
function encodeBlock(events: readonly UnitEvent[], from: number, to: number): string {
  const n = to - from;
  const ids: string[] = new Array(n);
  const times: string[] = new Array(n);
  const typeIndex = new Map<string, number>();
  const typeOf: number[] = new Array(n);
  const statuses: EventStatus[] = new Array(n);
  const attempts: number[] = new Array(n);
  // Each payload, and its JSON when the destination made it already (see payloadJson).
  const payloads: Array<JsonObject | null> = new Array(n);
  const texts: Array<string | undefined> = new Array(n);
  let made = 0;
  const errors: Array<[number, EventRecord['error'], string | null]> = [];
  let anyPayload = false;
  let oneStatus = true;
  let oneAttempts = true;
  for (let k = 0; k < n; k++) {
    const e = events[from + k]!;
    ids[k] = e.id;
    times[k] = e.occurred_at;
    let t = typeIndex.get(e.type);
    if (t === undefined) typeIndex.set(e.type, (t = typeIndex.size));
    typeOf[k] = t;
    statuses[k] = e.status;
    attempts[k] = e.attempts;
    if (e.status !== statuses[0]) oneStatus = false;
    if (e.attempts !== attempts[0]) oneAttempts = false;
    if (e.error || e.dead_lettered_at) errors.push([k, e.error ?? null, e.dead_lettered_at ?? null]);
    payloads[k] = e.payload;
    if (e.payload !== null) anyPayload = true;
    if (e.payload_json !== undefined) {
      texts[k] = e.payload_json;
      made++;
    }
  }
  const types = [...typeIndex.keys()];
  const body: UnitBody = { v: 1, i: ids, y: types, o: times, s: oneStatus && n > 0 ? statuses[0]! : statuses, a: oneAttempts && n > 0 ? attempts[0]! : attempts };
  if (types.length > 1) body.t = typeOf;
  if (errors.length > 0) body.e = errors;
  if (!anyPayload) return JSON.stringify(body);
  // Serialized at once when no payload's text was made (one call costs half of one per payload);
  // otherwise the texts made are spliced in, `p` last as JSON.stringify would have written it.
  if (made === 0) {
    body.p = payloads;
    return JSON.stringify(body);
  }
  for (let k = 0; k < n; k++) texts[k] ??= JSON.stringify(payloads[k]);
  const text = JSON.stringify(body);
  return `${text.slice(0, -1)},"p":[${texts.join(',')}]}`;
}

/**
 * A unit's events, decoded from its stored body: a header, then its blocks, each decoded the
 * first time one of its events is asked for (a page reads a few events of a unit).
 */
export class DecodedUnit {
  private readonly offsets: number[];
  private readonly size: number;
  private readonly blocks: Array<UnitBody | undefined>;
  private readonly ranges: Array<[string, string]> | undefined;
  /** How many events the unit holds. */
  readonly length: number;

  constructor(private readonly stored: Buffer | Uint8Array) {
    const bytes = Buffer.isBuffer(stored) ? stored : Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength);
    this.stored = bytes;
    const headerLength = bytes.readUInt32LE(0);
    const header = JSON.parse(bytes.toString('utf8', 4, 4 + headerLength)) as UnitHeader;
    if (header.v !== 2) throw new Error(`unknown event-log unit version ${String(header.v)}`);
    this.size = header.s;
    this.length = header.n;
    this.offsets = [4 + headerLength];
    for (const l of header.b) this.offsets.push(this.offsets[this.offsets.length - 1]! + l);
    this.blocks = new Array(header.b.length);
    this.ranges = header.r;
  }

  private block(k: number): [UnitBody, number] {
    const b = Math.floor(k / this.size);
    let body = this.blocks[b];
    if (!body) {
      body = JSON.parse(inflateRawSync(this.stored.subarray(this.offsets[b], this.offsets[b + 1])).toString('utf8')) as UnitBody;
      this.blocks[b] = body;
    }
    return [body, k - b * this.size];
  }

  /** The index of the event `id`, or -1. Only a block whose range of ids holds `id` is decoded (all, in a unit without ranges). */
  indexOf(id: string): number {
    for (let b = 0; b < this.blocks.length; b++) {
      const range = this.ranges?.[b];
      if (range !== undefined && (id < range[0] || id > range[1])) continue;
      const [body] = this.block(b * this.size);
      const at = body.i.indexOf(id);
      if (at >= 0) return b * this.size + at;
    }
    return -1;
  }

  /** The ids of the unit's events, in order. */
  ids(): string[] {
    const ids: string[] = [];
    for (let b = 0; b < this.blocks.length; b++) ids.push(...this.block(b * this.size)[0].i);
    return ids;
  }

  /** The event at `k`. */
  event(k: number): UnitEvent {
    const [b, j] = this.block(k);
    const failure = b.e?.find((f) => f[0] === j);
    return {
      id: b.i[j]!,
      type: b.y[b.t ? b.t[j]! : 0]!,
      occurred_at: b.o[j]!,
      payload: b.p ? (b.p[j] ?? null) : null,
      status: typeof b.s === 'string' ? b.s : b.s[j]!,
      attempts: typeof b.a === 'number' ? b.a : b.a[j]!,
      error: failure ? failure[1] : null,
      dead_lettered_at: failure ? failure[2] : null,
    };
  }

  /** The type of the event at `k`, without building it. */
  typeAt(k: number): string {
    const [b, j] = this.block(k);
    return b.y[b.t ? b.t[j]! : 0]!;
  }

  /** The `occurred_at` of the event at `k`, without building it. */
  occurredAt(k: number): string {
    const [b, j] = this.block(k);
    return b.o[j]!;
  }
}

/** A unit body's header: version, events, events per block, and each block's compressed length. */
interface UnitHeader {
  v: 2;
  /** Each block's least and greatest event id (absent in units written before they were kept). */
  r?: Array<[string, string]>;
  n: number;
  s: number;
  b: number[];
}

/**
 * A unit's body as stored: a little-endian u32 length, the JSON header, then each block
 * compressed with raw deflate (level 1: fast, and most of the gain). `sqlite-writer-thread.ts`
 * packs the same way on its thread.
 */
export function packUnit(compressed: readonly Buffer[], count: number, ranges?: Array<[string, string]>): Buffer {
  const header = Buffer.from(JSON.stringify({ v: 2, n: count, s: BLOCK_EVENTS, b: compressed.map((c) => c.length), ...(ranges ? { r: ranges } : {}) } satisfies UnitHeader));
  const head = Buffer.alloc(4);
  head.writeUInt32LE(header.length, 0);
  return Buffer.concat([head, header, ...compressed]);
}

/** What packing a unit needs of it: its blocks, its count, and (when known) its blocks' ranges of ids. */
export type PackableUnit = Pick<EncodedUnit, 'blocks' | 'count'> & Partial<Pick<EncodedUnit, 'ranges'>>;

/** A unit's body compressed and packed for storage, on the calling thread. */
export function compressUnit(unit: PackableUnit): Buffer {
  return packUnit(unit.blocks.map((b) => deflateRawSync(b, { level: 1 })), unit.count, unit.ranges);
}

/**
 * {@link packUnit} of a unit's blocks (`{ blocks, count, size, ranges? }`) as plain CommonJS, for the
 * threads that pack on their own core (`unit-packer.ts`, `sqlite-writer-thread.ts`): the same
 * bytes, which `unit-packer.test.ts` checks.
 */
export const PACK_UNIT_SOURCE = `
const { deflateRawSync } = require('node:zlib');
function packUnit(pack) {
  const parts = pack.blocks.map((block) => deflateRawSync(block, { level: 1 }));
  const fields = { v: 2, n: pack.count, s: pack.size, b: parts.map((part) => part.length) };
  if (pack.ranges) fields.r = pack.ranges;
  const header = Buffer.from(JSON.stringify(fields));
  const head = Buffer.alloc(4);
  head.writeUInt32LE(header.length, 0);
  return Buffer.concat([head, header, ...parts]);
}
`;

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
/** Each Crockford character's value, by character code; 255 for a character that is not one. */
const DIGIT = new Uint8Array(128).fill(255);
for (let v = 0; v < CROCKFORD.length; v++) DIGIT[CROCKFORD.charCodeAt(v)] = v;

/**
 * Whether `id` has the ULID form of an event id: `evt_`, then 26 Crockford base-32 characters
 * (upper case), the first one 0-7. What `/^evt_[0-7][0-9A-HJKMNP-TV-Z]{25}$/` tests, at a third
 * of its cost: it runs for every event appended.
 */
function isUlidId(id: string): boolean {
  if (id.length !== 30 || !id.startsWith('evt_')) return false;
  const first = id.charCodeAt(4);
  if (first < 48 || first > 55) return false;
  for (let k = 5; k < 30; k++) {
    const c = id.charCodeAt(k);
    if (c >= 128 || DIGIT[c] === 255) return false;
  }
  return true;
}

/**
 * The key an event id is found by (`event_keys`, or `keys` on Postgres): a 53-bit integer, exact
 * in a JavaScript number. For an id in ULID form, its first 11 characters: the record's time to
 * the millisecond (ids of a stream then grow, and their keys are appended at the end of the index
 * rather than spread over it) and 5 bits of the hash. Otherwise 52 bits of the id's SHA-1. Two
 * ids may share a key: a lookup reads each unit that has the key and looks for the id itself.
 */
export function eventKey(id: string): number {
  if (isUlidId(id)) {
    let key = 0;
    for (let k = 4; k < 15; k++) key = key * 32 + DIGIT[id.charCodeAt(k)]!;
    return key;
  }
  return Number.parseInt(hash('sha1', id, 'hex').slice(0, 13), 16);
}

/** The widest span of keys a unit is found by without its keys: an hour of ULID time (keys count 32 per ms). */
export const NARROW_KEY_SPAN = 32 * 3_600_000;

/**
 * How a unit is found by an event's key, given its events' keys (in any order, repeats allowed):
 * by the span of its keys when that span is narrow (ids in ULID form from an hour of time or
 * less: a stream's batch), otherwise by every key (`keys`, distinct). Postgres keeps the span
 * on the unit's row (a GiST entry a unit) and the keys in a GIN index; SQLite keeps the span in
 * `event_key_spans` (see {@link keySpanCells}) and the keys in `event_keys`. A key entry per event
 * cost 16 to 52 bytes an event and, on SQLite, most of a batch's commit (1.4 of 1.7 ms a batch of
 * 1,000); the span costs a few bytes a unit, and a lookup reads the one or two units whose span
 * holds the key.
 */
export function keyLookup(keys: readonly number[]): { min_key: number; max_key: number; keys: number[] | null } {
  let min = keys[0] ?? 0;
  let max = min;
  for (const k of keys) {
    if (k < min) min = k;
    if (k > max) max = k;
  }
  return { min_key: min, max_key: max, keys: max - min <= NARROW_KEY_SPAN ? null : [...new Set(keys)] };
}

/**
 * The grid SQLite finds a narrow span on (`event_key_spans`), without an interval index: level
 * `L` cuts the keys into cells of 2^L keys, and a span is filed at the finest level where it
 * touches at most two cells, a row per cell. A lookup of key `k` reads, at each level, the
 * one cell holding `k`, and keeps the rows whose span holds `k`: at most a few rows per level,
 * the units of that moment of every pipeline, whatever the log's size. Every other level, up to
 * the one where an hour's span ({@link NARROW_KEY_SPAN}, under 2^27) fits in two cells.
 */
export const KEY_SPAN_LEVELS: readonly number[] = Array.from({ length: 15 }, (_, i) => 2 * i);

/** The `[level, cell]` rows a narrow span `[min, max]` is filed under (see {@link KEY_SPAN_LEVELS}). */
export function keySpanCells(min: number, max: number): Array<[number, number]> {
  for (const level of KEY_SPAN_LEVELS) {
    const size = 2 ** level;
    const first = Math.floor(min / size);
    const last = Math.floor(max / size);
    if (last - first <= 1) return first === last ? [[level, first]] : [[level, first], [level, last]];
  }
  throw new RangeError(`a key span of ${max - min} is not narrow`);
}

/** The `[level, cell]` of each level that a span holding `key` may be filed under. */
export function keyLookupCells(key: number): Array<[number, number]> {
  return KEY_SPAN_LEVELS.map((level) => [level, Math.floor(key / 2 ** level)]);
}

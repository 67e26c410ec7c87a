import { hash } from 'node:crypto';
import { promisify } from 'node:util';
import { deflateRaw, deflateRawSync, inflateRawSync } from 'node:zlib';
import type { EventRecord, EventStatus } from '../common/index.js';
import type { JsonObject } from '../plugin-api/index.js';

/**
 * The event log's unit: a pipeline's batch of events, recorded as one row of `event_units`
 * rather than a row per event (see ARCHITECTURE.md, "The event log"). Its events are serialized
 * once, as one JSON document of columns, and compressed; the unit's row keeps beside it only what
 * a listing prunes whole units by (the span of `occurred_at`, how many were dead-lettered or
 * filtered), and `event_unit_types` the set of its types. A type that is rare in its unit (at
 * most one event in {@link RARE_SHARE}) has its events copied in its `event_unit_types` row: a
 * listing filtered on it reads those rows, not every unit's body.
 *
 * Columns rather than an object per event: ids, types and times side by side compress far better
 * (a 1,000-event batch of 110-byte payloads: 21 bytes an event with its payload, 13 without, where
 * a row per event took 568), and a field every event shares (`status`, `attempts`) is written
 * once.
 */

/** An event as a unit holds it: the public record's fields. */
export type UnitEvent = Pick<EventRecord, 'id' | 'type' | 'occurred_at' | 'payload' | 'status' | 'attempts' | 'error' | 'dead_lettered_at'>;

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

/** A unit ready to write: its summary, and its body as JSON text (compressed by whoever writes it). */
export interface EncodedUnit extends UnitSummary {
  json: string;
}

/** Encodes a pipeline's batch of events (times already canonical) as a unit. */
export function encodeUnit(events: readonly UnitEvent[]): EncodedUnit {
  const n = events.length;
  const ids: string[] = new Array(n);
  const times: string[] = new Array(n);
  const typeIndex = new Map<string, number>();
  const typeOf: number[] = new Array(n);
  const statuses: EventStatus[] = new Array(n);
  const attempts: number[] = new Array(n);
  const payloads: Array<JsonObject | null> = new Array(n);
  const errors: Array<[number, EventRecord['error'], string | null]> = [];
  let min = events[0]?.occurred_at ?? '';
  let max = min;
  let failed = 0;
  let filtered = 0;
  let anyPayload = false;
  let oneStatus = true;
  let oneAttempts = true;
  for (let k = 0; k < n; k++) {
    const e = events[k]!;
    ids[k] = e.id;
    const at = e.occurred_at;
    times[k] = at;
    if (at < min) min = at;
    if (at > max) max = at;
    let t = typeIndex.get(e.type);
    if (t === undefined) typeIndex.set(e.type, (t = typeIndex.size));
    typeOf[k] = t;
    statuses[k] = e.status;
    attempts[k] = e.attempts;
    if (e.status !== statuses[0]) oneStatus = false;
    if (e.attempts !== attempts[0]) oneAttempts = false;
    if (e.status === 'dead_lettered') failed++;
    else if (e.status === 'filtered') filtered++;
    if (e.error || e.dead_lettered_at) errors.push([k, e.error ?? null, e.dead_lettered_at ?? null]);
    payloads[k] = e.payload;
    if (e.payload !== null) anyPayload = true;
  }
  const types = [...typeIndex.keys()];
  const inline = new Map<string, string>();
  if (types.length > 1) {
    const counts = new Array<number>(types.length).fill(0);
    for (const t of typeOf) counts[t]!++;
    for (let t = 0; t < types.length; t++) {
      if (counts[t]! * RARE_SHARE > n) continue;
      const copies: InlineEvents = [];
      for (let k = 0; k < n; k++) if (typeOf[k] === t) copies.push([k, events[k]!]);
      inline.set(types[t]!, JSON.stringify(copies));
    }
  }
  const body: UnitBody = { v: 1, i: ids, y: types, o: times, s: oneStatus && n > 0 ? statuses[0]! : statuses, a: oneAttempts && n > 0 ? attempts[0]! : attempts };
  if (types.length > 1) body.t = typeOf;
  if (errors.length > 0) body.e = errors;
  if (anyPayload) body.p = payloads;
  return { json: JSON.stringify(body), count: n, min_occurred_at: min, max_occurred_at: max, failed, filtered, types, inline };
}

/**
 * A unit's events, decoded from its stored body. Each is built only when asked for: a page
 * reads a few events of a unit.
 */
export class DecodedUnit {
  private readonly body: UnitBody;

  constructor(stored: Buffer | Uint8Array | string) {
    this.body = JSON.parse(typeof stored === 'string' ? stored : inflateRawSync(stored).toString('utf8')) as UnitBody;
    if (this.body.v !== 1) throw new Error(`unknown event-log unit version ${String(this.body.v)}`);
  }

  /** How many events the unit holds. */
  get length(): number {
    return this.body.i.length;
  }

  /** The index of the event `id`, or -1. */
  indexOf(id: string): number {
    return this.body.i.indexOf(id);
  }

  /** The event at `k`. */
  event(k: number): UnitEvent {
    const b = this.body;
    const failure = b.e?.find((f) => f[0] === k);
    return {
      id: b.i[k]!,
      type: b.y[b.t ? b.t[k]! : 0]!,
      occurred_at: b.o[k]!,
      payload: b.p ? (b.p[k] ?? null) : null,
      status: typeof b.s === 'string' ? b.s : b.s[k]!,
      attempts: typeof b.a === 'number' ? b.a : b.a[k]!,
      error: failure ? failure[1] : null,
      dead_lettered_at: failure ? failure[2] : null,
    };
  }

  /** The type of the event at `k`, without building it. */
  typeAt(k: number): string {
    return this.body.y[this.body.t ? this.body.t[k]! : 0]!;
  }

  /** The `occurred_at` of the event at `k`, without building it. */
  occurredAt(k: number): string {
    return this.body.o[k]!;
  }
}

/** A unit's JSON body compressed for storage (raw deflate, level 1: fast, and most of the gain). */
export function compressUnit(json: string): Buffer {
  return deflateRawSync(json, { level: 1 });
}

const deflateRawAsync = promisify(deflateRaw);

/** {@link compressUnit} on libuv's thread pool: the engine's event loop goes on meanwhile (about 0.5 ms a unit of 1,000 events). */
export function compressUnitOffThread(json: string): Promise<Buffer> {
  return deflateRawAsync(json, { level: 1 });
}

/** The ULID form of an event id: `evt_`, then 26 Crockford base-32 characters, the first one 0-7. */
const ULID_ID = /^evt_[0-7][0-9A-HJKMNP-TV-Z]{25}$/;
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
/** Each Crockford character's value, by character code. */
const DIGIT = new Uint8Array(128);
for (let v = 0; v < CROCKFORD.length; v++) DIGIT[CROCKFORD.charCodeAt(v)] = v;

/**
 * The key an event id is found by (`event_keys`, or `keys` on Postgres): a 53-bit integer, exact
 * in a JavaScript number. For an id in ULID form, its first 11 characters: the record's time to
 * the millisecond (ids of a stream then grow, and their keys are appended at the end of the index
 * rather than spread over it) and 5 bits of the hash. Otherwise 52 bits of the id's SHA-1. Two
 * ids may share a key: a lookup reads each unit that has the key and looks for the id itself.
 */
export function eventKey(id: string): number {
  if (ULID_ID.test(id)) {
    let key = 0;
    for (let k = 4; k < 15; k++) key = key * 32 + DIGIT[id.charCodeAt(k)]!;
    return key;
  }
  return Number.parseInt(hash('sha1', id, 'hex').slice(0, 13), 16);
}

/** The widest span of keys a unit is found by without its keys: an hour of ULID time (keys count 32 per ms). */
export const NARROW_KEY_SPAN = 32 * 3_600_000;

/**
 * How Postgres finds a unit by an event's key: by the span of its keys, one GiST entry a unit,
 * when that span is narrow (ids in ULID form from an hour of time or less: a stream's batch);
 * otherwise by every key (`keys`, in a GIN index). A GIN entry per event cost 52 bytes an event
 * (1,000,000 events); the span costs a few bytes a unit, and a lookup reads the one or two units
 * whose span holds the key.
 */
export function keyLookup(keys: readonly number[]): { min_key: number; max_key: number; keys: number[] | null } {
  let min = keys[0] ?? 0;
  let max = min;
  for (const k of keys) {
    if (k < min) min = k;
    if (k > max) max = k;
  }
  return { min_key: min, max_key: max, keys: max - min <= NARROW_KEY_SPAN ? null : [...keys] };
}

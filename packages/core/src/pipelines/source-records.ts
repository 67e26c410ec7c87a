import type { JsonObject, SourceRecord, TransformEvent } from '../plugin-api/index.js';
import { deriveEventId } from '../events/index.js';
import type { WorkItem } from './event-processor.js';

/**
 * A source batch's records as the events the transform steps see: each with its id (derived from
 * the pipeline and the record's position, so a re-read gives the same id) and its time.
 *
 * @param readAtMs - when the batch was read: the time of a record without one of its own (or
 *   with an invalid one).
 */
export function toWorkItems(pipelineId: string, records: readonly SourceRecord[], readAtMs: number): WorkItem[] {
  const readAt = new Date(readAtMs).toISOString();
  const items: WorkItem[] = new Array(records.length);
  // Records of one transaction or one file share their time: it is parsed once for a run of them.
  let lastTime: SourceRecord['occurredAt'];
  let lastOwn: { iso: string; ms: number } | undefined;
  const minutes = new MinuteCache();
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!;
    if (i === 0 || r.occurredAt !== lastTime || typeof lastTime !== 'string') {
      lastTime = r.occurredAt;
      lastOwn = recordTime(lastTime, minutes);
    }
    const own = lastOwn;
    const event: TransformEvent = {
      // Only a time the source reports goes into the id: the read time would differ on a re-read.
      id: deriveEventId(pipelineId, r.position, own?.ms),
      type: r.type,
      occurredAt: own?.iso ?? readAt,
      payload: r.payload as JsonObject,
    };
    items[i] = { event, fromStep: 0, attemptsBefore: 0 };
  }
  return items;
}

/**
 * The ms of the minute a run of canonical times starts with (`2026-01-01T10:00`), parsed once:
 * a batch's records are mostly of a few minutes, and `Date.parse` of each record's time cost
 * about a twelfth of a Postgres-to-Postgres pipeline's CPU.
 */
class MinuteCache {
  private prefix = '';
  private ms = 0;

  /** The ms of a time in the stored spelling (see {@link canonicalUtc}). */
  of(value: string): number {
    if (this.prefix === '' || !value.startsWith(this.prefix)) {
      this.prefix = value.slice(0, 16);
      this.ms = Date.parse(`${this.prefix}:00.000Z`);
    }
    const seconds = (value.charCodeAt(17) - 48) * 10 + value.charCodeAt(18) - 48;
    const millis = (value.charCodeAt(20) - 48) * 100 + (value.charCodeAt(21) - 48) * 10 + value.charCodeAt(22) - 48;
    return this.ms + seconds * 1000 + millis;
  }
}

/** A record's own time as stored (ISO 8601 UTC with milliseconds) and in ms; undefined when it has none or an invalid one. */
function recordTime(value: string | Date | undefined, minutes: MinuteCache): { iso: string; ms: number } | undefined {
  if (value instanceof Date) {
    const ms = value.getTime();
    return Number.isNaN(ms) ? undefined : { iso: value.toISOString(), ms };
  }
  if (typeof value !== 'string') return undefined;
  // UTC to the second or finer (the common cases: the stored spelling, a database's timestamptz
  // to the second or the microsecond): spelled and read by arithmetic.
  const canonical = canonicalUtc(value);
  if (canonical !== undefined) return { iso: canonical, ms: minutes.of(canonical) };
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) return undefined;
  // Re-spelled, which also turns a February 30th or a 24:00 (Date.parse accepts both) into the real date.
  return { iso: new Date(ms).toISOString(), ms };
}

const CANONICAL = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$/;

/** UTC to the second, with any number of fraction digits: `2026-01-01T10:00:02Z`, `...02.123456Z`. */
const UTC_SECONDS = /^(\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d)(?:\.(\d{1,9}))?Z$/;

/**
 * `value` in the stored spelling (ISO 8601 UTC with milliseconds) when it is a UTC time to the
 * second or finer on a day its month has; undefined for anything else (an offset, a day a month
 * lacks), which Date.parse reads. Digits past the millisecond are dropped, as Date.parse drops them.
 */
function canonicalUtc(value: string): string | undefined {
  if (value.length === 24 && CANONICAL.test(value)) return dayExists(value) ? value : undefined;
  const m = UTC_SECONDS.exec(value);
  if (m === null || !dayExists(value)) return undefined;
  const fraction = m[2];
  return `${m[1]!}.${fraction === undefined ? '000' : fraction.length >= 3 ? fraction.slice(0, 3) : fraction.padEnd(3, '0')}Z`;
}

/**
 * Whether the day of a time that starts `YYYY-MM-DD` (day 01 to 31, month 01 to 12) is one its
 * month has: Date.parse takes a February 30th and rolls it over.
 */
function dayExists(value: string): boolean {
  const day = (value.charCodeAt(8) - 48) * 10 + value.charCodeAt(9) - 48;
  if (day <= 28) return true;
  const month = (value.charCodeAt(5) - 48) * 10 + value.charCodeAt(6) - 48;
  if (month !== 2) return day <= (month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31);
  const year = Number(value.slice(0, 4));
  return day === 29 && year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
}

// ISO 8601 extended format: a date, optionally a time (minutes, seconds and a fraction optional)
// and an offset. A space is accepted for the `T`, as RFC 3339 and most databases print it.
const ISO_8601 =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?([Zz]|([+-])(\d{2}):?(\d{2}))?)?$/;

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

const pad = (n: string | undefined, width = 2): string => (n ?? '').padEnd(width, '0').slice(0, width);

/**
 * Parses an ISO 8601 string to epoch milliseconds, or `NaN` when it is not one or names no real
 * instant. The fields are range-checked here because `Date` rolls `02-30` over to March and
 * `24:00` over to the next day (a filter or an event time would silently move), and the string
 * is rebuilt in the exact format ECMAScript specifies, so the result does not depend on the
 * engine's lenient fallback parser. A date-time without an offset is taken as UTC, not the
 * server's local time: every timestamp in the API is UTC, and a result that changed with the
 * host's time zone would be a bug.
 */
export function parseIsoTimestamp(text: string): number {
  const m = ISO_8601.exec(text);
  if (!m) return Number.NaN;
  const [, year, month, day, hour = '00', minute = '00', second = '00', fraction, zone, sign, offH, offM] = m;
  const y = Number(year);
  const mo = Number(month);
  const d = Number(day);
  const daysInMonth = mo === 2 && isLeap(y) ? 29 : DAYS_IN_MONTH[mo - 1];
  if (daysInMonth === undefined || d < 1 || d > daysInMonth) return Number.NaN;
  if (Number(hour) > 23 || Number(minute) > 59 || Number(second) > 59) return Number.NaN;
  if (sign !== undefined && (Number(offH) > 23 || Number(offM) > 59)) return Number.NaN;
  const offset = zone === undefined || sign === undefined ? 'Z' : `${sign}${offH}:${offM}`;
  // Fractions beyond milliseconds are truncated, as `Date` does.
  return Date.parse(`${year}-${month}-${day}T${hour}:${minute}:${second}.${pad(fraction, 3)}${offset}`);
}

function isLeap(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

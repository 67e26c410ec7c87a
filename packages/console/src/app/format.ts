/** How the console writes times, durations and counts. */

const relative = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });
const number = new Intl.NumberFormat('en');

/** `3 min ago`, `in 5 s`; empty for null. */
export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '';
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return iso;
  const seconds = Math.round((ms - now) / 1000);
  const abs = Math.abs(seconds);
  if (abs < 60) return relative.format(seconds, 'second');
  if (abs < 3600) return relative.format(Math.round(seconds / 60), 'minute');
  if (abs < 86400) return relative.format(Math.round(seconds / 3600), 'hour');
  return relative.format(Math.round(seconds / 86400), 'day');
}

/** `2026-11-26 19:04:05 UTC`: times are shown in UTC, as the API gives and filters them. */
export function utc(iso: string | null | undefined): string {
  if (!iso) return '';
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
}

/** `19:04:05 UTC`: the time of day of `ms` (epoch milliseconds), as the page says when it read something. */
export function timeOfDay(ms: number): string {
  return `${new Date(ms).toISOString().slice(11, 19)} UTC`;
}

/** `850 ms`, `12.4 s`, `3 min 5 s`. */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const seconds = Math.round(ms / 1000);
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
}

/** A run's duration, from its start to its end (or to now while it runs). */
export function runDuration(run: { started_at: string | null; finished_at: string | null }): string {
  if (!run.started_at) return '';
  return duration((run.finished_at ? Date.parse(run.finished_at) : Date.now()) - Date.parse(run.started_at));
}

/** `12,345`. */
export function count(n: number | null | undefined): string {
  return n === null || n === undefined ? '' : number.format(n);
}

/** A datetime-local input's value (read as UTC) as the API's ISO form, or '' when empty or invalid. */
export function isoFromInput(value: string): string {
  if (!value) return '';
  const ms = Date.parse(`${value.length === 16 ? `${value}:00` : value}Z`);
  return Number.isNaN(ms) ? '' : new Date(ms).toISOString();
}

/** An ISO time as a datetime-local input's value, in UTC. */
export function inputFromIso(iso: string | null | undefined): string {
  if (!iso) return '';
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? '' : new Date(ms).toISOString().slice(0, 19);
}

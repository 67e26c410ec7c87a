import { CronTime } from 'cron';
import { FerryError } from '../common/index.js';

/** The fields of a cron expression, in order, with what each accepts (6-field form). */
const FIELDS = [
  { name: 'second', range: '0-59' },
  { name: 'minute', range: '0-59' },
  { name: 'hour', range: '0-23' },
  { name: 'day-of-month', range: '1-31' },
  { name: 'month', range: '1-12 or JAN-DEC' },
  { name: 'day-of-week', range: '0-7 or SUN-SAT' },
] as const;

/** True when the cron library can compute a fire time for `expression`. */
function fires(expression: string): boolean {
  try {
    new CronTime(expression, 'UTC').sendAt();
    return true;
  } catch {
    return false;
  }
}

/**
 * Validates a pipeline schedule: a 5-field (minute) or 6-field (second first) cron expression,
 * evaluated in UTC, that fires at least once. Anything else is 422 `invalid_schedule`, with a
 * reason in Ferry's own words (the field at fault and what it accepts), never the cron
 * library's message, which changes between its releases and speaks of its internals.
 * Aliases such as `@daily` are refused so that a schedule always reads as plain cron.
 */
export function assertSchedule(expression: string): void {
  const fields = expression.trim().split(/\s+/);
  const fail = (why: string) => new FerryError('invalid_schedule', `Invalid schedule ${JSON.stringify(expression.slice(0, 200))}: ${why}.`);
  if (fields.length !== 5 && fields.length !== 6) throw fail('a schedule is a 5- or 6-field cron expression (minute hour day-of-month month day-of-week, with an optional second first)');
  if (fires(expression)) return;
  const names = fields.length === 6 ? FIELDS : FIELDS.slice(1);
  // Each field alone, the others `*`: the first one the library refuses is the one at fault.
  for (const [i, field] of names.entries()) {
    const alone = names.map((_, j) => (j === i ? fields[i]! : '*')).join(' ');
    if (!fires(alone)) {
      throw fail(`the ${field.name} field ${JSON.stringify(fields[i]!.slice(0, 50))} is not valid (it takes ${field.range}, \`*\`, lists, ranges and \`/\` steps)`);
    }
  }
  throw fail('it never fires (no date matches its day-of-month and month together)');
}

/** The first fire time of `expression` strictly after `afterMs` (UTC milliseconds). */
export function nextFireAfter(expression: string, afterMs: number): number {
  const time = new CronTime(expression, 'UTC');
  return time.getNextDateFrom(new Date(afterMs), 'UTC').toMillis();
}

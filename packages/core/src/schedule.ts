import { CronTime } from 'cron';
import { FerryError } from './errors.js';

/**
 * Validates a pipeline schedule: a 5-field (minute) or 6-field (second first) cron expression,
 * evaluated in UTC, that fires at least once. Anything else is 422 `invalid_schedule`.
 * Aliases such as `@daily` are refused so that a schedule always reads as plain cron.
 */
export function assertSchedule(expression: string): void {
  const fields = expression.trim().split(/\s+/);
  const fail = (why: string) => new FerryError('invalid_schedule', `Invalid schedule ${JSON.stringify(expression)}: ${why}.`);
  if (fields.length !== 5 && fields.length !== 6) throw fail('a schedule is a 5- or 6-field cron expression');
  try {
    // Computing one fire time also catches expressions that parse but never fire (Feb 31st).
    new CronTime(expression, 'UTC').sendAt();
  } catch (error) {
    throw fail(String((error as Error).message).split('\n')[0]!.trim());
  }
}

/** The first fire time of `expression` strictly after `afterMs` (UTC milliseconds). */
export function nextFireAfter(expression: string, afterMs: number): number {
  const time = new CronTime(expression, 'UTC');
  return time.getNextDateFrom(new Date(afterMs), 'UTC').toMillis();
}

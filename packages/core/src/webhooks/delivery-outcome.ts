import type { DeliveryStatus } from '../common/index.js';
import type { OutboundResult } from '../net/index.js';
import type { AttemptOutcome, DeliveryAttemptRow, DeliveryRow } from '../storage/index.js';
import type { DeliveryOptions } from './delivery-options.js';
import { nextAttemptAt, parseRetryAfter } from './delivery-schedule.js';

const iso = (ms: number) => new Date(ms).toISOString();

/** What one attempt did to its subscription: a success, a failure, or a 410 (the endpoint is gone). */
export type AttemptEffect = 'success' | 'failure' | 'gone';

/** What one attempt's result means: its attempt row, the delivery's next state, and its effect on the subscription. */
export interface AttemptVerdict {
  attempt: DeliveryAttemptRow;
  next: AttemptOutcome;
  effect: AttemptEffect;
}

/**
 * What an attempt's result means for the delivery (docs/api.md, Webhook delivery): a 2xx delivers it; a 410
 * fails it and disables the subscription; anything else is retried on the schedule (honouring a
 * 429's or 503's `Retry-After`) until the retry window is over, then fails it.
 *
 * @param token - the claim the delivery is held under: its next state is written only while it holds.
 * @param attemptId - the id of the attempt row.
 */
export function attemptVerdict(
  row: DeliveryRow,
  token: string,
  result: OutboundResult,
  at: { startedAt: number; endedAt: number },
  options: Pick<DeliveryOptions, 'responseBodyBytes' | 'timeoutMs' | 'scheduleMs' | 'jitter'>,
  attemptId: string,
): AttemptVerdict {
  const { startedAt, endedAt } = at;
  const attempts = row.attempts + 1;
  let status: number | null = null;
  let body: string | null = null;
  let error: string | null = null;
  let retryAfterMs: number | undefined;
  let effect: AttemptEffect = 'failure';
  switch (result.kind) {
    case 'response':
      status = result.status;
      body = truncateUtf8(result.body, options.responseBodyBytes);
      if (status >= 200 && status < 300) effect = 'success';
      else if (status === 410) {
        effect = 'gone';
        error = 'HTTP 410: the endpoint is gone; the subscription was disabled.';
      } else if (status >= 300 && status < 400) error = `HTTP ${status}: redirects are not followed.`;
      else error = `HTTP ${status}.`;
      if (status === 429 || status === 503) retryAfterMs = parseRetryAfter(result.headers['retry-after'], endedAt);
      break;
    case 'timeout':
      error = `No response within ${options.timeoutMs / 1000} s.`;
      break;
    case 'blocked':
      error = `Refused by the outbound policy: ${result.reason}`;
      break;
    case 'network':
      error = `Connection failed (${result.code}).`;
      break;
  }
  // A cycle's T+0 is its first attempt, not the delivery's creation: a backlog (an engine that
  // was down, a burst) must not eat into the receiver's 24 hours.
  const cycleStart = row.attempts === 0 ? startedAt : Date.parse(row.cycle_started_at);
  let state: DeliveryStatus = effect === 'success' ? 'delivered' : 'failed';
  let nextAt: number | null = null;
  if (effect === 'failure') {
    nextAt = nextAttemptAt(cycleStart, attempts, { startedAt, endedAt }, options, retryAfterMs);
    if (nextAt !== null) state = 'retrying';
  }
  const next: AttemptOutcome = {
    id: row.id,
    token,
    status: state,
    attempts,
    cycle_started_at: iso(cycleStart),
    last_attempt_at: iso(startedAt),
    last_response_status: status,
    last_error: error,
    next_attempt_at: nextAt === null ? null : iso(nextAt),
    updated_at: iso(endedAt),
  };
  const attempt: DeliveryAttemptRow = {
    id: attemptId,
    delivery_id: row.id,
    workspace_id: row.workspace_id,
    attempted_at: iso(startedAt),
    response_status: status,
    duration_ms: Math.max(0, endedAt - startedAt),
    response_body: body,
    error,
  };
  return { attempt, next, effect };
}

/**
 * At most `bytes` bytes of `text` in UTF-8, never splitting a character, with NUL characters
 * replaced: a receiver may answer anything, and Postgres text refuses NUL (one such body would
 * fail the whole batch of outcomes it is recorded with).
 */
function truncateUtf8(text: string, bytes: number): string {
  const buffer = Buffer.from(text, 'utf8');
  const cut = buffer.length <= bytes ? text : buffer.subarray(0, bytes).toString('utf8').replace(/\uFFFD$/, '');
  return cut.replaceAll('\u0000', '\uFFFD');
}

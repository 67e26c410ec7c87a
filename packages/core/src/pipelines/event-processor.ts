import { sleep, type Clock } from '../common/index.js';
import type { Destination, DestinationEvent, TransformEvent } from '../plugin-api/index.js';
import { backoffDelay, type BackoffPolicy } from '../queue/index.js';
import { describeEventError, FlowError, toFlowError } from './flow-error.js';
import type { TransformChain } from './transform-chain.js';

/** One event to take through the steps and the destination. */
export interface WorkItem {
  event: TransformEvent;
  /** Index of the first step to run; `chain.length` sends it straight to the destination (a replay of a destination failure). */
  fromStep: number;
  /** Attempts already spent on it (replays carry their past ones). */
  attemptsBefore: number;
}

/** What became of one event. */
export type ItemResult =
  | { status: 'delivered'; event: TransformEvent; attempts: number }
  | { status: 'filtered'; event: TransformEvent; attempts: number }
  | {
      status: 'dead_lettered';
      /** The event as it entered the stage that failed: what a replay starts from. */
      event: TransformEvent;
      attempts: number;
      stage: string;
      code: string;
      message: string;
    };

/** What the processor needs from the pipeline it works for. */
export interface ProcessorDeps {
  chain: TransformChain;
  destination: Destination;
  maxAttempts: number;
  clock: Clock;
  /** Backoff between attempts of a record the destination refused with a retryable error. */
  recordRetry: BackoffPolicy;
  scrub: (text: string) => string;
}

/**
 * Takes events through the transform steps and the destination, isolating per-event failures:
 * a step that throws or a record the destination refuses is tried again (up to `maxAttempts`)
 * and then dead-lettered at its stage, while the other events go on. A destination failure of
 * the whole batch (unreachable, throttled) is thrown as a {@link FlowError}: the caller holds
 * the flow and tries the batch again, so nothing is dead-lettered for an outage.
 */
export async function processItems(items: readonly WorkItem[], deps: ProcessorDeps, signal: AbortSignal): Promise<ItemResult[]> {
  const results: ItemResult[] = new Array(items.length);
  const pending: { index: number; event: TransformEvent; attempts: number }[] = [];
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    if (item.fromStep >= deps.chain.length) {
      pending.push({ index: i, event: item.event, attempts: item.attemptsBefore });
      continue;
    }
    const outcome = await deps.chain.apply(item.event, item.fromStep, deps.maxAttempts);
    if (outcome.kind === 'passed') pending.push({ index: i, event: outcome.event, attempts: item.attemptsBefore });
    else if (outcome.kind === 'filtered') results[i] = { status: 'filtered', event: outcome.event, attempts: item.attemptsBefore + 1 };
    else {
      const { code, message } = describeEventError(outcome.error, 'transform_failed', deps.scrub);
      results[i] = { status: 'dead_lettered', event: outcome.event, attempts: item.attemptsBefore + outcome.attempts, stage: `transform:${outcome.step}`, code, message };
    }
  }

  let round = 0;
  let toWrite = pending;
  while (toWrite.length > 0) {
    round++;
    const events: DestinationEvent[] = toWrite.map((p) => p.event);
    let written;
    try {
      written = await deps.destination.write(events, signal);
    } catch (error) {
      throw toFlowError('destination', error, deps.scrub);
    }
    if (!Array.isArray(written) || written.length !== events.length) {
      throw new FlowError('destination', 'invalid_write_result', `The destination returned ${Array.isArray(written) ? written.length : 'no'} results for ${events.length} events.`, false);
    }
    const again: typeof toWrite = [];
    let retryableRefusal = false;
    for (let k = 0; k < toWrite.length; k++) {
      const p = toWrite[k]!;
      const result = written[k]!;
      const attempts = p.attempts + 1;
      if (result.ok) {
        results[p.index] = { status: 'delivered', event: p.event, attempts };
        continue;
      }
      if (attempts - (items[p.index]!.attemptsBefore) < deps.maxAttempts) {
        again.push({ ...p, attempts });
        retryableRefusal ||= result.error?.retryable === true;
        continue;
      }
      const { code, message } = describeEventError(result.error, 'record_rejected', deps.scrub);
      results[p.index] = { status: 'dead_lettered', event: p.event, attempts, stage: 'destination', code, message };
    }
    // A refusal that may pass later (throttling of one record) gets time; a plain rejection is
    // tried again at once: waiting would not change the verdict, only hold the batch.
    if (again.length > 0 && retryableRefusal) await sleep(deps.clock, backoffDelay(deps.recordRetry, round), signal);
    toWrite = again;
  }
  return results;
}

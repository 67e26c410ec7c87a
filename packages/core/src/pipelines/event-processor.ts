import { inSpan, sleep, type Clock, type SpanFailure, type TraceContext } from '../common/index.js';
import type { Destination, DestinationEvent, TransformEvent, WriteResult } from '../plugin-api/index.js';
import { backoffDelay, type BackoffPolicy } from '../queue/index.js';
import type { ItemResult, WorkItem } from '../events/index.js';
import { describeEventError, FlowError, toFlowError } from './flow-error.js';

export type { ItemResult, WorkItem };
import type { TransformChain } from './transform-chain.js';

/** What the processor needs from the pipeline it works for. */
export interface ProcessorDeps {
  chain: TransformChain;
  destination: Destination;
  maxAttempts: number;
  clock: Clock;
  /** Backoff between attempts of a record the destination refused with a retryable error. */
  recordRetry: BackoffPolicy;
  scrub: (text: string) => string;
  /** The batch's span: the transform and write spans are its children (default: the active context). */
  trace?: TraceContext;
  /** Most events in one call of the destination's `write` (default: all of them at once). */
  maxWrite?: number;
  /**
   * Results carried from earlier attempts at the same items, by index: an event `delivered`
   * there is not transformed or written again (the destination has it), and those delivered in
   * this attempt are added, so an attempt cut short by a failure of the whole batch does not
   * send them twice. Every other event is decided afresh, with the steps of this attempt.
   */
  carried?: Array<ItemResult | undefined>;
  /**
   * The events handed to the destination's `prepare` ahead of this batch: when the first write
   * is of exactly these events (the same objects, in order), it is given this very array, which
   * is how the destination finds what it prepared.
   */
  prepared?: readonly DestinationEvent[];
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
  const carried = deps.carried;
  const done = (i: number) => carried?.[i]?.status === 'delivered';
  if (carried) for (let i = 0; i < items.length; i++) if (done(i)) results[i] = carried[i]!;
  const pending: { index: number; event: TransformEvent; attempts: number }[] = [];
  if (deps.chain.length > 0) {
    await inSpan('ferry.pipeline.transform', { 'ferry.batch.records': items.length, 'ferry.transform.steps': deps.chain.length }, deps.trace, () => transformAll(items, deps, results, pending, done), unexpected);
  } else {
    for (let i = 0; i < items.length; i++) if (!done(i)) pending.push({ index: i, event: items[i]!.event, attempts: items[i]!.attemptsBefore });
  }
  const size = Math.max(1, deps.maxWrite ?? pending.length);
  for (let start = 0; start < pending.length; start += size) {
    await writeChunk(pending.slice(start, start + size), items, deps, results, signal);
    if (carried) for (let k = start; k < Math.min(start + size, pending.length); k++) carried[pending[k]!.index] = results[pending[k]!.index];
  }
  return results;
}

/**
 * Writes one chunk of events, in rounds: records the destination refuses are tried again up to
 * `maxAttempts`, then dead-lettered at the stage `destination`; their results go into `results`.
 */
async function writeChunk(pending: { index: number; event: TransformEvent; attempts: number }[], items: readonly WorkItem[], deps: ProcessorDeps, results: ItemResult[], signal: AbortSignal): Promise<void> {
  let round = 0;
  let toWrite = pending;
  while (toWrite.length > 0) {
    round++;
    const events: readonly DestinationEvent[] = round === 1 && deps.prepared && sameEvents(deps.prepared, toWrite) ? deps.prepared : toWrite.map((p) => p.event);
    const written = await inSpan('ferry.pipeline.write', { 'ferry.batch.records': events.length, 'ferry.write.round': round }, deps.trace, () => writeAll(events, deps, signal), writeFailure);
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
}

/** Runs the steps over every item, in order; what passes joins `pending`, the rest gets its result. */
async function transformAll(
  items: readonly WorkItem[],
  deps: ProcessorDeps,
  results: ItemResult[],
  pending: { index: number; event: TransformEvent; attempts: number }[],
  done: (index: number) => boolean,
): Promise<void> {
  for (let i = 0; i < items.length; i++) {
    if (done(i)) continue;
    const item = items[i]!;
    if (item.fromStep >= deps.chain.length) {
      pending.push({ index: i, event: item.event, attempts: item.attemptsBefore });
      continue;
    }
    const applied = deps.chain.apply(item.event, item.fromStep, deps.maxAttempts);
    const outcome = applied instanceof Promise ? await applied : applied;
    if (outcome.kind === 'passed') pending.push({ index: i, event: outcome.event, attempts: item.attemptsBefore });
    else if (outcome.kind === 'filtered') results[i] = { status: 'filtered', event: outcome.event, attempts: item.attemptsBefore + 1 };
    else {
      const { code, message } = describeEventError(outcome.error, 'transform_failed', deps.scrub);
      results[i] = { status: 'dead_lettered', event: outcome.event, attempts: item.attemptsBefore + outcome.attempts, stage: `transform:${outcome.step}`, code, message };
    }
  }
}

/** Whether `prepared` holds exactly the events of `pending`, in order. */
function sameEvents(prepared: readonly DestinationEvent[], pending: readonly { event: TransformEvent }[]): boolean {
  if (prepared.length !== pending.length) return false;
  for (let k = 0; k < prepared.length; k++) if (prepared[k] !== pending[k]!.event) return false;
  return true;
}

/** One call of the destination's `write`, its failure of the whole batch as a {@link FlowError}. */
async function writeAll(events: readonly DestinationEvent[], deps: ProcessorDeps, signal: AbortSignal): Promise<WriteResult[]> {
  let written;
  try {
    written = await deps.destination.write(events, signal);
  } catch (error) {
    throw toFlowError('destination', error, deps.scrub);
  }
  if (!Array.isArray(written) || written.length !== events.length) {
    throw new FlowError('destination', 'invalid_write_result', `The destination returned ${Array.isArray(written) ? written.length : 'no'} results for ${events.length} events.`, false);
  }
  return written;
}

/** A write span's failure: the scrubbed flow error writeAll threw. */
function writeFailure(error: unknown): SpanFailure {
  return error instanceof FlowError ? { code: error.code, message: error.message } : unexpected();
}

/** Steps catch their own errors (each is an outcome); anything else is the engine's, described without its text. */
function unexpected(): SpanFailure {
  return { code: 'unexpected_error', message: 'The batch failed.' };
}

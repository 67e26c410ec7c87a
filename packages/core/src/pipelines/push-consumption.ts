import type { Clock } from '../common/index.js';
import type { Checkpoint, PushSource, SourceBatch } from '../plugin-api/index.js';
import { FlowStop, type FlowEnd } from './flow-error.js';

/** What consuming a push source needs of its pipeline flow; `Written` is a batch the destination took, not committed yet. */
export interface PushHost<Written> {
  readonly mode: 'until_caught_up' | 'continuous';
  readonly clock: Clock;
  /** Aborted when the flow is asked to stop. */
  readonly stopSignal: AbortSignal;
  /** The flow, whose `end` says how it ended: set along the way. */
  readonly flow: { end: FlowEnd };
  /** The signal a poke aborts (replaced at every poke). */
  wakeSignal(): AbortSignal;
  flushIntervalMs(): number;
  /** The last committed position: where a consumption starts. */
  checkpoint(): Checkpoint | null;
  source(): PushSource;
  /** What a poke does while the source is consumed (an idle push source has no wait to cut short); undefined to stop. */
  onPoke(fn: (() => void) | undefined): void;
  /** Whether the pipeline is still active, read from storage now. */
  isActive(): Promise<boolean>;
  /** Reads the pipeline and its connectors again (see `PipelineFlow.refresh`); false when it must end. */
  refresh(reopen: boolean): Promise<boolean>;
  /** Whether the source changed, or broke, while it was consumed: it must be opened again before the next consumption. */
  sourceStale(): boolean;
  /** Takes a batch through the steps and the destination. */
  write(batch: SourceBatch): Promise<Written>;
  /** Prepares a batch handed over while the one before is written (see `PipelineFlow.prepareSoon`). */
  prepare?(batch: SourceBatch): void;
  /** Commits a written batch behind the commit in flight, and makes it the commit in flight. */
  commitBehind(written: Promise<Written>, batch: SourceBatch): Promise<void>;
  /** The commit in flight, if any. */
  pending(): Promise<void> | undefined;
  /** The source broke: counts the failure and waits before the next consumption (or throws when the budget is spent). */
  sourceBroke(error: unknown, woken: AbortSignal): Promise<void>;
}

/**
 * Consumes a push source until the flow ends. Batches go through the steps and the destination
 * one at a time, in the order the source handed them over, and commit one at a time in that
 * order: a source that hands over the next batch before the last one's handler resolved (see
 * `PushSource`) has it written while the last one commits. A consumption is started again from
 * the last checkpoint when the source breaks or its connectors change.
 */
export async function consumePushSource<Written>(host: PushHost<Written>): Promise<FlowEnd> {
  const consuming = new AbortController();
  const onStop = () => consuming.abort(new FlowStop('stopped'));
  host.stopSignal.addEventListener('abort', onStop, { once: true });
  // An idle push source calls no handler: a pause or a deletion must still end the consumption,
  // and a change of the source's connector (a table added to capture) must still reopen it.
  host.onPoke(() => {
    void host.isActive().then(
      (active) => {
        if (active) {
          reopenIfChanged();
          return;
        }
        if (host.flow.end !== 'caught_up') host.flow.end = 'inactive';
        consuming.abort(new FlowStop('inactive'));
      },
      () => undefined,
    );
  });
  /**
   * Reads the connectors again, and starts the consumption again when the source's changed.
   * With batches in flight, once the last of them committed (`recheck`): the handler reads them
   * before each batch, but a stream that goes quiet after them would never hear of the change.
   * In line with the handler's writes (chained on `written`), never beside one.
   */
  let recheck = false;
  const reopenIfChanged = () => {
    if (inFlight > 0) {
      recheck = true;
      return;
    }
    // Fails only when the batch before it failed, as the handler's next write must then.
    const check = written.then(async () => {
      try {
        if (inFlight > 0 || !(await host.refresh(false))) return;
        if (host.sourceStale()) restart.abort(new FlowStop('reopen'));
      } catch {
        // Storage or a connector could not be read: the next batch's own refresh says so.
      }
    });
    check.catch(() => undefined);
    written = check;
  };
  // A run of a scheduled pipeline ends once the source has been quiet for a flush interval.
  let idle: { cancel(): void } | undefined;
  const armIdle = () => {
    idle?.cancel();
    if (host.mode !== 'until_caught_up') return;
    idle = host.clock.setTimeout(() => {
      host.flow.end = 'caught_up';
      consuming.abort(new FlowStop('caught up'));
    }, host.flushIntervalMs());
  };
  /** Aborted to end one consumption and start the next (the connectors changed). */
  let restart = new AbortController();
  /** The last batch handed over, up to its destination's acknowledgement: the next one waits for it. */
  let written: Promise<unknown> = Promise.resolve();
  /** Batches handed over and not committed yet: the idle timer runs only when there is none. */
  let inFlight = 0;
  const handler = (batch: SourceBatch): Promise<void> => {
    idle?.cancel();
    inFlight++;
    // Handed over while the batch before is still written: prepared meanwhile.
    if (inFlight > 1) host.prepare?.(batch);
    const prepared = written.then(async () => {
      if (!(await host.refresh(false))) {
        host.flow.end = host.stopSignal.aborted ? 'stopped' : 'inactive';
        consuming.abort(new FlowStop('inactive'));
        throw new FlowStop('inactive');
      }
      return host.write(batch);
    });
    // A batch that did not reach the destination stops the ones handed over after it.
    written = prepared;
    prepared.catch(() => undefined);
    // This commit starts only after the previous one succeeded, and not at all if it failed.
    return host.commitBehind(prepared, batch).then(
      () => {
        inFlight--;
        // The connectors changed: end this consumption after the committed batch and start again with them.
        if (host.sourceStale()) restart.abort(new FlowStop('reopen'));
        if (inFlight === 0) {
          armIdle();
          if (recheck) {
            recheck = false;
            reopenIfChanged();
          }
        }
      },
      (error: unknown) => {
        inFlight--;
        throw error;
      },
    );
  };
  try {
    for (;;) {
      armIdle();
      if (host.sourceStale() && !(await host.refresh(true))) {
        if (host.flow.end !== 'caught_up') host.flow.end = host.stopSignal.aborted ? 'stopped' : 'inactive';
        break;
      }
      // A consumption that ended with a batch still committing starts again after it.
      await host.pending()?.catch(() => undefined);
      restart = new AbortController();
      const woken = host.wakeSignal();
      try {
        await host.source().consume(host.checkpoint(), handler, AbortSignal.any([consuming.signal, restart.signal]));
        if (consuming.signal.aborted || !restart.signal.aborted) break;
      } catch (error) {
        if (consuming.signal.aborted) break;
        if (restart.signal.aborted) continue;
        if (error instanceof FlowStop) break;
        // The source itself broke (its connection dropped): count it and start it again from the
        // checkpoint, opened again if its connector changed meanwhile (the fix may be that change).
        await host.sourceBroke(error, woken);
      }
    }
  } finally {
    host.onPoke(undefined);
    idle?.cancel();
    host.stopSignal.removeEventListener('abort', onStop);
  }
  if (host.flow.end !== 'caught_up' && host.flow.end !== 'inactive') host.flow.end = 'stopped';
  return host.flow.end;
}


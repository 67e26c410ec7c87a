import { nowIso, transact, type EngineContext } from '../context/index.js';
import { runChanged } from './run-feed.js';
import { FerryError } from '../common/index.js';
import { recordResults, type ItemResult } from '../events/index.js';
import { isUniqueViolation, fencedCheckpointStep, type Fence, asEventUpsert, eventOutcomesStep, pipelineMinuteStep, runCountsStep, type PipelineMinuteRow, type WriterOrder, type WriterStep, type PipelineRow } from '../storage/index.js';
import type { Checkpoint } from '../plugin-api/index.js';
import { minuteStart } from './pipeline-stats.js';

/** The counters one batch adds to its run. */
export interface BatchCounts {
  events_read: number;
  events_written: number;
  events_filtered: number;
  events_dead_lettered: number;
}

/** Counts the outcomes of a batch. */
export function countResults(read: number, results: readonly ItemResult[]): BatchCounts {
  const counts: BatchCounts = { events_read: read, events_written: 0, events_filtered: 0, events_dead_lettered: 0 };
  for (const r of results) {
    if (r.status === 'delivered') counts.events_written++;
    else if (r.status === 'filtered') counts.events_filtered++;
    else counts.events_dead_lettered++;
  }
  return counts;
}

/**
 * The batch's addition to its pipeline's row of the commit minute (`pipelines.stats`), or
 * undefined for a batch that counts nothing (a checkpoint moved past no record): no statement
 * then. Counted whether or not the batch belongs to a run, since a chart of the last hour must
 * not depend on how the runs of a streaming pipeline are cut.
 */
function minuteRow(pipeline: PipelineRow, counts: BatchCounts, nowMs: number): PipelineMinuteRow | undefined {
  if (counts.events_read === 0 && counts.events_written === 0 && counts.events_filtered === 0 && counts.events_dead_lettered === 0) return undefined;
  return { pipeline_id: pipeline.id, workspace_id: pipeline.workspace_id, minute: minuteStart(nowMs), ...counts };
}

/**
 * A batch's outcomes, ready to commit. With a SQLite writer thread, the event-log rows are
 * serialized here, as the batch leaves the destination: that work then runs while the commit
 * before it does, instead of between that commit's end and this one's start (measured: 3 ms of
 * a 16 ms cycle per 1,000 events, during which the writer thread sat idle).
 */
export interface PreparedBatch {
  readonly results: readonly ItemResult[];
  /** The event-log rows as a writer-thread step; absent when the batch commits on the engine's connection. */
  readonly logStep?: WriterStep;
}

/** Prepares a batch's commit (see {@link PreparedBatch}). */
export function prepareBatch(ctx: EngineContext, pipeline: PipelineRow, results: readonly ItemResult[]): PreparedBatch {
  // A dead letter's `event.dead_lettered` goes through the outbox, on the engine's connection:
  // such a batch (rare) commits there whole.
  if (!ctx.storage.writer || results.some((r) => r.status === 'dead_lettered')) return { results };
  const outcomes = results.map((r) => ({ id: r.event.id, type: r.event.type, occurred_at: r.event.occurredAt, payload: r.event.payload, status: r.status, attempts: r.attempts }));
  // Times come from the flow, spelled canonically already.
  return { results, logStep: eventOutcomesStep({ workspace_id: pipeline.workspace_id, pipeline_id: pipeline.id, now: nowIso(ctx) }, outcomes, { canonicalTimes: true }) };
}

/**
 * Commits a batch in one transaction: its event-log rows, dead letters, the checkpoint after
 * it, the run's counters, the pipeline's counters of the commit minute (one upsert per batch,
 * see `PipelineMinutesRepo`) and the `event.dead_lettered` notifications. Refused (`lease_lost`)
 * when `fence` no longer holds the pipeline: an engine that lost its lease while paused (a GC
 * pause, a partition) must not move a checkpoint another engine now owns.
 *
 * SQLite on a file commits on its writer thread (see `SqliteWriterThread`), off the event loop.
 * Either way the event-log rows are first written as new ones (the cheapest way, see `fresh` in
 * `EventsRepo.upsertMany`); a batch of which some were written before (read again after a
 * crash) fails that transaction with a unique violation and is committed again as an upsert.
 */
export async function commitBatch(
  ctx: EngineContext,
  input: { pipeline: PipelineRow; runId: string | null; fence: Fence; batch: PreparedBatch; checkpoint: Checkpoint; counts: BatchCounts; order?: WriterOrder },
): Promise<void> {
  const nowMs = ctx.clock.now();
  const now = new Date(nowMs).toISOString();
  // The minute of this attempt's commit: a retried commit counts in the minute it lands in.
  const minute = minuteRow(input.pipeline, input.counts, nowMs);
  const writer = ctx.storage.writer;
  if (writer && input.batch.logStep && !ctx.currentTransaction.getStore()) {
    ctx.assertRunning();
    const rest: WriterStep[] = [fencedCheckpointStep(input.pipeline.id, input.checkpoint, input.runId, now, input.fence)];
    if (input.runId) rest.push(runCountsStep(input.runId, input.counts));
    if (minute) rest.push(pipelineMinuteStep(minute));
    const logStep = input.batch.logStep;
    await ctx.eventLog.record(input.pipeline.workspace_id, input.pipeline.id, input.batch.results, now, async () => {
      let outcome;
      try {
        outcome = await writer.transaction([logStep, ...rest], input.order);
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
        outcome = await writer.transaction([asEventUpsert(logStep), ...rest], input.order);
      }
      if (!outcome.committed) throw new FerryError('lease_lost', `The lease ${input.fence.name} was taken over; the batch is not committed.`);
    });
    if (input.runId) runChanged(ctx, { workspace_id: input.pipeline.workspace_id, pipeline_id: input.pipeline.id, id: input.runId });
    return;
  }
  const results = input.batch.results;
  const attempt = (fresh: boolean) =>
    transact(ctx, async (repos, emit) => {
      await recordResults(repos, emit, input.pipeline, results, now, fresh);
      // The fence is checked with the checkpoint's write, last: whatever was written before it
      // rolls back with the transaction when the lease is gone.
      if (!(await repos.checkpoints.putFenced(input.pipeline.id, input.checkpoint, input.runId, now, input.fence))) {
        throw new FerryError('lease_lost', `The lease ${input.fence.name} was taken over; the batch is not committed.`);
      }
      if (input.runId) await repos.runs.addCounts(input.runId, input.counts);
      if (minute) await repos.pipelineMinutes.add(minute);
    });
  await ctx.eventLog.record(input.pipeline.workspace_id, input.pipeline.id, results, now, async () => {
    try {
      await attempt(true);
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      await attempt(false);
    }
  });
  if (input.runId) runChanged(ctx, { workspace_id: input.pipeline.workspace_id, pipeline_id: input.pipeline.id, id: input.runId });
}

import type { PlatformEvent } from '../common/index.js';
import { newPlatformEvent, type EngineContext } from '../context/index.js';
import { deadLetteredNotice, deadLetterRow, eventRows, type ItemResult } from '../events/index.js';
import type { Checkpoint } from '../plugin-api/index.js';
import type { BatchCommits, QueuedCommit, DeadLetterRow, Fence, MinuteCounts, PipelineMinuteRow, PipelineRow } from '../storage/index.js';
import { minuteStart } from './pipeline-stats.js';
import { runChanged } from './run-feed.js';

/** The counters one batch adds to its run. */
export type BatchCounts = MinuteCounts;

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

/** A batch the destination took, as the flow hands it over to be committed. */
export interface BatchOutcome {
  /** The pipeline as the batch was written with it. */
  pipeline: PipelineRow;
  runId: string | null;
  fence: Fence;
  results: readonly ItemResult[];
  /** The source position after the batch. */
  checkpoint: Checkpoint;
  counts: BatchCounts;
}

/** Commits one batch in the place it took (see {@link BatchCommitter.queue}); called again after a failure. */
export type CommitBatch = (batch: BatchOutcome) => Promise<void>;

/**
 * A pipeline flow's commits, one per batch, in batch order: each batch's event-log rows, dead
 * letters, the checkpoint after it, its run's counters, its pipeline's counters of the commit
 * minute and its `event.dead_lettered` notifications in one transaction (storage's
 * `BatchCommits` decides where that runs), then what the engine publishes once it committed:
 * the notifications, the events to `engine.events$`, the run to `engine.runs$`.
 */
export class BatchCommitter {
  private readonly commits: BatchCommits;

  constructor(
    private readonly ctx: EngineContext,
    pipelineId: string,
  ) {
    this.commits = ctx.storage.batchCommits(pipelineId);
  }

  /**
   * Takes the next batch's place, after `after` (the commit of the batch before, if it may still
   * be running): the batch commits only once that one did, and fails with that one's error if it
   * failed. Returns the batch's commit.
   */
  queue(after: Promise<unknown> | undefined): CommitBatch {
    const commit = this.commits.queue(after);
    return (batch) => this.commit(batch, commit);
  }

  /** The flow ended: nothing more will be committed. */
  close(): void {
    this.commits.close();
  }

  private async commit(batch: BatchOutcome, commit: QueuedCommit): Promise<void> {
    const { ctx } = this;
    ctx.assertRunning();
    const { pipeline, results } = batch;
    // The time of this attempt: a retried commit counts in the minute it lands in.
    const nowMs = ctx.clock.now();
    const now = new Date(nowMs).toISOString();
    const deadLetters: DeadLetterRow[] = [];
    const notices: PlatformEvent[] = [];
    for (const r of results) {
      if (r.status !== 'dead_lettered') continue;
      deadLetters.push(deadLetterRow(pipeline, r, now));
      notices.push(newPlatformEvent(ctx, pipeline.workspace_id, 'event.dead_lettered', deadLetteredNotice(pipeline, r)));
    }
    // What the log keeps of the events' payloads: the pipeline's setting, for storage and `events$` alike.
    const payloads = pipeline.event_log.payloads;
    const record = () =>
      commit({
        workspaceId: pipeline.workspace_id,
        pipelineId: pipeline.id,
        runId: batch.runId,
        fence: batch.fence,
        events: eventRows(pipeline.workspace_id, pipeline.id, results, now, payloads),
        deadLetters,
        notices,
        checkpoint: batch.checkpoint,
        counts: batch.counts,
        minute: minuteRow(pipeline, batch.counts, nowMs),
        now,
      });
    await ctx.eventLog.record(pipeline.workspace_id, pipeline.id, results, now, record, payloads);
    if (notices.length > 0) {
      ctx.bus.publish(notices);
      // One line per batch, however many of its events were dead-lettered: the events listing and
      // the notifications hold each one.
      const first = deadLetters[0]!;
      ctx.logger.warn(
        { pipeline_id: pipeline.id, dead_lettered: deadLetters.length, event_id: first.event_id, stage: first.stage, code: (notices[0]!.data as { code?: string }).code },
        deadLetters.length === 1 ? 'event dead-lettered' : 'events dead-lettered',
      );
    }
    if (batch.runId) runChanged(ctx, { workspace_id: pipeline.workspace_id, pipeline_id: pipeline.id, id: batch.runId });
  }
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

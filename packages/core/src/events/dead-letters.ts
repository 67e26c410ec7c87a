import { FerryError, notFound } from '../common/index.js';
import { nowIso, transact, type EngineContext, type Emit } from '../context/index.js';
import type { JsonObject } from '../plugin-api/index.js';
import type { DeadLettered, ItemResult, WorkItem } from './event-outcome.js';
import { eventRows } from './event-rows.js';
import type { DeadLetterRow, EventRow, PipelineRow, Repositories } from '../storage/index.js';

/**
 * Dead letters: the events that exhausted their attempts, kept as they entered the stage that
 * failed (`transform:<index>` or `destination`), so that a replay starts from there. This file
 * holds their whole life: recorded with their batch and announced (`event.dead_lettered`),
 * requested for replay (one, or in bulk), turned back into work from their stage, and their
 * replay's outcome committed. The {@link ReplayWorker} runs the replays.
 */

/** The dead letter of an event that exhausted its attempts: the event as it entered the stage that failed. */
export function deadLetterRow(pipeline: Pick<PipelineRow, 'id' | 'workspace_id'>, r: DeadLettered, now: string): DeadLetterRow {
  return {
    event_id: r.event.id,
    workspace_id: pipeline.workspace_id,
    pipeline_id: pipeline.id,
    stage: r.stage,
    record: { id: r.event.id, type: r.event.type, occurred_at: r.event.occurredAt, payload: r.event.payload },
    replay_requested_at: null,
    created_at: now,
  };
}

/** The data of the `event.dead_lettered` notification of a dead letter. */
export function deadLetteredNotice(pipeline: Pick<PipelineRow, 'id'>, r: DeadLettered): JsonObject {
  return { pipeline_id: pipeline.id, event_id: r.event.id, stage: r.stage, code: r.code };
}

/** Writes the dead letters among a batch's results and announces each, inside the caller's transaction. */
export async function recordDeadLetters(repos: Repositories, emit: Emit, pipeline: PipelineRow, results: readonly ItemResult[], now: string): Promise<void> {
  for (const r of results) {
    if (r.status !== 'dead_lettered') continue;
    await repos.events.putDeadLetter(deadLetterRow(pipeline, r, now));
    emit(pipeline.workspace_id, 'event.dead_lettered', deadLetteredNotice(pipeline, r));
  }
}

/**
 * Requests the replay of one dead-lettered event: it turns `replaying` and its dead letter is
 * marked requested. Any other status is 409 `event_not_dead_lettered` with `current_status`.
 * Returns the event row as it now is.
 */
export async function requestReplay(repos: Repositories, workspaceId: string, eventId: string, now: string): Promise<EventRow> {
  const row = await repos.events.get(workspaceId, eventId);
  if (!row) throw notFound('event', eventId);
  const replayed = row.status === 'dead_lettered' && (await repos.events.updateStatus(workspaceId, eventId, { status: 'replaying', updated_at: now }, 'dead_lettered'));
  if (!replayed) {
    throw new FerryError('event_not_dead_lettered', `Only dead-lettered events can be replayed; this one is ${row.status}.`, { currentStatus: row.status });
  }
  const letter = await repos.events.getDeadLetter(eventId);
  if (letter) await repos.events.putDeadLetter({ ...letter, replay_requested_at: now });
  return { ...row, status: 'replaying', updated_at: now };
}

/**
 * Records the new outcome of replayed events in the event log, and their dead letters (announced),
 * inside the caller's transaction.
 */
export async function recordResults(repos: Repositories, emit: Emit, pipeline: PipelineRow, results: readonly ItemResult[], now: string): Promise<void> {
  // Times come from the stored dead letter, spelled canonically already.
  await repos.events.settle(eventRows(pipeline.workspace_id, pipeline.id, results, now), { canonicalTimes: true });
  await recordDeadLetters(repos, emit, pipeline, results, now);
}

/**
 * A dead letter as work for the pipeline's current steps: from the step that failed (with the
 * steps as they are now), or straight to the destination when that is what failed.
 *
 * @param stepCount - how many steps the pipeline has now.
 * @param attemptsBefore - the attempts the event already had.
 */
export function replayItem(letter: DeadLetterRow, stepCount: number, attemptsBefore: number): WorkItem {
  return {
    event: { id: letter.event_id, type: String(letter.record.type), occurredAt: String(letter.record.occurred_at), payload: letter.record.payload as JsonObject },
    fromStep: letter.stage === 'destination' ? stepCount : Math.min(stepCount, Number(letter.stage.slice('transform:'.length)) || 0),
    attemptsBefore,
  };
}

/**
 * Commits replayed events: their new outcome in the event log, and their dead letters removed
 * (delivered, filtered) or replaced (failed again, at the stage where it failed this time). Each
 * dead letter is compare-and-set on the replay lease `token`; if another engine took one over,
 * the whole commit is refused (`lease_lost`) and that engine's outcome stands.
 */
export async function commitReplay(ctx: EngineContext, input: { pipeline: PipelineRow; token: string; results: readonly ItemResult[] }): Promise<void> {
  const now = nowIso(ctx);
  await ctx.eventLog.record(input.pipeline.workspace_id, input.pipeline.id, input.results, now, () =>
    transact(ctx, async (repos, emit) => {
      for (const r of input.results) {
        // Ends the lease and the request; a dead letter of a replay that failed again is rewritten below.
        const held = await repos.events.replays.complete(r.event.id, input.token, { replay_requested_at: null }, ctx.clock.now());
        if (!held) throw new FerryError('lease_lost', `The replay of ${r.event.id} was taken over; its outcome is not committed.`);
        if (r.status !== 'dead_lettered') await repos.events.deleteDeadLetter(r.event.id);
      }
      await recordResults(repos, emit, input.pipeline, input.results, now);
      const minute = replayMinute(input.pipeline, input.results, ctx.clock.now());
      if (minute) await repos.pipelineMinutes.add(minute);
    }),
  );
}

/**
 * What a replay adds to its pipeline's minute of commit (`pipelines.stats`): the events it wrote,
 * filtered or dead-lettered again, so that every delivery counts as written; never a read (the
 * event was read once, by its batch). Undefined when it adds nothing.
 */
function replayMinute(pipeline: PipelineRow, results: readonly ItemResult[], nowMs: number) {
  let written = 0;
  let filtered = 0;
  let dead = 0;
  for (const r of results) {
    if (r.status === 'delivered') written++;
    else if (r.status === 'filtered') filtered++;
    else if (r.status === 'dead_lettered') dead++;
  }
  if (written + filtered + dead === 0) return undefined;
  const minute = new Date(Math.floor(nowMs / 60_000) * 60_000).toISOString();
  return { pipeline_id: pipeline.id, workspace_id: pipeline.workspace_id, minute, events_read: 0, events_written: written, events_filtered: filtered, events_dead_lettered: dead };
}

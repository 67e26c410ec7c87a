import { nowIso, transact, type EngineContext } from '../context/index.js';
import { runChanged } from './run-feed.js';
import type { PipelineRow, RunRow } from '../storage/index.js';
import type { FailureReason } from './flow-error.js';

/** How a run ends. */
export type RunEnding =
  /** Everything it read was handled (caught up, or stopped cleanly by a pause or a deletion). */
  | { status: 'succeeded'; announce: boolean }
  | { status: 'failed'; reason: FailureReason | 'interrupted' | 'lease_lost' | 'cancelled'; announce: boolean }
  /** Handed back to the queue (engine shutdown): the next engine resumes it from the checkpoint. */
  | { status: 'queued' };

/** Records the start of a streaming session as a run, and announces `pipeline.started`. */
export async function startStreamRun(ctx: EngineContext, pipeline: PipelineRow, leaseToken: string, leaseExpiresAt: string): Promise<RunRow> {
  const now = nowIso(ctx);
  return transact(ctx, async (repos, emit) => {
    const id = ctx.ids.create('run');
    await repos.runs.insert({ id, workspace_id: pipeline.workspace_id, pipeline_id: pipeline.id, trigger: 'stream', scheduled_for: null, status: 'running', created_at: now, started_at: now });
    await repos.runs.update(id, { lease_token: leaseToken, lease_holder: ctx.instanceId, lease_expires_at: leaseExpiresAt });
    emit(pipeline.workspace_id, 'pipeline.started', { pipeline_id: pipeline.id, run_id: id });
    runChanged(ctx, { workspace_id: pipeline.workspace_id, pipeline_id: pipeline.id, id });
    return (await repos.runs.get(pipeline.workspace_id, id))!;
  });
}

/**
 * Ends a run and announces it: `pipeline.completed` for a success, `pipeline.failed` with its
 * reason code for a failure, when `announce` is set. A run handed back to the queue keeps its
 * counters and start time and is announced by whoever finishes it.
 */
export async function endRun(ctx: EngineContext, run: Pick<RunRow, 'id' | 'workspace_id' | 'pipeline_id'>, ending: RunEnding): Promise<void> {
  const now = nowIso(ctx);
  await transact(ctx, async (repos, emit) => {
    const lease = { lease_token: null, lease_holder: null, lease_expires_at: null };
    runChanged(ctx, run);
    if (ending.status === 'queued') {
      await repos.runs.update(run.id, { status: 'queued', ...lease });
      return;
    }
    await repos.runs.update(run.id, { status: ending.status, finished_at: now, error: ending.status === 'failed' ? ending.reason : null, ...lease });
    if (!ending.announce) return;
    if (ending.status === 'succeeded') emit(run.workspace_id, 'pipeline.completed', { pipeline_id: run.pipeline_id, run_id: run.id });
    else emit(run.workspace_id, 'pipeline.failed', { pipeline_id: run.pipeline_id, run_id: run.id, error: ending.reason });
  });
}

import { nowIso, transact } from '../context/index.js';
import { runChanged } from './run-feed.js';
import type { RunRow } from '../storage/index.js';
import { CoalescedPump, LeaseKeeper, pipelineLeaseName } from '../queue/index.js';
import { FlowError } from './flow-error.js';
import { PipelineFlow, type FlowDeps } from './pipeline-flow.js';
import { endRun, type RunEnding } from './run-records.js';

/** A run this engine is executing. */
interface Executing {
  run: RunRow;
  flow: PipelineFlow | undefined;
  done: Promise<void>;
}

/**
 * Executes queued runs of scheduled pipelines (cron ticks and `POST /runs`), several at once
 * but one per pipeline across every engine: a run is claimed from the `runs` queue with a lease,
 * and executed only under the pipeline's lease, the same one a streaming consumer holds.
 *
 * A run reads from the checkpoint until the source is caught up, then ends `succeeded`
 * (`pipeline.completed`). An outage longer than the retry budget, or a failure no retry fixes
 * (at once: a misconfigured connector is `configuration_invalid`, see {@link FlowError.reason}),
 * ends it `failed` with a reason code (`pipeline.failed`), the checkpoint where the last
 * committed batch left it. A pause or a
 * deletion ends it after the batch in flight; an engine shutdown hands it back to the queue.
 */
export class RunExecutor {
  private readonly executing = new Map<string, Executing>();
  private stopped = false;
  private readonly pumper = new CoalescedPump(() => this.claimWhileRoom(), () => !this.stopped);

  constructor(
    private readonly deps: FlowDeps,
    private readonly onInactive: (pipelineId: string) => Promise<void>,
  ) {}

  /** The run of `pipelineId` in flight here, if any. */
  inFlight(pipelineId: string): Promise<void> | undefined {
    return this.executing.get(pipelineId)?.done;
  }

  /** The pipeline changed: the run in flight looks at it before its next batch. */
  poke(pipelineId: string): void {
    this.executing.get(pipelineId)?.flow?.poke();
  }

  /** Claims and starts queued runs while there is room. Concurrent calls coalesce. */
  pump(): Promise<void> {
    return this.pumper.pump();
  }

  private async claimWhileRoom(): Promise<void> {
    try {
      while (!this.stopped && this.executing.size < this.deps.options.runConcurrency && (await this.claimOne()));
    } catch (error) {
      this.deps.ctx.logger.warn({ err: (error as Error)?.message }, 'claiming queued runs failed; trying again at the next poll');
    }
  }

  /** Stops every run after its batch in flight; they go back to the queue. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.pumper.current;
    for (const e of this.executing.values()) e.flow?.stop();
    await Promise.all([...this.executing.values()].map((e) => e.done));
  }

  private async claimOne(): Promise<boolean> {
    const { ctx, options } = this.deps;
    const now = ctx.clock.now();
    const nowText = new Date(now).toISOString();
    const busy = [...this.executing.keys()];
    const claim = await ctx.storage.repos.runs.queue.claim<RunRow>({
      where: (q) => {
        q.where('status', 'queued');
        if (busy.length > 0) q.whereNotIn('pipeline_id', busy);
        // A pipeline whose lease is held (streaming elsewhere, or running another run) waits.
        q.whereNotExists((sub) => sub.select('name').from('leases').whereRaw(`leases.name = 'pipeline:' || runs.pipeline_id`).andWhere('leases.expires_at', '>', nowText));
      },
      orderBy: ['id'],
      limit: 1,
      holder: ctx.instanceId,
      ttlMs: options.leaseTtlMs,
      now,
    });
    const run = claim.rows[0];
    if (!run) return false;
    const executing: Executing = { run, flow: undefined, done: Promise.resolve() };
    this.executing.set(run.pipeline_id, executing);
    executing.done = this.execute(executing, claim.token)
      .catch((error: unknown) => ctx.logger.error({ run_id: run.id, err: (error as Error)?.message }, 'run execution failed'))
      .finally(() => {
        this.executing.delete(run.pipeline_id);
        void this.pump();
      });
    return true;
  }

  private async execute(executing: Executing, claimToken: string): Promise<void> {
    const { ctx, options } = this.deps;
    const { run } = executing;
    const queue = ctx.storage.repos.runs.queue;
    const pipeline = await ctx.storage.repos.pipelines.getAnyWorkspace(run.pipeline_id);
    if (!pipeline || pipeline.state !== 'active' || pipeline.schedule === null) {
      // Paused (or made streaming) after the run was queued: it will not run.
      await queue.complete(run.id, claimToken, { status: 'failed', finished_at: nowIso(ctx), error: 'cancelled' }, ctx.clock.now());
      return;
    }
    let lost = false;
    const keeper = await LeaseKeeper.acquire(ctx, pipelineLeaseName(run.pipeline_id), options.leaseTtlMs, () => {
      lost = true;
      executing.flow?.abort();
    });
    if (!keeper) {
      await queue.release(run.id, claimToken);
      return;
    }
    keeper.alsoRenew(() => queue.heartbeat(run.id, claimToken, options.leaseTtlMs, ctx.clock.now()));
    let inactive = false;
    try {
      const firstStart = run.started_at === null;
      const started = await transact(ctx, async (repos, emit) => {
        const ok = await repos.runs.queue.updateHeld(run.id, claimToken, { status: 'running', started_at: run.started_at ?? nowIso(ctx) }, ctx.clock.now());
        if (ok && firstStart) emit(run.workspace_id, 'pipeline.started', { pipeline_id: run.pipeline_id, run_id: run.id });
        if (ok) runChanged(ctx, run);
        return ok;
      });
      if (!started) return;
      const flow = new PipelineFlow(this.deps, { pipelineId: run.pipeline_id, fence: keeper.fence, mode: 'until_caught_up', runId: () => run.id });
      executing.flow = flow;
      if (this.stopped) flow.stop();
      let ending: RunEnding;
      try {
        const end = await flow.run();
        if (lost) ending = { status: 'failed', reason: 'lease_lost', announce: false };
        else if (end === 'stopped') ending = { status: 'queued' };
        else ending = { status: 'succeeded', announce: true };
      } catch (error) {
        const reason = error instanceof FlowError ? error.reason : 'internal';
        if (!(error instanceof FlowError)) ctx.logger.error({ run_id: run.id, err: (error as Error)?.message }, 'run failed unexpectedly');
        ending = { status: 'failed', reason, announce: true };
      }
      await endRun(ctx, run, ending);
      inactive = flow.end === 'inactive';
    } finally {
      await keeper.release();
    }
    if (inactive) await this.onInactive(run.pipeline_id);
  }
}

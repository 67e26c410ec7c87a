import type { ClockTimer } from '../common/index.js';
import { nowIso, transact, type EngineContext } from '../context/index.js';
import { finishPipelineDeletion } from './pipelines-service.js';
import type { Repositories, PipelineRow } from '../storage/index.js';
import { pipelineLeaseName } from '../queue/index.js';
import { releasePipelineSource } from './source-release.js';
import type { FlowDeps } from './pipeline-flow.js';
import { ReplayWorker } from './replay-worker.js';
import { RunExecutor } from './run-executor.js';
import type { RuntimeOptions } from './runtime-options.js';
import { Scheduler } from './scheduler.js';
import { StreamShare } from './stream-share.js';
import { StreamWorker } from './stream-worker.js';

/**
 * The engine's pipeline runtime: a streaming worker per active streaming pipeline, cron timers
 * per active scheduled pipeline, the executor of queued runs and the replay worker.
 *
 * It learns about changes two ways: this engine's services call {@link changed} right after a
 * state change commits (so a pause here takes effect at once), and every `pollIntervalMs` it
 * reads the active pipelines again, which is how it sees changes made by other engines, takes
 * over pipelines whose holder died, and finds runs and replays queued elsewhere.
 */
export class PipelineRuntime {
  private readonly streams = new Map<string, StreamWorker>();
  private readonly scheduler: Scheduler;
  private readonly executor: RunExecutor;
  private readonly replays: ReplayWorker;
  private readonly deps: FlowDeps;
  private readonly share: StreamShare;
  private poller: ClockTimer | undefined;
  private running = false;
  private reconciling: Promise<void> | undefined;
  private readonly finishing = new Map<string, Promise<void>>();

  constructor(
    private readonly ctx: EngineContext,
    private readonly options: RuntimeOptions,
  ) {
    this.deps = { ctx, options };
    this.share = new StreamShare(ctx, options);
    this.scheduler = new Scheduler(ctx, () => void this.executor.pump());
    this.executor = new RunExecutor(this.deps, (id) => this.finishDeletionIfIdle(id));
    this.replays = new ReplayWorker(this.deps);
  }

  /** Starts the workers: recovers what a crash left behind, then takes up every active pipeline. */
  async start(): Promise<void> {
    if (!this.options.enabled || this.running) return;
    this.running = true;
    await this.reconcile();
    this.schedulePoll();
  }

  /**
   * Stops every worker after its batch in flight: streaming pipelines release their leases (another
   * engine takes them at its next poll), runs go back to the queue, replays stay requested.
   */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.poller?.cancel();
    this.scheduler.stop();
    await this.reconciling;
    await Promise.all([...[...this.streams.values()].map((w) => w.stop()), this.executor.stop(), this.replays.stop()]);
    await Promise.all([...this.finishing.values()]);
    this.streams.clear();
    await this.share.leave();
  }

  /** A pipeline (or one of its connectors) changed in this engine. */
  changed(pipelineId: string): void {
    if (!this.running) return;
    this.streams.get(pipelineId)?.poke();
    this.executor.poke(pipelineId);
    void this.reconcileOne(pipelineId);
  }

  /** Resolves when this engine has no batch of the pipeline in flight any more. */
  async drain(pipelineId: string): Promise<void> {
    if (!this.running) return;
    await this.reconciling;
    const stream = this.streams.get(pipelineId);
    const row = await this.ctx.storage.repos.pipelines.getAnyWorkspace(pipelineId);
    const active = row?.state === 'active';
    await Promise.all([active ? undefined : stream?.done, this.executor.inFlight(pipelineId), this.finishing.get(pipelineId)]);
  }

  /** Dead-letter replays were requested. */
  replayRequested(): void {
    if (this.running) void this.replays.pump();
  }

  private schedulePoll(): void {
    if (!this.running) return;
    this.poller = this.ctx.clock.setTimeout(() => {
      void this.reconcile().finally(() => this.schedulePoll());
    }, this.options.pollIntervalMs);
  }

  /** Looks at every pipeline that needs work and makes this engine's workers match. */
  private reconcile(): Promise<void> {
    this.reconciling ??= this.reconcileAll().finally(() => {
      this.reconciling = undefined;
    });
    return this.reconciling;
  }

  private async reconcileAll(): Promise<void> {
    try {
      await this.recoverRuns();
      const repos = this.ctx.storage.repos;
      const active = await repos.pipelines.listByState('active');
      const ids = new Set(active.map((r) => r.id));
      await this.share.refresh(active.filter((r) => r.schedule === null).map((r) => r.id));
      for (const row of active) {
        await this.apply(row);
        // Its connectors may have changed on another engine: look before the next batch.
        this.streams.get(row.id)?.poke(false);
      }
      this.handOverExcess();
      for (const id of this.scheduler.ids()) if (!ids.has(id)) this.scheduler.remove(id);
      for (const row of await repos.pipelines.listByState('deleting')) await this.finishDeletionIfIdle(row.id);
      void this.executor.pump();
      void this.replays.pump();
    } catch (error) {
      this.ctx.logger.warn({ err: (error as Error)?.message }, 'runtime poll failed; trying again at the next one');
    }
  }

  private async reconcileOne(pipelineId: string): Promise<void> {
    try {
      const row = await this.ctx.storage.repos.pipelines.getAnyWorkspace(pipelineId);
      if (!this.running) return;
      this.share.note(pipelineId, row?.state === 'active' && row.schedule === null);
      if (row && row.state === 'active') await this.apply(row);
      else {
        this.scheduler.remove(pipelineId);
        if (row?.state === 'deleting') await this.finishDeletionIfIdle(pipelineId);
      }
      void this.executor.pump();
      void this.replays.pump();
    } catch (error) {
      this.ctx.logger.warn({ pipeline_id: pipelineId, err: (error as Error)?.message }, 'runtime could not apply a pipeline change; the next poll will');
    }
  }

  /** Starts what an active pipeline needs here. */
  private async apply(row: PipelineRow): Promise<void> {
    if (!this.running) return;
    if (row.schedule === null) {
      this.scheduler.remove(row.id);
      if (!this.streams.has(row.id)) {
        const worker = new StreamWorker(this.deps, row.id, this.share, (id) => this.finishDeletionIfIdle(id));
        this.streams.set(row.id, worker);
        void worker.done.finally(() => {
          if (this.streams.get(row.id) === worker) this.streams.delete(row.id);
        });
      }
    } else {
      await this.scheduler.ensure(row);
    }
  }

  /**
   * Hands over the pipelines this engine reads beyond its share (an engine joined), the last
   * taken up here first; an engine under its share takes them at its next poll.
   */
  private handOverExcess(): void {
    const excess = this.share.excess;
    if (excess === 0) return;
    const reading = [...this.streams.values()].filter((w) => w.reading).reverse();
    for (const worker of reading.slice(0, excess)) {
      this.ctx.logger.info({ pipeline_id: worker.pipelineId }, 'handing a streaming pipeline over to an engine under its share');
      worker.handOver();
    }
  }

  /**
   * Runs whose engine died: a scheduled or manual run goes back to the queue (the next engine
   * resumes it from the checkpoint), a streaming session ends `failed` (`interrupted`); the
   * next holder of the lease starts a new one.
   */
  private async recoverRuns(): Promise<void> {
    const now = nowIso(this.ctx);
    const db = this.ctx.storage.knex;
    const lease = { lease_token: null, lease_holder: null, lease_expires_at: null };
    const stale = (q: ReturnType<typeof db>) => q.where('status', 'running').andWhere((w) => w.whereNull('lease_expires_at').orWhere('lease_expires_at', '<=', now));
    await stale(db('runs')).whereIn('trigger', ['schedule', 'manual']).update({ status: 'queued', ...lease });
    await stale(db('runs')).where('trigger', 'stream').update({ status: 'failed', finished_at: now, error: 'interrupted', ...lease });
  }

  /** Lets a deleted pipeline's source release what it keeps for it (the plugin's `releaseSource`). */
  releaseSource(row: PipelineRow): Promise<boolean> {
    return releasePipelineSource(this.ctx, row);
  }

  /**
   * Completes the deletion of a `deleting` pipeline once nothing of it runs anywhere: no local
   * worker, no running run, no live lease.
   */
  private finishDeletionIfIdle(pipelineId: string): Promise<void> {
    const pending = this.finishing.get(pipelineId);
    if (pending) return pending;
    const idle = async (repos: Repositories): Promise<PipelineRow | undefined> => {
      const row = await repos.pipelines.getAnyWorkspace(pipelineId);
      if (!row || row.state !== 'deleting') return undefined;
      if ((await repos.runs.inFlight(pipelineId)).some((r) => r.status === 'running')) return undefined;
      const lease = await repos.leases.get(pipelineLeaseName(pipelineId));
      if (lease && lease.expires_at > nowIso(this.ctx)) return undefined;
      return row;
    };
    const work = (async () => {
      try {
        // The source releases what it keeps for the pipeline first (a replication slot), outside
        // the transaction: it is I/O to another system, and may have to wait for the next poll.
        const stopped = await idle(this.ctx.storage.repos);
        if (!stopped || !(await this.releaseSource(stopped))) return;
        await transact(this.ctx, async (repos, emit) => {
          const row = await idle(repos);
          if (row) await finishPipelineDeletion(this.ctx, repos, row, emit);
        });
      } catch (error) {
        this.ctx.logger.warn({ pipeline_id: pipelineId, err: (error as Error)?.message }, 'finishing a deletion failed; the next poll tries again');
      }
    })().finally(() => this.finishing.delete(pipelineId));
    this.finishing.set(pipelineId, work);
    return work;
  }
}

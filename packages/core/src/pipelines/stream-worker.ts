import { sleep } from '../common/index.js';
import type { RunRow } from '../storage/index.js';
import { LeaseKeeper, pipelineLeaseName } from '../queue/index.js';
import { PipelineFlow, type FlowDeps, type FlowEnd } from './pipeline-flow.js';
import { endRun, startStreamRun } from './run-records.js';
import type { StreamShare } from './stream-share.js';

/**
 * Keeps one streaming pipeline consuming in this engine for as long as it is active and this
 * engine holds its lease. Engines that do not hold the lease try again at every poll, so when
 * the holder dies (and its lease expires) one of them takes over from the checkpoint. An engine
 * tries only while it reads fewer pipelines than its {@link StreamShare}, so pipelines spread
 * over the engines that run them.
 *
 * Each stretch of healthy consumption is a run (`trigger: "stream"`): it starts with
 * `pipeline.started`, and ends `succeeded` with `pipeline.completed` when the pipeline is paused
 * or deleted, or `failed` with `pipeline.failed` when the flow has failed for longer than the
 * retry budget (the pipeline keeps retrying; the next success starts a new run).
 */
export class StreamWorker {
  private readonly stopper = new AbortController();
  private wake = new AbortController();
  private flow: PipelineFlow | undefined;
  private leaseLost = false;
  /** True while this worker holds a slot of the engine's share (trying for, or holding, the lease). */
  private holding = false;
  /** Resolves when the worker has stopped: the pipeline is no longer active here, or the engine stops. */
  readonly done: Promise<void>;

  constructor(
    private readonly deps: FlowDeps,
    readonly pipelineId: string,
    private readonly share: StreamShare,
    private readonly onInactive: (pipelineId: string) => Promise<void>,
  ) {
    this.done = this.loop().catch((error: unknown) => {
      deps.ctx.logger.error({ pipeline_id: pipelineId, err: (error as Error)?.message }, 'streaming worker failed');
    });
  }

  /**
   * The pipeline changed here (take it into account now), or may have changed elsewhere
   * (`wake: false`: look again before the next batch, without cutting a backoff short).
   */
  poke(wake = true): void {
    this.flow?.poke(wake);
    if (!wake) return;
    const waking = this.wake;
    this.wake = new AbortController();
    waking.abort();
  }

  /** True while this engine reads the pipeline (or is taking its lease). */
  get reading(): boolean {
    return this.holding;
  }

  /**
   * Ends this engine's reading after the batch in flight and releases the lease, so an engine
   * under its share takes the pipeline over at its next poll; this worker stays, and takes the
   * pipeline again only when the share allows.
   */
  handOver(): void {
    this.flow?.stop();
  }

  /** Stops after the batch in flight (engine shutdown). */
  stop(): Promise<void> {
    this.stopper.abort();
    this.flow?.stop();
    return this.done;
  }

  private async loop(): Promise<void> {
    const { ctx, options } = this.deps;
    while (!this.stopper.signal.aborted) {
      let row;
      try {
        row = await ctx.storage.repos.pipelines.getAnyWorkspace(this.pipelineId);
      } catch {
        row = undefined; // storage is down: wait and look again
      }
      if (row === null || (row && (row.state !== 'active' || row.schedule !== null))) {
        if (row?.state === 'deleting') await this.onInactive(this.pipelineId);
        return;
      }
      this.holding = row !== undefined && this.share.tryTake();
      const keeper = this.holding ? await LeaseKeeper.acquire(ctx, pipelineLeaseName(this.pipelineId), options.leaseTtlMs, () => {
            this.leaseLost = true;
            this.flow?.abort();
          }).catch(() => null) : null;
      if (!keeper) {
        this.letGo();
        try {
          await sleep(ctx.clock, options.pollIntervalMs, AbortSignal.any([this.stopper.signal, this.wake.signal]));
        } catch {
          // woken: look again at once
        }
        continue;
      }
      let end;
      try {
        end = await this.session(keeper);
      } finally {
        await keeper.release();
        this.letGo();
      }
      if (end === 'inactive') {
        await this.onInactive(this.pipelineId);
        return;
      }
    }
  }

  /** Gives the share's slot back, once. */
  private letGo(): void {
    if (!this.holding) return;
    this.holding = false;
    this.share.give();
  }

  /** Consumes under the lease until the flow ends; returns how it ended. */
  private async session(keeper: LeaseKeeper): Promise<string> {
    const { ctx, options } = this.deps;
    const row = (await ctx.storage.repos.pipelines.getAnyWorkspace(this.pipelineId))!;
    const expires = () => new Date(ctx.clock.now() + options.leaseTtlMs).toISOString();
    this.leaseLost = false;
    let run: RunRow | null = await startStreamRun(ctx, row, keeper.fence.token, expires());
    keeper.alsoRenew(async () => {
      if (run) await ctx.storage.repos.runs.update(run.id, { lease_expires_at: expires() });
    });
    const flow = new PipelineFlow(this.deps, {
      pipelineId: this.pipelineId,
      fence: keeper.fence,
      mode: 'continuous',
      runId: () => run?.id ?? null,
      onFailing: async (error) => {
        const failed = run;
        run = null;
        if (failed) await endRun(ctx, failed, { status: 'failed', reason: error.reason, announce: true });
      },
      onRecovered: async () => {
        run ??= await startStreamRun(ctx, row, keeper.fence.token, expires());
      },
    });
    this.flow = flow;
    if (this.stopper.signal.aborted) flow.stop();
    let end: FlowEnd;
    try {
      end = await flow.run();
    } catch (error) {
      // A continuous flow retries every failure; what ends up here is a bug, reported as such.
      ctx.logger.error({ pipeline_id: this.pipelineId, err: (error as Error)?.message }, 'streaming flow ended with an error');
      if (run) await endRun(ctx, run, { status: 'failed', reason: 'internal', announce: true }).catch(() => undefined);
      return 'failed';
    } finally {
      this.flow = undefined;
    }
    const current = run as RunRow | null;
    if (current) {
      // A pause or a deletion stops the stream cleanly; an engine shutdown hands it over silently.
      if (end === 'inactive') await endRun(ctx, current, { status: 'succeeded', announce: true });
      else if (this.leaseLost) await endRun(ctx, current, { status: 'failed', reason: 'lease_lost', announce: false }).catch(() => undefined);
      else await endRun(ctx, current, { status: 'succeeded', announce: false }).catch(() => undefined);
    }
    return end;
  }
}

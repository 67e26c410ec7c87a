import { sleep } from '../common/index.js';
import { backoffDelay, CoalescedPump } from '../queue/index.js';
import { commitReplay, replayItem } from '../events/index.js';
import { processItems } from './event-processor.js';
import { FlowError } from './flow-error.js';
import { compileSteps, openConnections } from './pipeline-connections.js';
import type { FlowDeps } from './pipeline-flow.js';

/**
 * Replays dead-lettered events (`POST /v2/events/{id}/replay` and the bulk form) from the stage
 * where each failed: a step failure runs the steps from that step on, with the pipeline's
 * current steps; a destination failure goes straight to the destination. The outcome replaces
 * the event's status: `delivered`, `filtered`, or `dead_lettered` again at the stage where it
 * failed this time.
 *
 * Requests are rows of `dead_letters`, claimed with a lease so that several engines share them
 * and a crashed engine's claims are taken over. Replays wait while their pipeline is not active.
 * A destination that is down holds them, with backoff, like any batch.
 */
export class ReplayWorker {
  private readonly stopper = new AbortController();
  private readonly pumper = new CoalescedPump(() => this.round(), () => !this.stopper.signal.aborted);
  private failures = 0;

  constructor(private readonly deps: FlowDeps) {}

  /** Replays what is requested, until nothing claimable is left. Concurrent calls coalesce. */
  pump(): Promise<void> {
    return this.pumper.pump();
  }

  /** One round: replays until nothing is due; after a failure, waits (backoff) and asks for another round. */
  private async round(): Promise<boolean> {
    try {
      while (!this.stopper.signal.aborted && (await this.replayOne()));
      return false;
    } catch (error) {
      if (this.stopper.signal.aborted) return false;
      this.failures++;
      this.deps.ctx.logger.warn({ err: (error as Error)?.message, attempt: this.failures }, 'replay failed; holding the replays');
      try {
        await sleep(this.deps.ctx.clock, backoffDelay(this.deps.options.retry, this.failures), this.stopper.signal);
      } catch {
        return false;
      }
      return true;
    }
  }

  /** Stops after the replay in flight; unfinished requests stay queued. */
  async stop(): Promise<void> {
    this.stopper.abort();
    await this.pumper.current;
  }

  /** Claims one pipeline's worth of requests and replays them; false when none is due. */
  private async replayOne(): Promise<boolean> {
    const { ctx, options } = this.deps;
    const repos = ctx.storage.repos;
    const lease = { holder: ctx.instanceId, ttlMs: options.leaseTtlMs };
    const first = await repos.events.claimReplays({ ...lease, limit: 1, now: ctx.clock.now() });
    const head = first.rows[0];
    if (!head) return false;
    const pipelineId = head.pipeline_id;
    // The rest of the same pipeline's requests, under their own token, so they share one write.
    const rest = await repos.events.claimReplays({ ...lease, pipelineId, limit: options.replayBatchSize - 1, now: ctx.clock.now() });
    const claims = [{ token: first.token, rows: first.rows }, { token: rest.token, rows: rest.rows }];
    const release = async () => {
      for (const c of claims) for (const r of c.rows) await repos.events.replays.release(r.event_id, c.token);
    };
    const pipeline = await repos.pipelines.getAnyWorkspace(pipelineId);
    if (!pipeline || pipeline.state !== 'active') {
      await release();
      return true;
    }
    let conns;
    try {
      conns = await openConnections(ctx, pipeline, { withSource: false, signal: this.stopper.signal });
    } catch (error) {
      await release();
      throw error;
    }
    try {
      const chain = compileSteps(ctx, pipeline);
      for (const claim of claims) {
        if (claim.rows.length === 0) continue;
        const attempts = await repos.events.attemptsOf(claim.rows.map((l) => l.event_id));
        const items = claim.rows.map((l) => replayItem(l, chain.length, attempts.get(l.event_id) ?? 0));
        let results;
        try {
          results = await processItems(
            items,
            { chain, destination: conns.writer, maxAttempts: pipeline.max_attempts, clock: ctx.clock, recordRetry: options.recordRetry, scrub: conns.scrub },
            this.stopper.signal,
          );
        } catch (error) {
          await release();
          throw error instanceof FlowError ? error : new FlowError('destination', 'unexpected_error', String((error as Error)?.message), true, { cause: error });
        }
        await commitReplay(ctx, { pipeline, token: claim.token, results });
        claim.rows = [];
      }
      this.failures = 0;
    } finally {
      await conns.close();
    }
    return true;
  }
}

import type { EngineContext } from '../context/index.js';
import type { FlowError } from './flow-error.js';

/** Least time between two warnings of one held flow, in ms: the first failure warns, then a summary at most this often. */
const WARN_EVERY_MS = 600_000;

/**
 * A flow's hold as others see it: the pipeline record's `held` (stored, so every engine sharing
 * the database answers the same) and the log. Each failed attempt records what the flow waits
 * on; the first success after them (or the flow's end) clears it. The log says a flow is held
 * when it starts to be, then at most once every 10 minutes with its attempts so far, and once
 * when it recovers: not once per retry.
 */
export class FlowHold {
  private since: number | undefined;
  private lastWarn = Number.NEGATIVE_INFINITY;
  private attempts = 0;

  constructor(
    private readonly ctx: Pick<EngineContext, 'clock' | 'logger' | 'storage'>,
    private readonly pipelineId: string,
  ) {}

  /** True while a hold is recorded. */
  get held(): boolean {
    return this.since !== undefined;
  }

  /**
   * A failed attempt: records the hold (never failing for it: storage may be what fails) and
   * logs it as the rules above say. `delayMs` is the wait before the next attempt, `waiting` the
   * events of the batch that waits. Before the pipeline was first read (`workspaceId` unknown) it
   * is logged only.
   */
  async failed(workspaceId: string | undefined, error: FlowError, attempts: number, delayMs: number, waiting: number): Promise<void> {
    const now = this.ctx.clock.now();
    const starting = this.since === undefined;
    this.since ??= now;
    this.attempts = attempts;
    if (starting || now - this.lastWarn >= WARN_EVERY_MS) {
      this.lastWarn = now;
      const heldMs = now - this.since;
      this.ctx.logger.warn(
        { pipeline_id: this.pipelineId, stage: error.stage, code: error.code, attempts, held_ms: heldMs, err: error.message },
        starting ? 'pipeline flow held: its batch is retried with backoff' : 'pipeline flow still held',
      );
    }
    if (workspaceId === undefined) return;
    await this.ctx.storage.repos.pipelineHolds
      .put({
        pipeline_id: this.pipelineId,
        workspace_id: workspaceId,
        since: new Date(this.since).toISOString(),
        attempts,
        error_code: error.code,
        error_message: error.message,
        next_attempt_at: new Date(now + delayMs).toISOString(),
        events_waiting: waiting,
        updated_at: new Date(now).toISOString(),
      })
      .catch(() => undefined);
  }

  /** The flow went on (`recovered`) or ended: the hold is cleared, and a recovery is logged. */
  async release(recovered: boolean): Promise<void> {
    const since = this.since;
    if (since === undefined) return;
    this.since = undefined;
    this.lastWarn = Number.NEGATIVE_INFINITY;
    if (recovered) this.ctx.logger.info({ pipeline_id: this.pipelineId, attempts: this.attempts, held_ms: this.ctx.clock.now() - since }, 'pipeline flow recovered');
    await this.ctx.storage.repos.pipelineHolds.clear(this.pipelineId).catch(() => undefined);
  }

  /** Clears a hold an earlier flow of the pipeline may have left (its engine died while held). */
  async clearLeftover(): Promise<void> {
    await this.ctx.storage.repos.pipelineHolds.clear(this.pipelineId).catch(() => undefined);
  }
}

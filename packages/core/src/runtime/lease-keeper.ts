import type { ClockTimer } from '../clock.js';
import type { EngineContext } from '../engine-context.js';
import type { Fence } from './batch-commit.js';

/**
 * Holds a named lease for as long as this engine works under it: renews it every third of its
 * lifetime and reports when a renewal is refused (it expired and another engine took it over),
 * so the work under it stops. A renewal that fails because storage is unreachable is not a loss:
 * the next one tries again, and only expiry hands the lease to someone else.
 */
export class LeaseKeeper {
  private timer: ClockTimer | undefined;
  private released = false;
  /** Extra renewals done with each heartbeat (a run row's own lease). */
  private readonly extras: (() => Promise<unknown>)[] = [];

  private constructor(
    private readonly ctx: EngineContext,
    readonly fence: Fence,
    private readonly ttlMs: number,
    private readonly onLost: () => void,
  ) {}

  /** Takes the lease when it is free or expired; null when another engine holds it. */
  static async acquire(ctx: EngineContext, name: string, ttlMs: number, onLost: () => void): Promise<LeaseKeeper | null> {
    const grant = await ctx.storage.repos.leases.acquire(name, ctx.instanceId, ttlMs, ctx.clock.now());
    if (!grant) return null;
    const keeper = new LeaseKeeper(ctx, { name, token: grant.token }, ttlMs, onLost);
    keeper.schedule();
    return keeper;
  }

  /** Renews `renew` along with the lease. */
  alsoRenew(renew: () => Promise<unknown>): void {
    this.extras.push(renew);
  }

  private schedule(): void {
    if (this.released) return;
    this.timer = this.ctx.clock.setTimeout(() => void this.beat(), Math.max(1, Math.floor(this.ttlMs / 3)));
  }

  private async beat(): Promise<void> {
    if (this.released) return;
    // The next beat is armed before this one's I/O: a slow renewal never delays the one after it.
    this.schedule();
    try {
      const held = await this.ctx.storage.repos.leases.heartbeat(this.fence.name, this.fence.token, this.ttlMs, this.ctx.clock.now());
      if (!held) {
        if (this.released) return;
        this.released = true;
        this.timer?.cancel();
        this.ctx.logger.warn({ lease: this.fence.name }, 'lease lost to another engine; stopping the work under it');
        this.onLost();
        return;
      }
      for (const renew of this.extras) await renew();
    } catch (error) {
      this.ctx.logger.warn({ lease: this.fence.name, err: (error as Error)?.message }, 'lease renewal failed; trying again');
    }
  }

  /** Gives the lease up so another engine can take it at once. */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    this.timer?.cancel();
    try {
      await this.ctx.storage.repos.leases.release(this.fence.name, this.fence.token);
    } catch (error) {
      // It expires on its own.
      this.ctx.logger.warn({ lease: this.fence.name, err: (error as Error)?.message }, 'lease release failed');
    }
  }
}

/** The lease of a pipeline: whoever holds it is the one engine reading its source. */
export function pipelineLeaseName(pipelineId: string): string {
  return `pipeline:${pipelineId}`;
}

import type { ClockTimer } from '../common/index.js';
import type { EngineContext } from '../context/index.js';
import type { Fence } from '../storage/index.js';

/** First pause before a failed renewal is tried again, in ms (shorter for short leases). */
const RETRY_BASE_MS = 1_000;

/**
 * Holds a named lease for as long as this engine works under it: renews it every third of its
 * lifetime and reports when a renewal is refused (another engine took it over), so the work
 * under it stops.
 *
 * A renewal that fails (storage unreachable, a SQLite write lock held elsewhere) is not a loss:
 * it is tried again soon (1 s, doubling up to a tenth of the lifetime) rather than at the next
 * regular renewal, so the lease is renewed as soon as storage answers again. Waiting a whole third
 * made a 20 s outage cost a 30 s lease: the renewal after it came too late. Only a refusal counts
 * as lost, and storage refuses only a token that no longer holds the lease.
 */
export class LeaseKeeper {
  private timer: ClockTimer | undefined;
  private released = false;
  /** Renewals failed in a row. */
  private failures = 0;
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
    keeper.schedule(keeper.renewEveryMs());
    return keeper;
  }

  /** Renews `renew` along with the lease. */
  alsoRenew(renew: () => Promise<unknown>): void {
    this.extras.push(renew);
  }

  private renewEveryMs(): number {
    return Math.max(1, Math.floor(this.ttlMs / 3));
  }

  /** The pause before trying again after `failures` renewals failed in a row. */
  private retryMs(failures: number): number {
    const cap = Math.max(1, Math.floor(this.ttlMs / 10));
    const base = Math.min(RETRY_BASE_MS, cap);
    return Math.min(base * 2 ** Math.min(failures - 1, 20), cap);
  }

  /** Arms the next renewal in `ms`, replacing the one armed (one timer at a time). */
  private schedule(ms: number): void {
    if (this.released) return;
    this.timer?.cancel();
    this.timer = this.ctx.clock.setTimeout(() => void this.beat(), ms);
  }

  private async beat(): Promise<void> {
    if (this.released) return;
    // The next regular beat is armed before this one's I/O: a renewal that hangs never delays the one after it.
    this.schedule(this.renewEveryMs());
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
      this.failures = 0;
    } catch (error) {
      if (this.released) return;
      this.failures += 1;
      const retryInMs = this.retryMs(this.failures);
      this.ctx.logger.warn({ lease: this.fence.name, attempt: this.failures, retry_in_ms: retryInMs, err: (error as Error)?.message }, 'lease renewal failed; trying again');
      this.schedule(retryInMs);
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

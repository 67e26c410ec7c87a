import type { EngineContext } from '../context/index.js';
import { LeaseKeeper } from '../queue/index.js';
import type { RuntimeOptions } from './runtime-options.js';

/** Prefix of the membership leases: one `engine:<instance id>` per engine that runs pipelines. */
const MEMBER_PREFIX = 'engine:';

/**
 * This engine's fair share of the streaming pipelines when several engines run pipelines on one
 * storage (`ferry serve --workers`, or `--role worker` processes on one Postgres).
 *
 * A pipeline's lease makes one engine its reader; without a share, whichever engine polled first
 * took every pipeline and the others idled, so a second process added no throughput. Each engine
 * that runs pipelines holds a membership lease (`engine:<instance id>`, renewed like any lease),
 * and takes a streaming pipeline only while it holds fewer than
 * `ceil(active streaming pipelines / live engines)`. The shares add up to at least the number of
 * pipelines, so every pipeline has a taker; an engine above its share (one joined) hands one
 * pipeline over at each poll, after the batch in flight, the way a shutdown hands over.
 *
 * Counts are read at each poll, so engines agree within a poll interval. Alone, an engine takes
 * every pipeline at once. When an engine dies, its pipelines wait for their leases to expire as
 * before, and at most one poll more if its membership outlives them.
 */
export class StreamShare {
  private keeper: LeaseKeeper | null = null;
  /** Live engines running pipelines, this one included, as counted at the last poll. */
  private engines = 1;
  /** Active streaming pipelines, as known from the last poll and this engine's own changes. */
  private readonly streaming = new Set<string>();
  /** Pipelines this engine reads now, or is about to (a slot is taken before the lease is tried). */
  private held = 0;

  constructor(
    private readonly ctx: EngineContext,
    private readonly options: RuntimeOptions,
  ) {}

  /** The most streaming pipelines this engine should read at once. */
  get limit(): number {
    return this.engines <= 1 ? Number.POSITIVE_INFINITY : Math.ceil(this.streaming.size / this.engines);
  }

  /** How many more pipelines this engine reads than its share (0 when at or under it). */
  get excess(): number {
    return Math.max(0, this.held - this.limit);
  }

  /**
   * At each poll: keeps this engine's membership and counts the live engines. `active` is every
   * active streaming pipeline. A failure keeps the last count (storage answers again later).
   */
  async refresh(active: Iterable<string>): Promise<void> {
    this.streaming.clear();
    for (const id of active) this.streaming.add(id);
    try {
      // Lost (taken over after a long outage, which no one else can do) or never taken: take it again.
      this.keeper ??= await LeaseKeeper.acquire(this.ctx, MEMBER_PREFIX + this.ctx.instanceId, this.options.leaseTtlMs, () => {
        this.keeper = null;
      });
      this.engines = Math.max(1, await this.ctx.storage.repos.leases.countHeld(MEMBER_PREFIX, this.ctx.clock.now()));
    } catch (error) {
      // The poll goes on with the last count: pipelines are still taken up and handed over.
      this.ctx.logger.warn({ err: (error as Error)?.message }, 'could not count the engines running pipelines; keeping the last count');
    }
  }

  /** A pipeline became active (or stopped being) in this engine: counted before the next poll. */
  note(pipelineId: string, streamingActive: boolean): void {
    if (streamingActive) this.streaming.add(pipelineId);
    else this.streaming.delete(pipelineId);
  }

  /** Takes a slot for one more pipeline if the share allows; {@link give} it back when done. */
  tryTake(): boolean {
    if (this.held >= this.limit) return false;
    this.held += 1;
    return true;
  }

  /** Gives back a slot taken by {@link tryTake}. */
  give(): void {
    this.held = Math.max(0, this.held - 1);
  }

  /** Leaves the group (engine stop): the others count one engine fewer at their next poll. */
  async leave(): Promise<void> {
    const keeper = this.keeper;
    this.keeper = null;
    await keeper?.release();
  }
}

import type { ClockTimer } from '../common/index.js';
import { runChanged } from './run-feed.js';
import { transact, type EngineContext } from '../context/index.js';
import { nextFireAfter } from './cron-schedule.js';
import type { PipelineRow } from '../storage/index.js';

/**
 * The latest tick of `expression` in `(afterMs, nowMs]`, or null. Looks back in doubling
 * windows, so a per-second schedule after a week of downtime costs a few dozen evaluations,
 * not 600,000.
 */
export function latestTickBetween(expression: string, afterMs: number, nowMs: number): number | null {
  let window = 1_000;
  for (;;) {
    const from = Math.max(afterMs, nowMs - window);
    let tick = nextFireAfter(expression, from);
    if (tick <= nowMs) {
      for (let next = nextFireAfter(expression, tick); next <= nowMs; next = nextFireAfter(expression, tick)) tick = next;
      return tick;
    }
    if (from === afterMs) return null;
    window *= 2;
  }
}

/**
 * Turns cron ticks into queued runs. Every engine keeps a timer per active scheduled pipeline
 * (on the engine's clock, so tests move through days in milliseconds); at a tick each of them
 * records the run, and the unique (pipeline, tick) key lets exactly one insert win. A tick that
 * finds a run of the pipeline still queued adds nothing: that run will read everything anyway.
 *
 * `pipelines.last_tick_at` remembers the last tick handled. Ticks missed while no engine was
 * running are caught up once: one run for the latest missed tick, not one per tick.
 */
export class Scheduler {
  private readonly timers = new Map<string, { schedule: string; timer: ClockTimer | undefined }>();
  private stopped = false;

  constructor(
    private readonly ctx: EngineContext,
    private readonly onQueued: () => void,
  ) {}

  /** Pipelines with a timer here. */
  ids(): string[] {
    return [...this.timers.keys()];
  }

  /** Keeps a timer for an active scheduled pipeline (and catches up a missed tick). */
  async ensure(row: PipelineRow): Promise<void> {
    if (this.stopped || row.schedule === null) return;
    const existing = this.timers.get(row.id);
    if (existing && existing.schedule === row.schedule) return;
    existing?.timer?.cancel();
    const entry = { schedule: row.schedule, timer: undefined as ClockTimer | undefined };
    this.timers.set(row.id, entry);
    const now = this.ctx.clock.now();
    let base = row.last_tick_at === null ? null : Date.parse(row.last_tick_at);
    // Never ticked (activated before schedules existed): start counting from now. A last tick
    // in the future (the wall clock was set back, or a timer fired early) would hold every tick
    // until then: it is forgotten, and counting starts from now too.
    if (base === null || base > now) {
      base = now;
      await this.ctx.storage.repos.pipelines.update(row.workspace_id, row.id, { last_tick_at: new Date(now).toISOString() });
    }
    const missed = latestTickBetween(row.schedule, base, now);
    if (missed !== null) await this.tick(row.id, row.schedule, missed);
    if (this.timers.get(row.id) === entry) this.arm(row.id, entry, Math.max(base, now));
  }

  /** Drops a pipeline's timer (paused, deleted, made streaming). */
  remove(pipelineId: string): void {
    this.timers.get(pipelineId)?.timer?.cancel();
    this.timers.delete(pipelineId);
  }

  /** Drops every timer. */
  stop(): void {
    this.stopped = true;
    for (const id of [...this.timers.keys()]) this.remove(id);
  }

  private arm(pipelineId: string, entry: { schedule: string; timer: ClockTimer | undefined }, afterMs: number): void {
    let due: number;
    try {
      due = nextFireAfter(entry.schedule, afterMs);
    } catch (error) {
      // No next fire time the cron library can compute (far beyond any real date): the pipeline
      // has no more ticks, which must not take the engine down with it.
      this.ctx.logger.warn({ pipeline_id: pipelineId, err: (error as Error)?.message }, 'the schedule has no next tick; no more runs are scheduled');
      return;
    }
    entry.timer = this.ctx.clock.setTimeout(() => {
      if (this.timers.get(pipelineId) !== entry) return;
      // The clock fires a timer when it is due, never earlier; a timer that fires early all the
      // same (a platform that shortens long delays) waits again rather than run a future tick.
      if (this.ctx.clock.now() < due) {
        this.arm(pipelineId, entry, afterMs);
        return;
      }
      // The next timer first, from the tick itself: a slow insert never shifts the schedule.
      this.arm(pipelineId, entry, due);
      this.tick(pipelineId, entry.schedule, due).catch((error: unknown) =>
        this.ctx.logger.warn({ pipeline_id: pipelineId, err: (error as Error)?.message }, 'recording a scheduled run failed; the next tick or a restart catches up'),
      );
    }, due - this.ctx.clock.now());
  }

  /** Records the run of one tick, unless the pipeline changed or a run is still waiting. */
  private async tick(pipelineId: string, schedule: string, tickMs: number): Promise<void> {
    const tick = new Date(tickMs).toISOString();
    const queued = await transact(this.ctx, async (repos) => {
      const row = await repos.pipelines.getAnyWorkspace(pipelineId);
      if (!row || row.state !== 'active' || row.schedule !== schedule) return false;
      if (row.last_tick_at !== null && row.last_tick_at >= tick) return false;
      await repos.pipelines.update(row.workspace_id, row.id, { last_tick_at: tick });
      if ((await repos.runs.inFlight(row.id)).some((r) => r.status === 'queued')) return false;
      const run = {
        id: this.ctx.ids.create('run'),
        workspace_id: row.workspace_id,
        pipeline_id: row.id,
        trigger: 'schedule' as const,
        scheduled_for: tick,
        status: 'queued' as const,
        created_at: new Date(this.ctx.clock.now()).toISOString(),
      };
      const inserted = await repos.runs.insert(run);
      if (inserted) runChanged(this.ctx, run);
      return inserted;
    });
    if (queued) this.onQueued();
  }
}

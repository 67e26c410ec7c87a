import { type ClockTimer, firstIdAt } from '../common/index.js';
import type { EngineContext } from './engine-context.js';

/**
 * How long the engine keeps what accumulates, in ms; `null` keeps it for ever (the default of
 * each). What a replay or a retry still needs is never deleted: dead-lettered and replaying
 * events, queued and running runs, deliveries still being tried, events not fanned out yet.
 */
export interface RetentionOptions {
  /** Delivered and filtered events of the event log, by the later of their time and the time they were logged. */
  eventsMs: number | null;
  /** Finished runs (succeeded or failed), by their creation. */
  runsMs: number | null;
  /** Finished webhook deliveries (delivered or failed) and their attempts, by their creation. */
  deliveriesMs: number | null;
  /** Platform events (the outbox) once fanned out to subscriptions, by that time. */
  platformEventsMs: number | null;
  /** How often the job runs, in ms. Default 600,000 (10 minutes). */
  intervalMs: number;
}

/** What `createEngine({ retention })` takes: any subset of {@link RetentionOptions}. */
export type RetentionOptionsInput = Partial<RetentionOptions>;

const DEFAULT_RETENTION: RetentionOptions = Object.freeze({ eventsMs: null, runsMs: null, deliveriesMs: null, platformEventsMs: null, intervalMs: 600_000 });

/** Options with defaults filled in. */
export function resolveRetentionOptions(options: RetentionOptionsInput | undefined): RetentionOptions {
  const resolved = { ...DEFAULT_RETENTION, ...options };
  for (const key of ['eventsMs', 'runsMs', 'deliveriesMs', 'platformEventsMs'] as const) {
    const value = resolved[key];
    if (value !== null && !(Number.isSafeInteger(value) && value > 0)) throw new RangeError(`retention.${key} must be a positive number of ms or null, not ${String(value)}.`);
  }
  if (!(Number.isSafeInteger(resolved.intervalMs) && resolved.intervalMs >= 1_000)) throw new RangeError(`retention.intervalMs must be at least 1000, not ${String(resolved.intervalMs)}.`);
  return resolved;
}

/** Rows deleted per statement: each statement holds the write lock (SQLite) or its rows (Postgres) briefly. */
const CHUNK = 1_000;

/** What one pass deleted, by kind. */
export interface RetentionPass {
  events: number;
  runs: number;
  deliveries: number;
  platformEvents: number;
}

/**
 * Deletes what is older than the retention settings, every `intervalMs` on the engine's clock,
 * in chunks, yielding to other work between them. Several engines on one database may run it
 * at once: a row two of them pick is deleted by one, and the other deletes nothing.
 */
export class RetentionJob {
  private timer: ClockTimer | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = false;

  constructor(
    private readonly ctx: EngineContext,
    private readonly options: RetentionOptions,
  ) {}

  /** True when some kind has a retention: otherwise the job never runs. */
  get enabled(): boolean {
    const o = this.options;
    return o.eventsMs !== null || o.runsMs !== null || o.deliveriesMs !== null || o.platformEventsMs !== null;
  }

  /** Schedules the passes. */
  start(): void {
    if (!this.enabled) return;
    this.stopped = false;
    this.schedule();
  }

  /** Cancels the next pass and waits for one in progress (it stops after its current chunk). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.timer?.cancel();
    await this.running?.catch(() => undefined);
  }

  /** One pass now: everything past its retention, chunk by chunk. */
  async runOnce(): Promise<RetentionPass> {
    const now = this.ctx.clock.now();
    const repos = this.ctx.storage.repos;
    const o = this.options;
    const pass: RetentionPass = { events: 0, runs: 0, deliveries: 0, platformEvents: 0 };
    if (o.eventsMs !== null) {
      const before = new Date(now - o.eventsMs).toISOString();
      for (const pipelineId of await repos.pipelines.allIds()) pass.events += await this.drain(() => repos.events.deleteSettledBefore(pipelineId, before, CHUNK));
    }
    if (o.runsMs !== null) {
      const beforeId = firstIdAt('run', now - o.runsMs);
      pass.runs += await this.drain(() => repos.runs.deleteFinishedBefore(beforeId, CHUNK));
    }
    if (o.deliveriesMs !== null) {
      const beforeId = firstIdAt('delivery', now - o.deliveriesMs);
      pass.deliveries += await this.drain(() => this.ctx.storage.transaction((trx) => trx.deliveries.deleteFinishedBefore(beforeId, CHUNK)));
    }
    if (o.platformEventsMs !== null) {
      const before = new Date(now - o.platformEventsMs).toISOString();
      pass.platformEvents += await this.drain(() => repos.outbox.deleteFannedOutBefore(before, CHUNK));
    }
    return pass;
  }

  /** Runs `chunk` until it deletes less than a full chunk or the job stops; returns the total. */
  private async drain(chunk: () => Promise<number>): Promise<number> {
    let total = 0;
    for (;;) {
      if (this.stopped) return total;
      const deleted = await chunk();
      total += deleted;
      if (deleted < CHUNK) return total;
      // Other work (a batch, a request) goes between two chunks.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  private schedule(): void {
    this.timer = this.ctx.clock.setTimeout(() => {
      this.timer = undefined;
      if (this.stopped) return;
      this.running = this.runOnce()
        .then(
          (pass) => {
            if (pass.events + pass.runs + pass.deliveries + pass.platformEvents > 0) this.ctx.logger.info({ ...pass }, 'retention: deleted what outlived its retention');
          },
          (error: unknown) => this.ctx.logger.warn({ err: error instanceof Error ? error.message : String(error) }, 'retention: a pass failed; the next one tries again'),
        )
        .finally(() => {
          this.running = undefined;
          if (!this.stopped) this.schedule();
        });
    }, this.options.intervalMs);
  }
}

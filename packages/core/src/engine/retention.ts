import { type ClockTimer, firstIdAt } from '../common/index.js';
import type { EngineContext } from '../context/index.js';

/**
 * How long the engine keeps what accumulates, in ms; `null` keeps it for ever (the default of
 * each, but for the per-minute counts). What a replay or a retry still needs is never deleted:
 * dead-lettered and replaying events, queued and running runs, deliveries still being tried,
 * events not fanned out yet.
 */
export interface RetentionOptions {
  /**
   * Delivered and filtered events of the event log, by the later of their time and the time they
   * were logged. A pipeline's own `event_log.retention_days` takes its place for that pipeline.
   */
  eventsMs: number | null;
  /** Finished runs (succeeded or failed), by their creation. */
  runsMs: number | null;
  /** Finished webhook deliveries (delivered or failed) and their attempts, by their creation. */
  deliveriesMs: number | null;
  /** Platform events (the outbox) once fanned out to subscriptions, by that time. */
  platformEventsMs: number | null;
  /**
   * Pipelines' per-minute counts (`pipelines.stats`), by their minute. Default 604,800,000 (7
   * days), the one kind with a default: its rows are figures, not records anyone must keep (a row
   * per pipeline and minute it committed in, a week of them at most per pipeline). `stats` reads
   * the last day at most.
   */
  pipelineMinutesMs: number | null;
  /** How often the job runs, in ms. Default 600,000 (10 minutes). */
  intervalMs: number;
}

/** What `createEngine({ retention })` takes: any subset of {@link RetentionOptions}. */
export type RetentionOptionsInput = Partial<RetentionOptions>;

const DEFAULT_RETENTION: RetentionOptions = Object.freeze({ eventsMs: null, runsMs: null, deliveriesMs: null, platformEventsMs: null, pipelineMinutesMs: 7 * 86_400_000, intervalMs: 600_000 });

/** What an engine that runs no pipelines keeps: everything (the engines that run them delete). */
export const RETENTION_OFF: RetentionOptions = Object.freeze({ ...DEFAULT_RETENTION, pipelineMinutesMs: null });

const DAY_MS = 86_400_000;

const KINDS = ['eventsMs', 'runsMs', 'deliveriesMs', 'platformEventsMs', 'pipelineMinutesMs'] as const;

/** Options with defaults filled in. */
export function resolveRetentionOptions(options: RetentionOptionsInput | undefined): RetentionOptions {
  const resolved = { ...DEFAULT_RETENTION, ...options };
  for (const key of KINDS) {
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
  pipelineMinutes: number;
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

  /**
   * False only for an engine that runs no pipelines ({@link RETENTION_OFF}): any other may have a
   * pipeline with a retention of its own, whatever its options say.
   */
  get enabled(): boolean {
    return this.options !== RETENTION_OFF;
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
    const pass: RetentionPass = { events: 0, runs: 0, deliveries: 0, platformEvents: 0, pipelineMinutes: 0 };
    for (const pipeline of await repos.pipelines.eventRetentions()) {
      const keepMs = pipeline.retention_days !== null ? pipeline.retention_days * DAY_MS : o.eventsMs;
      if (keepMs === null) continue;
      const before = new Date(now - keepMs).toISOString();
      pass.events += await this.drain(() => repos.events.deleteSettledBefore(pipeline.id, before, CHUNK));
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
    if (o.pipelineMinutesMs !== null) {
      const before = new Date(now - o.pipelineMinutesMs).toISOString();
      pass.pipelineMinutes += await this.drain(() => repos.pipelineMinutes.deleteBefore(before, CHUNK));
    }
    return pass;
  }

  /**
   * How long until the next pass, in ms. `intervalMs` while any other kind has a retention. With
   * the per-minute counts alone (the default), until the oldest of them outlives its retention,
   * at least `intervalMs` and at most the retention itself (a row counted later is at most a
   * minute older than this pass): an engine left idle then wakes once a week rather than every
   * 10 minutes, and so does one on a virtual clock that a test moves months ahead.
   */
  private async nextDelay(): Promise<number> {
    const o = this.options;
    const keep = o.pipelineMinutesMs;
    if (keep === null || KINDS.some((kind) => kind !== 'pipelineMinutesMs' && o[kind] !== null)) return o.intervalMs;
    try {
      // A pipeline with a retention of its own is served at every interval.
      if ((await this.ctx.storage.repos.pipelines.eventRetentions()).some((p) => p.retention_days !== null)) return o.intervalMs;
      const oldest = await this.ctx.storage.repos.pipelineMinutes.oldest();
      // A ms past the oldest row's cutoff: a pass deletes what is strictly older than it.
      const due = oldest === null ? keep : Date.parse(oldest) + keep + 1 - this.ctx.clock.now();
      return Math.min(Math.max(due, o.intervalMs), keep);
    } catch {
      // Storage unreachable: try again as any other kind would.
      return o.intervalMs;
    }
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

  private schedule(delayMs: number = this.options.intervalMs): void {
    this.timer = this.ctx.clock.setTimeout(() => {
      this.timer = undefined;
      if (this.stopped) return;
      this.running = this.runOnce()
        .then(
          (pass) => {
            if (Object.values(pass).some((n) => n > 0)) this.ctx.logger.info({ ...pass }, 'retention: deleted what outlived its retention');
          },
          (error: unknown) => this.ctx.logger.warn({ err: error instanceof Error ? error.message : String(error) }, 'retention: a pass failed; the next one tries again'),
        )
        // Inside `running`, so that stop() waits for this read too, before storage closes.
        .then(async () => (this.stopped ? 0 : this.nextDelay()))
        .then((next) => {
          this.running = undefined;
          if (!this.stopped) this.schedule(next);
        });
    }, delayMs);
  }
}

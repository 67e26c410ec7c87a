import type { Observable } from 'rxjs';

/** A run that changed: created, started, counted a batch, ended. */
export interface RunChange {
  workspaceId: string;
  pipelineId: string;
  runId: string;
}

/**
 * The feed of runs this engine changes, as the context carries it: the runtime publishes, and
 * `engine.runs$` listens (`pipelines/run-feed.ts` implements it). An interface here, so the
 * context names no feature.
 */
export interface RunChanges {
  /** Every committed change of a run, as it commits. */
  readonly changes$: Observable<RunChange>;
  /** True while someone listens: publishing costs nothing otherwise. */
  readonly observed: boolean;
  /** Publishes that a run changed (its new state is committed). */
  publish(workspaceId: string, pipelineId: string, runId: string): void;
}

/** A backfill that changed: asked for, started, moved on, ended, cancelled. */
export interface BackfillChange {
  workspaceId: string;
  pipelineId: string;
  backfillId: string;
}

/**
 * The feed of backfills this engine changes, as the context carries it (`backfills/backfill-feed.ts`
 * implements it): `engine.backfills.changes$` listens.
 */
export interface BackfillChanges {
  /** Every committed change of a backfill, as it commits. */
  readonly changes$: Observable<BackfillChange>;
  /** True while someone listens: publishing costs nothing otherwise. */
  readonly observed: boolean;
  /** Publishes that a backfill changed (its new state is committed). */
  publish(change: BackfillChange): void;
}

/**
 * The feed of event-log entries this engine commits, as the context carries it: a batch's or a
 * replay's commit goes through {@link record}, and `engine.events$` hears of it
 * (`events/event-log-feed.ts` implements it, with the pipelines' per-event results).
 */
export interface EventLogRecorder {
  /**
   * Runs `commit`, which commits `results` in the event log, and publishes their entries once it
   * has; `payloads` is the pipeline's `event_log.payloads` (`failed`: only dead-lettered events
   * keep their payload).
   */
  record(workspaceId: string, pipelineId: string, results: readonly unknown[], now: string, commit: () => Promise<void>, payloads?: 'all' | 'failed'): Promise<void>;
}

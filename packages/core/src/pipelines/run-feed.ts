import { Observable, Subject } from 'rxjs';
import { firstIdAt, normalizeTimestamp, notFound, type PipelineHold, type PlatformEvent, type Run } from '../common/index.js';
import { afterCommit, reader, type EngineContext, type RunChange, type RunChanges } from '../context/index.js';
import type { PipelineHoldRow, Repositories, RunRow } from '../storage/index.js';

/**
 * The runs this engine changes, published once each change committed. Nothing is built while
 * nobody listens: the runtime calls {@link publish} on every batch, and it returns at once then.
 */
export class RunFeed implements RunChanges {
  private readonly changes = new Subject<RunChange>();

  /** Every committed change of a run, as it commits. */
  readonly changes$: Observable<RunChange> = this.changes.asObservable();

  /** True while someone listens: publishing costs nothing otherwise. */
  get observed(): boolean {
    return this.changes.observed;
  }

  /** Publishes that a run changed (its new state is committed). */
  publish(workspaceId: string, pipelineId: string, runId: string): void {
    if (!this.changes.observed) return;
    this.changes.next({ workspaceId, pipelineId, runId });
  }
}

/**
 * Tells `engine.runs$` that a run changed, once the change commits (at once outside a
 * transaction). Cheap while nobody listens.
 */
export function runChanged(ctx: Pick<EngineContext, 'runFeed' | 'currentTransaction'>, run: { workspace_id: string; pipeline_id: string; id: string }): void {
  if (!ctx.runFeed.observed) return;
  afterCommit(ctx, () => ctx.runFeed.publish(run.workspace_id, run.pipeline_id, run.id));
}

/** Options of `engine.runs$`: only the runs created at or after `since` are replayed. */
export interface RunsStreamOptions {
  /** An ISO 8601 time; default: every run the pipeline has. */
  since?: string;
}

/** What {@link runsStream} reads: the storage behind `engine.runs$`. */
export interface RunsReader {
  /** Checks that the pipeline exists (throws `not_found` otherwise). */
  pipeline(): Promise<void>;
  /** Runs of the pipeline created after the run `afterId` (or at or after `sinceMs`), oldest first. */
  page(after: { id: string } | { sinceMs: number } | undefined, limit: number): Promise<{ runs: Run[]; hasMore: boolean }>;
  /** A run as it is now; null once gone (retention). */
  get(runId: string): Promise<Run | null>;
}

/** {@link RunsReader} of the engine's storage, for one pipeline of one workspace. */
export function storedRuns(ctx: EngineContext, workspaceId: string, pipelineId: string): RunsReader {
  return {
    async pipeline() {
      if (!(await reader(ctx).pipelines.get(workspaceId, pipelineId))) throw notFound('pipeline', pipelineId);
    },
    async page(after, limit) {
      const key = after === undefined ? undefined : 'id' in after ? after.id : firstIdAt('run', after.sinceMs);
      // Without holds: a snapshot is taken when the run's row changes, which a hold does not
      // change, so it would be stale at once (docs/api.md, Runs); and a read per batch saved.
      const page = await reader(ctx).runs.list(workspaceId, pipelineId, key === undefined ? undefined : [key], limit);
      return { runs: page.rows.map((row) => presentRun(row)), hasMore: page.hasMore };
    },
    async get(runId) {
      const row = await reader(ctx).runs.get(workspaceId, runId);
      return row ? presentRun(row) : null;
    },
  };
}

/** Runs per page while the history is replayed. */
const REPLAY_PAGE = 100;

/** Finished runs whose last snapshot is remembered, so that a late notice does not repeat them. */
const FINISHED_REMEMBERED = 256;

/**
 * A pipeline's runs as a stream: the runs it has (oldest first; only those created at or after
 * `since`), then, live, a new snapshot of a run each time this engine commits a change of it: a
 * run queued (by the cron schedule or a manual run), started, a batch counted, ended. The live
 * part listens from the start, so nothing committed during the replay is missed; a snapshot is
 * emitted only when it differs from the last one emitted for that run. The stream completes when
 * the pipeline is deleted (after the last state of its runs), and ends with an error when the
 * pipeline does not exist or the storage refuses the replay. Changes committed by other engines
 * sharing the storage appear in the replay, not in the live part.
 */
export function runsStream(ctx: Pick<EngineContext, 'runFeed' | 'bus' | 'logger'>, reader: RunsReader, pipelineId: string, workspaceId: string, options: RunsStreamOptions = {}): Observable<Run> {
  return new Observable<Run>((subscriber) => {
    /** The last snapshot emitted of each run still in flight, by id. */
    const open = new Map<string, string>();
    /** Runs that ended, most recent last: their final snapshot is not emitted twice. */
    const finished = new Set<string>();
    const emit = (run: Run) => {
      if (subscriber.closed || finished.has(run.id)) return;
      const snapshot = JSON.stringify(run);
      if (open.get(run.id) === snapshot) return;
      subscriber.next(run);
      if (run.status === 'succeeded' || run.status === 'failed') {
        open.delete(run.id);
        finished.add(run.id);
        if (finished.size > FINISHED_REMEMBERED) finished.delete(finished.values().next().value!);
      } else {
        open.set(run.id, snapshot);
      }
    };
    /** Reads in progress, by run id: a notice during a read asks for one more read after it. */
    const reading = new Map<string, { again: boolean; done: Promise<void> }>();
    const refresh = (runId: string): Promise<void> => {
      const current = reading.get(runId);
      if (current) {
        current.again = true;
        return current.done;
      }
      const entry = { again: false, done: Promise.resolve() };
      entry.done = (async () => {
        do {
          entry.again = false;
          try {
            const run = await reader.get(runId);
            if (run) emit(run);
          } catch (error) {
            // The next change of the run reads it again; one missed read must not end the stream.
            ctx.logger.warn({ pipeline_id: pipelineId, run_id: runId, err: (error as Error)?.message }, 'runs$ could not read a changed run');
          }
        } while (entry.again && !subscriber.closed);
        reading.delete(runId);
      })();
      reading.set(runId, entry);
      return entry.done;
    };
    // Heard while replaying: read again after the replay, so their latest state comes last.
    let heard: Set<string> | undefined = new Set();
    const live = ctx.runFeed.changes$.subscribe((change) => {
      if (change.workspaceId !== workspaceId || change.pipelineId !== pipelineId) return;
      if (heard) heard.add(change.runId);
      else void refresh(change.runId);
    });
    const deleted = ctx.bus.events$.subscribe((event: PlatformEvent) => {
      if (event.type !== 'pipeline.deleted' || event.workspace_id !== workspaceId || event.data.pipeline_id !== pipelineId) return;
      // The deletion cancelled the queued runs: their last state, then the end.
      void Promise.all([...open.keys()].map(refresh)).then(() => subscriber.complete());
    });
    void (async () => {
      await reader.pipeline();
      let after: { id: string } | { sinceMs: number } | undefined = options.since === undefined ? undefined : { sinceMs: Date.parse(normalizeTimestamp(options.since, '/since')) };
      for (;;) {
        const page = await reader.page(after, REPLAY_PAGE);
        for (const run of page.runs) {
          if (subscriber.closed) return;
          emit(run);
        }
        const last = page.runs.at(-1);
        if (!page.hasMore || !last) break;
        after = { id: last.id };
      }
      const meanwhile = heard!;
      heard = undefined;
      await Promise.all([...meanwhile].map(refresh));
    })().catch((error: unknown) => subscriber.error(error));
    return () => {
      live.unsubscribe();
      deleted.unsubscribe();
    };
  });
}

/** The public shape of a pipeline's hold (`held` of a pipeline and of its running run). */
export function presentHold(hold: PipelineHoldRow): PipelineHold {
  return {
    since: hold.since,
    attempts: hold.attempts,
    error: { code: hold.error_code, message: hold.error_message },
    next_attempt_at: hold.next_attempt_at,
    events_waiting: hold.events_waiting,
  };
}

/**
 * The public shape of a run row. `hold` is its pipeline's hold, if the pipeline is held: only a
 * running run shows it, since a queued or ended run waits on nothing the flow retries.
 */
export function presentRun(row: RunRow, hold?: PipelineHoldRow): Run {
  return {
    id: row.id,
    pipeline_id: row.pipeline_id,
    trigger: row.trigger,
    status: row.status,
    scheduled_for: row.scheduled_for,
    started_at: row.started_at,
    finished_at: row.finished_at,
    events_read: row.events_read,
    events_written: row.events_written,
    events_filtered: row.events_filtered,
    events_dead_lettered: row.events_dead_lettered,
    error: row.error,
    held: hold !== undefined && row.status === 'running' ? presentHold(hold) : null,
    created_at: row.created_at,
  };
}

/** Runs of one pipeline presented, the running one with the pipeline's hold (read only when one runs). */
export async function presentRuns(repos: Pick<Repositories, 'pipelineHolds'>, workspaceId: string, pipelineId: string, rows: readonly RunRow[]): Promise<Run[]> {
  const hold = rows.some((r) => r.status === 'running') ? (await repos.pipelineHolds.forPipelines(workspaceId, [pipelineId])).get(pipelineId) : undefined;
  return rows.map((row) => presentRun(row, hold));
}

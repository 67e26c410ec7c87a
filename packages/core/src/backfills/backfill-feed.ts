import { Subject, type Observable } from 'rxjs';
import { afterCommit, type BackfillChange, type BackfillChanges, type EngineContext } from '../context/index.js';

/**
 * The backfills this engine changes (asked for, cancelled, reported on by a source), published
 * once each change committed. Nothing is built while nobody listens.
 */
export class BackfillFeed implements BackfillChanges {
  private readonly changes = new Subject<BackfillChange>();

  /** Every committed change of a backfill, as it commits. */
  readonly changes$: Observable<BackfillChange> = this.changes.asObservable();

  /** True while someone listens: publishing costs nothing otherwise. */
  get observed(): boolean {
    return this.changes.observed;
  }

  /** Publishes that a backfill changed (its new state is committed). */
  publish(change: BackfillChange): void {
    if (this.changes.observed) this.changes.next(change);
  }
}

/** Tells `engine.backfills.changes$` that a backfill changed, once the change commits. */
export function backfillChanged(ctx: Pick<EngineContext, 'backfillFeed' | 'currentTransaction'>, row: { workspace_id: string; pipeline_id: string; id: string }): void {
  if (!ctx.backfillFeed.observed) return;
  afterCommit(ctx, () => ctx.backfillFeed.publish({ workspaceId: row.workspace_id, pipelineId: row.pipeline_id, backfillId: row.id }));
}

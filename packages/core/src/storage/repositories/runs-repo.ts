import type { SqliteIdleReader } from '../sqlite-direct.js';
import { keysetPage, type KeysetResult } from '../keyset.js';
import { LeasedQueue } from '../leases.js';
import { affected, toInt, type Db } from '../sql-helpers.js';
import type { StorageDialect } from '../dialect.js';
import type { Run , SortOrder } from '../../common/index.js';
import { singleStep, type WriterStep } from '../sqlite-writer-thread.js';

/** Row of `runs`: the public record plus its workspace and queue lease. */
export type RunRow = Run & {
  workspace_id: string;
  lease_token: string | null;
  lease_holder: string | null;
  lease_expires_at: string | null;
};

/** The fields a caller provides when a run is recorded; counters and lease start empty. */
export type NewRun = Pick<RunRow, 'id' | 'workspace_id' | 'pipeline_id' | 'trigger' | 'scheduled_for' | 'status' | 'created_at'> &
  Partial<Pick<RunRow, 'started_at'>>;

const COUNTERS = ['events_read', 'events_written', 'events_filtered', 'events_dead_lettered'] as const;

const map = (row: Record<string, unknown>): RunRow => {
  const out = { ...(row as unknown as RunRow) };
  for (const c of COUNTERS) out[c] = toInt(row[c]);
  return out;
};

/** Pipeline runs; queued runs are a leased queue (manual and scheduled triggers). */
export class RunsRepo {
  /** The queue of runs waiting for an engine. */
  readonly queue: LeasedQueue;

  constructor(
    private readonly db: Db,
    dialect: StorageDialect,
    private readonly idle?: SqliteIdleReader,
  ) {
    this.queue = new LeasedQueue(db, dialect, { table: 'runs', key: 'id' });
  }

  /**
   * Records a run. For a scheduled run, false when that pipeline's tick was recorded already
   * (by this engine or another): the unique (pipeline, tick) makes a tick run once.
   */
  async insert(run: NewRun): Promise<boolean> {
    await this.db('runs').insert({ ...run }).onConflict(['pipeline_id', 'scheduled_for']).ignore();
    // Insert results differ by dialect; whether our row exists is the one answer both give alike.
    return this.exists(run.id);
  }

  private async exists(id: string): Promise<boolean> {
    return (await this.db('runs').where({ id }).first('id')) !== undefined;
  }

  /** A run of the workspace. */
  async get(workspaceId: string, id: string): Promise<RunRow | null> {
    const row = await this.db('runs').where({ workspace_id: workspaceId, id }).first();
    return row ? map(row) : null;
  }

  /** Runs of a pipeline by id (creation order). */
  async list(workspaceId: string, pipelineId: string, after: readonly string[] | undefined, limit: number, order: SortOrder = 'asc'): Promise<KeysetResult<RunRow>> {
    const page = await keysetPage<Record<string, unknown>>(this.db('runs').where({ workspace_id: workspaceId, pipeline_id: pipelineId }), ['id'], after, limit, order);
    return { rows: page.rows.map(map), hasMore: page.hasMore };
  }

  /** The most recent run of each pipeline. */
  async latest(pipelineIds: readonly string[]): Promise<Map<string, RunRow>> {
    const out = new Map<string, RunRow>();
    if (pipelineIds.length === 0) return out;
    if (pipelineIds.length === 1) {
      // One pipeline (GET /v2/pipelines/{id}): its newest run by the id index, directly on SQLite when safe.
      const direct = this.idle?.get('select * from runs where pipeline_id = ? order by id desc limit 1', [pipelineIds[0]]);
      const row = direct !== undefined ? direct : ((await this.db('runs').where({ pipeline_id: pipelineIds[0] }).orderBy('id', 'desc').first()) as Record<string, unknown> | undefined);
      if (row) out.set(String(row.pipeline_id), map(row));
      return out;
    }
    const latestIds = this.db('runs').max('id').whereIn('pipeline_id', pipelineIds).groupBy('pipeline_id');
    const rows = (await this.db('runs').whereIn('id', latestIds)) as Record<string, unknown>[];
    for (const row of rows) out.set(String(row.pipeline_id), map(row));
    return out;
  }

  /**
   * Deletes up to `limit` finished runs (succeeded or failed) whose id is below `beforeId` (ids
   * grow with creation time: a run id made at the cutoff), oldest first; returns how many.
   */
  async deleteFinishedBefore(beforeId: string, limit: number): Promise<number> {
    const ids = this.db('runs').select('id').where('id', '<', beforeId).whereIn('status', ['succeeded', 'failed']).orderBy('id').limit(limit);
    return affected(await this.db('runs').whereIn('id', ids).delete());
  }

  /** Runs of a pipeline that are queued or running. */
  async inFlight(pipelineId: string): Promise<RunRow[]> {
    return ((await this.db('runs').where({ pipeline_id: pipelineId }).whereIn('status', ['queued', 'running']).orderBy('id')) as Record<string, unknown>[]).map(map);
  }

  /** Updates a run. */
  async update(id: string, patch: Partial<RunRow>): Promise<boolean> {
    return affected(await this.db('runs').where({ id }).update(patch)) === 1;
  }

  /** Adds to a run's counters in one statement, so concurrent batches never lose an increment. */
  async addCounts(id: string, counts: Partial<Record<(typeof COUNTERS)[number], number>>): Promise<void> {
    const update: Record<string, unknown> = {};
    for (const c of COUNTERS) {
      const n = counts[c];
      if (n) update[c] = this.db.raw('?? + ?', [c, n]);
    }
    if (Object.keys(update).length > 0) await this.db('runs').where({ id }).update(update);
  }
}

/** Adds to every counter of a run, on the SQLite writer thread (see {@link RunsRepo.addCounts}). */
const ADD_COUNTS_SQLITE = `UPDATE runs SET ${COUNTERS.map((c) => `${c} = ${c} + ?`).join(', ')} WHERE id = ?`;

/** {@link RunsRepo.addCounts} as a step of a SQLite writer-thread transaction. */
export function runCountsStep(id: string, counts: Partial<Record<(typeof COUNTERS)[number], number>>): WriterStep {
  return singleStep(ADD_COUNTS_SQLITE, [...COUNTERS.map((c) => counts[c] ?? 0), id]);
}

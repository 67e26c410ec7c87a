import type { Backfill, BackfillState, SortOrder } from '../../common/index.js';
import { keysetPage, type KeysetResult } from '../keyset.js';
import { affected, fromJson, toInt, toJson, type Db } from '../sql-helpers.js';

/** Row of `backfills`: the public record (its stored states: never `paused`) and its workspace. */
export type BackfillRow = Omit<Backfill, 'state'> & {
  workspace_id: string;
  state: Exclude<BackfillState, 'paused'>;
  updated_at: string;
};

/** What changes of a backfill as its source reports it, or as it is cancelled. */
export type BackfillPatch = Partial<Pick<BackfillRow, 'state' | 'tables' | 'rows_read' | 'error' | 'started_at' | 'finished_at'>> & { updated_at: string };

const map = (row: Record<string, unknown>): BackfillRow => ({
  id: String(row.id),
  workspace_id: String(row.workspace_id),
  pipeline_id: String(row.pipeline_id),
  state: row.state as BackfillRow['state'],
  tables: fromJson<BackfillRow['tables']>(row.tables),
  where: row.where_filter == null ? null : fromJson<Record<string, string>>(row.where_filter),
  chunk_size: row.chunk_size == null ? null : toInt(row.chunk_size),
  rows_read: toInt(row.rows_read),
  error: row.error == null ? null : fromJson<{ code: string; message: string }>(row.error),
  created_at: String(row.created_at),
  started_at: (row.started_at as string | null) ?? null,
  finished_at: (row.finished_at as string | null) ?? null,
  updated_at: String(row.updated_at),
});

const toColumns = (patch: Partial<BackfillRow>): Record<string, unknown> => {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) continue;
    if (key === 'tables') out.tables = toJson(value);
    else if (key === 'where') out.where_filter = value === null ? null : toJson(value);
    else if (key === 'error') out.error = value === null ? null : toJson(value);
    else out[key] = value;
  }
  return out;
};

/** The states of a backfill its source has still to run. */
const OPEN_STATES = ['queued', 'running'] as const;

/** Backfills of pipelines (see `BackfillRow`). */
export class BackfillsRepo {
  constructor(private readonly db: Db) {}

  /** Records a backfill, unless one with its id exists already (a source's report may come twice). */
  async insert(row: BackfillRow): Promise<void> {
    await this.db('backfills').insert(toColumns(row)).onConflict('id').ignore();
  }

  /** A backfill of the workspace. */
  async get(workspaceId: string, id: string): Promise<BackfillRow | null> {
    const row = await this.db('backfills').where({ workspace_id: workspaceId, id }).first();
    return row ? map(row) : null;
  }

  /** A backfill by id, whatever its workspace: for the engine's own bookkeeping. */
  async getAnyWorkspace(id: string): Promise<BackfillRow | null> {
    const row = await this.db('backfills').where({ id }).first();
    return row ? map(row) : null;
  }

  /** Backfills of a pipeline by id (creation order). */
  async list(workspaceId: string, pipelineId: string, after: readonly string[] | undefined, limit: number, order: SortOrder = 'asc'): Promise<KeysetResult<BackfillRow>> {
    const page = await keysetPage<Record<string, unknown>>(this.db('backfills').where({ workspace_id: workspaceId, pipeline_id: pipelineId }), ['id'], after, limit, order);
    return { rows: page.rows.map(map), hasMore: page.hasMore };
  }

  /** The pipeline's backfills its source has still to run (queued or running), oldest first. */
  async open(pipelineId: string): Promise<BackfillRow[]> {
    return ((await this.db('backfills').where({ pipeline_id: pipelineId }).whereIn('state', OPEN_STATES).orderBy('id')) as Record<string, unknown>[]).map(map);
  }

  /** Ids of the pipeline's last `limit` cancelled backfills: a source drops one it was reading. */
  async cancelledIds(pipelineId: string, limit: number): Promise<string[]> {
    const rows = (await this.db('backfills').where({ pipeline_id: pipelineId, state: 'cancelled' }).orderBy('id', 'desc').limit(limit).select('id')) as Array<{ id: string }>;
    return rows.map((r) => r.id);
  }

  /** How many of the pipeline's backfills ended (succeeded or failed): grows with each end. */
  async endedCount(pipelineId: string): Promise<number> {
    const row = (await this.db('backfills').where({ pipeline_id: pipelineId }).whereIn('state', ['succeeded', 'failed']).count({ n: '*' }).first()) as { n?: unknown } | undefined;
    return toInt(row?.n ?? 0);
  }

  /**
   * Changes a backfill that is still open (queued or running); false when it is not (it ended,
   * was cancelled, or does not exist): an end is final, whoever comes second.
   */
  async updateOpen(id: string, patch: BackfillPatch): Promise<boolean> {
    return affected(await this.db('backfills').where({ id }).whereIn('state', OPEN_STATES).update(toColumns(patch))) === 1;
  }
}

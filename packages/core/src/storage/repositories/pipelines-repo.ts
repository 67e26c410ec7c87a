import type { SqliteIdleReader } from '../sqlite-direct.js';
import { keysetPage, type KeysetResult } from '../keyset.js';
import { affected, fromJson, toJson, type Db } from '../sql-helpers.js';
import type { Pipeline, PipelineState, TransformStep , SortOrder } from '../../common/index.js';

/** Row of `pipelines`: the public record (without `last_run`) plus what only the engine sees. */
export type PipelineRow = Omit<Pipeline, 'last_run' | 'held'> & {
  workspace_id: string;
  /** Per-pipeline salt of the `mask` step's hashes. */
  salt: string;
  /** The last cron tick the scheduler handled. */
  last_tick_at: string | null;
  /** null, or `rotation:<connector id>` while a credential rotation holds it paused. */
  paused_by: string | null;
  deleted_at: string | null;
};

const map = (row: Record<string, unknown>): PipelineRow => ({
  ...(row as unknown as PipelineRow),
  transforms: fromJson<TransformStep[]>(row.transforms),
  event_log: fromJson<PipelineRow['event_log']>(row.event_log),
});

const serialize = (patch: Partial<PipelineRow>): Record<string, unknown> => {
  const out: Record<string, unknown> = { ...patch };
  if (patch.transforms !== undefined) out.transforms = toJson(patch.transforms);
  if (patch.event_log !== undefined) out.event_log = toJson(patch.event_log);
  return out;
};

/** Pipelines. Deleted pipelines stay as rows (`deleted_at`) so their runs and events keep a parent; every read skips them. */
export class PipelinesRepo {
  constructor(
    private readonly db: Db,
    private readonly idle?: SqliteIdleReader,
  ) {}

  /** Stores a new pipeline (a live name taken in the workspace is a unique violation). */
  async insert(row: PipelineRow): Promise<void> {
    await this.db('pipelines').insert(serialize(row));
  }

  /** A live pipeline of the workspace. */
  async get(workspaceId: string, id: string): Promise<PipelineRow | null> {
    const direct = this.idle?.get('select * from pipelines where workspace_id = ? and id = ? and deleted_at is null', [workspaceId, id]);
    const row = direct !== undefined ? direct : await this.db('pipelines').where({ workspace_id: workspaceId, id }).whereNull('deleted_at').first();
    return row ? map(row) : null;
  }

  /**
   * Every pipeline's own event retention in days (null: the server's), deleted pipelines too:
   * their events stay until retention removes them.
   */
  async eventRetentions(): Promise<{ id: string; retention_days: number | null }[]> {
    const rows = (await this.db('pipelines').select('id', 'event_log').orderBy('id')) as { id: string; event_log: string }[];
    return rows.map((r) => ({ id: r.id, retention_days: fromJson<PipelineRow['event_log']>(r.event_log).retention_days }));
  }

  /**
   * A live pipeline by id in any workspace: for the runtime, which works across workspaces and
   * reads its pipeline again before every batch (directly on SQLite when it can, like `get`).
   */
  async getAnyWorkspace(id: string): Promise<PipelineRow | null> {
    const direct = this.idle?.get('select * from pipelines where id = ? and deleted_at is null', [id]);
    const row = direct !== undefined ? direct : await this.db('pipelines').where({ id }).whereNull('deleted_at').first();
    return row ? map(row) : null;
  }

  /** Live pipelines of a workspace by id, optionally by state and exact name. */
  async list(
    workspaceId: string,
    filters: { state?: PipelineState; name?: string },
    after: readonly string[] | undefined,
    limit: number,
    order: SortOrder = 'asc',
  ): Promise<KeysetResult<PipelineRow>> {
    const query = this.db('pipelines').where({ workspace_id: workspaceId }).whereNull('deleted_at');
    if (filters.state !== undefined) query.andWhere({ state: filters.state });
    if (filters.name !== undefined) query.andWhere({ name: filters.name });
    const page = await keysetPage<Record<string, unknown>>(query, ['id'], after, limit, order);
    return { rows: page.rows.map(map), hasMore: page.hasMore };
  }

  /** Every live pipeline in a given state, across workspaces (the runtime's view). */
  async listByState(state: PipelineState): Promise<PipelineRow[]> {
    return ((await this.db('pipelines').where({ state }).whereNull('deleted_at').orderBy('id')) as Record<string, unknown>[]).map(map);
  }

  /** Live pipelines that read from or write to the connector. */
  async referencing(workspaceId: string, connectorId: string): Promise<PipelineRow[]> {
    const rows = (await this.db('pipelines')
      .where({ workspace_id: workspaceId })
      .whereNull('deleted_at')
      .andWhere((q) => q.where({ source_connector_id: connectorId }).orWhere({ destination_connector_id: connectorId }))
      .orderBy('id')) as Record<string, unknown>[];
    return rows.map(map);
  }

  /**
   * Applies `patch` to a live pipeline. With `expectState` it is a compare-and-set on the state,
   * so two concurrent transitions cannot both succeed.
   */
  async update(workspaceId: string, id: string, patch: Partial<PipelineRow>, expectState?: readonly PipelineState[]): Promise<boolean> {
    const query = this.db('pipelines').where({ workspace_id: workspaceId, id }).whereNull('deleted_at');
    if (expectState) query.whereIn('state', expectState);
    return affected(await query.update(serialize(patch))) === 1;
  }

  /** Marks the pipeline deleted; its name becomes free again. */
  async markDeleted(workspaceId: string, id: string, now: string): Promise<boolean> {
    return affected(await this.db('pipelines').where({ workspace_id: workspaceId, id }).whereNull('deleted_at').update({ deleted_at: now, updated_at: now })) === 1;
  }
}

import { keysetPage, type KeysetResult } from '../keyset.js';
import { affected, fromJson, toInt, toJson, type Db } from '../sql-helpers.js';
import type { Connector, JsonObject , SortOrder } from '../../common/index.js';

/**
 * Row of `connectors`: the record's fields as the API shows them, but `pipeline_count` (counted
 * from `pipelines`), plus what the API never shows. `config` holds the non-secret fields (the
 * record shows the secret ones too, redacted); `secrets` the sealed secret ones.
 */
export interface ConnectorRow extends Omit<Connector, 'pipeline_count'> {
  workspace_id: string;
  secrets: string | null;
  health_checked_at: string | null;
  rotation_started_at: string | null;
  /**
   * A rotation's recovery record, sealed: the previous secrets and the pipelines it paused, so a
   * rotation interrupted by a crash can be rolled back or finished by any instance.
   */
  rotation_state: string | null;
}

const map = (row: Record<string, unknown>): ConnectorRow => ({
  ...(row as unknown as ConnectorRow),
  config: fromJson<JsonObject>(row.config),
  last_error: fromJson(row.last_error),
});

const serialize = (patch: Partial<ConnectorRow>): Record<string, unknown> => {
  const out: Record<string, unknown> = { ...patch };
  if (patch.config !== undefined) out.config = toJson(patch.config);
  if (patch.last_error !== undefined) out.last_error = patch.last_error ? toJson(patch.last_error) : null;
  return out;
};

/** Connectors. */
export class ConnectorsRepo {
  constructor(private readonly db: Db) {}

  /** Stores a new connector. */
  async insert(row: ConnectorRow): Promise<void> {
    await this.db('connectors').insert(serialize(row));
  }

  /**
   * A connector of the workspace; null for an unknown id or another workspace's. With `lock`,
   * the row is locked until the transaction ends (Postgres; SQLite transactions hold the write lock).
   */
  async get(workspaceId: string, id: string, lock?: 'update' | 'share'): Promise<ConnectorRow | null> {
    const query = this.db('connectors').where({ workspace_id: workspaceId, id });
    // Inside a transaction on Postgres: hold the row until commit (SQLite's write lock already does).
    if (lock === 'update') query.forUpdate();
    if (lock === 'share') query.forShare();
    const row = await query.first();
    return row ? map(row) : null;
  }

  /** A connector by id in any workspace: for the ingest endpoint, which a connector's own secret authenticates. */
  async getAnyWorkspace(id: string): Promise<ConnectorRow | null> {
    const row = await this.db('connectors').where({ id }).first();
    return row ? map(row) : null;
  }

  /** Connectors of every workspace whose rotation started before `before` and has not finished. */
  async listRotating(before: string): Promise<ConnectorRow[]> {
    const rows = (await this.db('connectors').where({ rotation_status: 'rotating' }).andWhere('rotation_started_at', '<', before).orderBy('id')) as Record<string, unknown>[];
    return rows.map(map);
  }

  /** Connectors of a workspace by id, optionally of one type. */
  async list(
    workspaceId: string,
    filters: { type?: string },
    after: readonly string[] | undefined,
    limit: number,
    order: SortOrder = 'asc',
  ): Promise<KeysetResult<ConnectorRow>> {
    const query = this.db('connectors').where({ workspace_id: workspaceId });
    if (filters.type !== undefined) query.andWhere({ type: filters.type });
    const page = await keysetPage<Record<string, unknown>>(query, ['id'], after, limit, order);
    return { rows: page.rows.map(map), hasMore: page.hasMore };
  }

  /** Applies `patch`; `expect` makes it a compare-and-set on the given columns. */
  async update(workspaceId: string, id: string, patch: Partial<ConnectorRow>, expect: Partial<ConnectorRow> = {}): Promise<boolean> {
    const query = this.db('connectors').where({ workspace_id: workspaceId, id });
    for (const [column, value] of Object.entries(expect)) {
      if (value === null) query.whereNull(column);
      else query.andWhere(column, value as string);
    }
    return affected(await query.update(serialize(patch))) === 1;
  }

  /** Deletes a connector; false when it is not in the workspace. */
  async delete(workspaceId: string, id: string): Promise<boolean> {
    return affected(await this.db('connectors').where({ workspace_id: workspaceId, id }).delete()) === 1;
  }

  /** Live pipelines referencing each connector, as source or destination. */
  async pipelineCounts(workspaceId: string, ids: readonly string[]): Promise<Map<string, number>> {
    const counts = new Map<string, number>(ids.map((id) => [id, 0]));
    if (ids.length === 0) return counts;
    const rows = (await this.db('pipelines')
      .where({ workspace_id: workspaceId })
      .whereNull('deleted_at')
      .andWhere((q) => q.whereIn('source_connector_id', ids).orWhereIn('destination_connector_id', ids))
      .select('source_connector_id', 'destination_connector_id')) as { source_connector_id: string; destination_connector_id: string }[];
    for (const row of rows) {
      const ends = new Set([row.source_connector_id, row.destination_connector_id]);
      for (const id of ends) if (counts.has(id)) counts.set(id, toInt(counts.get(id)) + 1);
    }
    return counts;
  }
}

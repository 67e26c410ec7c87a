import type { SortOrder } from '../../common/index.js';
import type { SqliteIdleReader } from '../sqlite-direct.js';
import { keysetPage, type KeysetResult } from '../keyset.js';
import { affected, fromJson, toJson, type Db } from '../sql-helpers.js';

/** Row of `api_keys`, JSON columns parsed. Holds the secret's hash, never the secret. */
export interface ApiKeyRow {
  id: string;
  key_id: string;
  workspace_id: string;
  name: string | null;
  scopes: string[];
  secret_hash: string;
  last4: string;
  rate_limit: { requests: number; per_seconds: number } | null;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

const map = (row: Record<string, unknown>): ApiKeyRow => ({
  ...(row as unknown as ApiKeyRow),
  scopes: fromJson<string[]>(row.scopes),
  rate_limit: fromJson(row.rate_limit),
});

/** API keys. */
export class ApiKeysRepo {
  constructor(
    private readonly db: Db,
    private readonly idle?: SqliteIdleReader,
  ) {}

  /** Stores a new key. */
  async insert(row: ApiKeyRow): Promise<void> {
    await this.db('api_keys').insert({ ...row, scopes: toJson(row.scopes), rate_limit: row.rate_limit ? toJson(row.rate_limit) : null });
  }

  /** Looks a key up by the id embedded in it; across workspaces, since the key names its own. */
  async getByKeyId(keyId: string): Promise<ApiKeyRow | null> {
    // Every authenticated request starts here: the direct SQLite path when it is safe.
    const direct = this.idle?.get('select * from api_keys where key_id = ?', [keyId]);
    const row = direct !== undefined ? direct : await this.db('api_keys').where({ key_id: keyId }).first();
    return row ? map(row) : null;
  }

  /** A key of the workspace by its resource id. */
  async get(workspaceId: string, id: string): Promise<ApiKeyRow | null> {
    const row = await this.db('api_keys').where({ workspace_id: workspaceId, id }).first();
    return row ? map(row) : null;
  }

  /** Keys of a workspace by id. */
  async list(workspaceId: string, after: readonly string[] | undefined, limit: number, order: SortOrder = 'asc'): Promise<KeysetResult<ApiKeyRow>> {
    const page = await keysetPage<Record<string, unknown>>(this.db('api_keys').where({ workspace_id: workspaceId }), ['id'], after, limit, order);
    return { rows: page.rows.map(map), hasMore: page.hasMore };
  }

  /** Marks the key revoked; false when it does not exist in the workspace or was revoked already. */
  async revoke(workspaceId: string, id: string, now: string): Promise<boolean> {
    return affected(await this.db('api_keys').where({ workspace_id: workspaceId, id }).whereNull('revoked_at').update({ revoked_at: now })) === 1;
  }

  /**
   * Records when the key was last used. On SQLite it is skipped while another process holds the
   * write lock (a later request records it): authenticating a read must not wait for a lock.
   */
  async touch(id: string, now: string): Promise<void> {
    if (this.idle?.tryWrite('update api_keys set last_used_at = ? where id = ?', [now, id]) !== undefined) return;
    await this.db('api_keys').where({ id }).update({ last_used_at: now });
  }
}

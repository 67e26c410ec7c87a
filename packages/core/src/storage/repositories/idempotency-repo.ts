import { affected, fromJson, toInt, toJson, type Db } from '../sql-helpers.js';

/** A stored `Idempotency-Key` record. */
export interface IdempotencyRecord {
  api_key_id: string;
  key: string;
  workspace_id: string;
  /** Hash of method, path and body: a reuse with another request is refused. */
  request_hash: string;
  /** Random per claim: tells the request that claimed the key from one that found it claimed. */
  owner_token: string;
  status: 'processing' | 'completed';
  response_status: number | null;
  response_headers: Record<string, string> | null;
  response_body: string | null;
  /** While processing: when a crashed first attempt stops blocking retries. */
  locked_until: string | null;
  created_at: string;
  expires_at: string;
}

const map = (row: Record<string, unknown>): IdempotencyRecord => ({
  ...(row as unknown as IdempotencyRecord),
  response_status: row.response_status === null ? null : toInt(row.response_status),
  response_headers: fromJson(row.response_headers),
});

/** Outcome of {@link IdempotencyRepo.begin}. */
export type IdempotencyBegin = { started: true } | { started: false; existing: IdempotencyRecord };

/** Idempotency records (docs/api.md, The HTTP protocol): scoped per API key, kept 24 h. */
export class IdempotencyRepo {
  constructor(private readonly db: Db) {}

  /**
   * Claims the key for a new request, or returns what is stored under it. An expired record, or
   * a processing one whose lock ran out (its request crashed), is taken over.
   */
  async begin(record: Omit<IdempotencyRecord, 'status' | 'response_status' | 'response_headers' | 'response_body'>, now: string): Promise<IdempotencyBegin> {
    const row = { ...record, status: 'processing', response_status: null, response_headers: null, response_body: null };
    await this.db('idempotency_keys').insert(row).onConflict(['api_key_id', 'key']).ignore();
    const stored = await this.get(record.api_key_id, record.key);
    if (!stored) return { started: false, existing: { ...row, status: 'processing' } as IdempotencyRecord };
    if (stored.owner_token === record.owner_token) return { started: true };
    const stale = stored.expires_at <= now || (stored.status === 'processing' && stored.locked_until !== null && stored.locked_until <= now);
    if (stale) {
      const taken = affected(
        await this.db('idempotency_keys')
          .where({ api_key_id: record.api_key_id, key: record.key, owner_token: stored.owner_token })
          .update(row),
      );
      if (taken === 1) return { started: true };
    }
    return { started: false, existing: stored };
  }

  /** Stores the response of the request that claimed the key. */
  async complete(apiKeyId: string, key: string, ownerToken: string, response: { status: number; headers: Record<string, string>; body: string }): Promise<boolean> {
    // Only the request that holds the claim may store its answer: one whose lock ran out and was
    // taken over must not overwrite the new owner's record.
    const n = await this.db('idempotency_keys')
      .where({ api_key_id: apiKeyId, key, owner_token: ownerToken, status: 'processing' })
      .update({ status: 'completed', response_status: response.status, response_headers: toJson(response.headers), response_body: response.body, locked_until: null });
    return affected(n) === 1;
  }

  /** Forgets a key whose request failed in a way that must not be replayed (a 5xx). */
  async abandon(apiKeyId: string, key: string, ownerToken: string): Promise<void> {
    await this.db('idempotency_keys').where({ api_key_id: apiKeyId, key, owner_token: ownerToken, status: 'processing' }).delete();
  }

  /** The record under a key, if any. */
  async get(apiKeyId: string, key: string): Promise<IdempotencyRecord | null> {
    const row = await this.db('idempotency_keys').where({ api_key_id: apiKeyId, key }).first();
    return row ? map(row) : null;
  }

  /** Deletes expired records; returns how many. */
  async purgeExpired(now: string): Promise<number> {
    return affected(await this.db('idempotency_keys').where('expires_at', '<=', now).delete());
  }
}

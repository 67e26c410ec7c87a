import { fromJson, toJson, type Db } from '../sql-helpers.js';
import type { StorageDialect } from '../dialect.js';
import type { Checkpoint } from '../../plugin-api/index.js';
import { singleStep, type WriterStep } from '../sqlite-writer-thread.js';

const SET_CHECKPOINT = 'ON CONFLICT (pipeline_id) DO UPDATE SET value = excluded.value, run_id = excluded.run_id, updated_at = excluded.updated_at RETURNING pipeline_id';
// Postgres locks the lease row until the commit, so a takeover cannot slip in between this
// statement and the commit; SQLite's write transaction already excludes every other writer.
const PUT_FENCED_PG = `WITH held AS (SELECT name FROM leases WHERE name = ? AND token = ? AND expires_at > ? FOR UPDATE)
  INSERT INTO checkpoints (pipeline_id, value, run_id, updated_at) SELECT ?, ?, ?, ? FROM held ${SET_CHECKPOINT}`;
const PUT_FENCED_SQLITE = `INSERT INTO checkpoints (pipeline_id, value, run_id, updated_at)
  SELECT ?, ?, ?, ? FROM leases WHERE name = ? AND token = ? AND expires_at > ? ${SET_CHECKPOINT}`;

/** Source positions, one per pipeline, committed in the same transaction as the batch's events. */
export class CheckpointsRepo {
  constructor(private readonly db: Db, private readonly dialect: StorageDialect) {}

  /** The pipeline's committed position; null before its first batch. */
  async get(pipelineId: string): Promise<Checkpoint | null> {
    const row = (await this.db('checkpoints').where({ pipeline_id: pipelineId }).first('value')) as { value: string } | undefined;
    return row ? fromJson<Checkpoint>(row.value) : null;
  }

  /** Records the position after a batch (call it in the batch's transaction). */
  async put(pipelineId: string, value: Checkpoint, runId: string | null, now: string): Promise<void> {
    await this.db('checkpoints')
      .insert({ pipeline_id: pipelineId, value: toJson(value), run_id: runId, updated_at: now })
      .onConflict('pipeline_id')
      .merge(['value', 'run_id', 'updated_at']);
  }

  /**
   * Records the position after a batch only while the lease `name` is held by `token` at `now`
   * (ISO 8601): the fence and the write in one statement, one round trip per batch fewer than a
   * check before it. False, and nothing written, when the lease was taken over.
   */
  async putFenced(pipelineId: string, value: Checkpoint, runId: string | null, now: string, fence: { name: string; token: string }): Promise<boolean> {
    const row = [pipelineId, toJson(value), runId, now];
    const lease = [fence.name, fence.token, now];
    const put = this.dialect.pick({ postgres: () => this.db.raw(PUT_FENCED_PG, [...lease, ...row]), sqlite: () => this.db.raw(PUT_FENCED_SQLITE, [...row, ...lease]) });
    return this.dialect.rows(await put()).length === 1;
  }
}

/**
 * {@link CheckpointsRepo.putFenced} as a step of a SQLite writer-thread transaction: the
 * transaction is rolled back when the lease is no longer held.
 */
export function fencedCheckpointStep(pipelineId: string, value: Checkpoint, runId: string | null, now: string, fence: { name: string; token: string }): WriterStep {
  return singleStep(PUT_FENCED_SQLITE, [pipelineId, toJson(value), runId, now, fence.name, fence.token, now], { mustChange: true });
}

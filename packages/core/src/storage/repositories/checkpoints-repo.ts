import { fromJson, toJson, type Db } from '../sql-helpers.js';
import type { Checkpoint } from '../../plugin/types.js';

/** Source positions, one per pipeline, committed in the same transaction as the batch's events. */
export class CheckpointsRepo {
  constructor(private readonly db: Db) {}

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
}

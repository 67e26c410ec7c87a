import { toInt, type Db } from '../sql-helpers.js';

/** Row of `pipeline_holds`: a pipeline whose flow is held, and on what. */
export interface PipelineHoldRow {
  pipeline_id: string;
  workspace_id: string;
  /** The first failed attempt of the streak. */
  since: string;
  /** Failed attempts in a row. */
  attempts: number;
  error_code: string;
  /** Scrubbed of the connector's secrets, as every flow error is. */
  error_message: string;
  next_attempt_at: string;
  /** Events of the batch that waits (0 while a source cannot be read). */
  events_waiting: number;
  updated_at: string;
}

const map = (row: Record<string, unknown>): PipelineHoldRow => ({
  ...(row as unknown as PipelineHoldRow),
  attempts: toInt(row.attempts),
  events_waiting: toInt(row.events_waiting),
});

/** Held pipelines (see `PipelineHoldRow`): written at each failed attempt, deleted when the flow goes on. */
export class PipelineHoldsRepo {
  constructor(private readonly db: Db) {}

  /** Records the hold as it is after a failed attempt. */
  async put(row: PipelineHoldRow): Promise<void> {
    await this.db('pipeline_holds')
      .insert(row)
      .onConflict('pipeline_id')
      .merge(['since', 'attempts', 'error_code', 'error_message', 'next_attempt_at', 'events_waiting', 'updated_at']);
  }

  /** The pipeline is no longer held. */
  async clear(pipelineId: string): Promise<void> {
    await this.db('pipeline_holds').where({ pipeline_id: pipelineId }).delete();
  }

  /** The holds of these pipelines of the workspace, by pipeline id. */
  async forPipelines(workspaceId: string, pipelineIds: readonly string[]): Promise<Map<string, PipelineHoldRow>> {
    if (pipelineIds.length === 0) return new Map();
    const rows = (await this.db('pipeline_holds').where({ workspace_id: workspaceId }).whereIn('pipeline_id', pipelineIds)) as Record<string, unknown>[];
    return new Map(rows.map((r) => [String(r.pipeline_id), map(r)]));
  }
}

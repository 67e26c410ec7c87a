import type { BackfillRequests } from '../plugin-api/index.js';
import type { Repositories } from '../storage/index.js';

/** How many cancelled backfills a source is told of: it only ever drops the one it was reading. */
const CANCELLED_TOLD = 100;

/**
 * The backfills a pipeline's source is asked to run, as its plugin context carries them, and
 * their version: the ids of the open ones and of the cancelled ones told. A source opened with
 * another version is opened again (`PipelineFlow`'s refresh), so a backfill asked for, ended or
 * cancelled reaches a running source (also one that runs on another engine, at its next poll).
 */
export async function backfillRequests(repos: Repositories, pipelineId: string): Promise<{ requests: BackfillRequests; version: string }> {
  const [open, cancelled] = await Promise.all([repos.backfills.open(pipelineId), repos.backfills.cancelledIds(pipelineId, CANCELLED_TOLD)]);
  return {
    requests: {
      requested: open.map((row) => ({ id: row.id, tables: row.tables.map((t) => t.table), where: row.where, chunkSize: row.chunk_size })),
      cancelled: new Set(cancelled),
    },
    version: JSON.stringify([open.map((row) => row.id), cancelled[0] ?? null]),
  };
}

/** Just the version of {@link backfillRequests}: what a running flow compares after a poke. */
export async function backfillRequestsVersion(repos: Repositories, pipelineId: string): Promise<string> {
  return (await backfillRequests(repos, pipelineId)).version;
}

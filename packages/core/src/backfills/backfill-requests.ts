import type { BackfillRequests } from '../plugin-api/index.js';
import type { Repositories } from '../storage/index.js';

/** How many cancelled backfills a source is told of: it only ever drops the one it was reading. */
const CANCELLED_TOLD = 100;

/**
 * The backfills a pipeline's source is asked to run, as its plugin context carries them, and
 * their version. A source opened with another version is opened again (`PipelineFlow`'s
 * refresh, also on another engine at its next poll): when one is asked for (the queued ones
 * change), cancelled (the last cancelled one changes), or ends while others wait (then the
 * count of ended ones matters). A backfill a source starts itself, or one that starts or ends
 * with nothing waiting, changes nothing: the source carries on without being opened again.
 */
export async function backfillRequests(repos: Repositories, pipelineId: string): Promise<{ requests: BackfillRequests; version: string }> {
  const [open, cancelled] = await Promise.all([repos.backfills.open(pipelineId), repos.backfills.cancelledIds(pipelineId, CANCELLED_TOLD)]);
  const queued = open.filter((row) => row.state === 'queued').map((row) => row.id);
  const ended = queued.length > 0 ? await repos.backfills.endedCount(pipelineId) : 0;
  return {
    requests: {
      requested: open.map((row) => ({ id: row.id, tables: row.tables.map((t) => t.table), where: row.where, chunkSize: row.chunk_size })),
      cancelled: new Set(cancelled),
    },
    version: JSON.stringify([queued, cancelled[0] ?? null, ended]),
  };
}

/** Just the version of {@link backfillRequests}: what a running flow compares after a poke. */
export async function backfillRequestsVersion(repos: Repositories, pipelineId: string): Promise<string> {
  return (await backfillRequests(repos, pipelineId)).version;
}

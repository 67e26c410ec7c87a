import { transact, type EngineContext } from '../context/index.js';
import { scrub, ConnectorError } from '../plugin-api/index.js';
import { connectorContext, connectorInbox, openConnector, type OpenedConnector } from '../connectors/index.js';
import type { PipelineRow } from '../storage/index.js';


/** How long a deletion waits for a source that cannot be reached before it completes without it. */
export const RELEASE_GIVE_UP_MS = 24 * 60 * 60 * 1000;

/** Longest one release may take. */
const RELEASE_TIMEOUT_MS = 60_000;

/**
 * Lets a deleted pipeline's source release what it keeps in the source system for it (the
 * plugin's `releaseSource`: a replication slot, a publication). True when the deletion may
 * complete: released, nothing to release, or given up on (a non-retryable error, or retryable
 * ones for a day since the deletion began, announced as `connector.error` with code
 * `release_failed`). False to try again at the next poll.
 */
export async function releasePipelineSource(ctx: EngineContext, row: PipelineRow): Promise<boolean> {
  let opened: OpenedConnector;
  try {
    opened = await openConnector(ctx, row.workspace_id, row.source_connector_id);
  } catch (error) {
    // The type is not registered on this engine (or the connector cannot be read): another
    // engine, or this one after a redeploy, may do it.
    return giveUpOrWait(ctx, row, undefined, error);
  }
  const release = opened.plugin.definition.releaseSource;
  if (!release) return true;
  const checkpoint = await ctx.storage.repos.checkpoints.get(row.id);
  const abort = new AbortController();
  const timer = ctx.clock.setTimeout(() => abort.abort(new ConnectorError('timeout', 'Releasing the source took too long.', { retryable: true })), RELEASE_TIMEOUT_MS);
  try {
    await Promise.race([
      release({ ...connectorContext(ctx, opened, abort.signal), pipelineId: row.id, inbox: connectorInbox(ctx, opened.row.id) }, checkpoint),
      new Promise<never>((_, reject) => abort.signal.addEventListener('abort', () => reject(abort.signal.reason), { once: true })),
    ]);
    return true;
  } catch (error) {
    return giveUpOrWait(ctx, row, opened, error);
  } finally {
    timer.cancel();
  }
}

async function giveUpOrWait(ctx: EngineContext, row: PipelineRow, opened: OpenedConnector | undefined, error: unknown): Promise<boolean> {
  const message = scrub(String((error as Error)?.message ?? error), opened?.secretValues ?? []).slice(0, 1000);
  const retryable = !(error instanceof ConnectorError) || error.retryable;
  const waited = ctx.clock.now() - Date.parse(row.updated_at);
  if (retryable && waited < RELEASE_GIVE_UP_MS) {
    ctx.logger.warn({ pipeline_id: row.id, err: message }, 'releasing a deleted pipeline\'s source failed; the next poll tries again');
    return false;
  }
  ctx.logger.error({ pipeline_id: row.id, connector_id: row.source_connector_id, err: message }, 'a deleted pipeline\'s source could not be released; what it kept there (a replication slot) may remain');
  await transact(ctx, async (_repos, emit) => {
    emit(row.workspace_id, 'connector.error', {
      connector_id: row.source_connector_id,
      pipeline_id: row.id,
      error: 'release_failed',
      message: `The deleted pipeline ${row.id}'s source could not be released (${message}); drop what it kept there by hand.`,
    });
  }).catch(() => undefined);
  return true;
}

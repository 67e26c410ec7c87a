import { isId, type Backfill, type JsonObject } from '../common/index.js';
import { nowIso, transact, type BackfillProgress, type EngineContext } from '../context/index.js';
import type { BackfillReport } from '../plugin-api/index.js';
import type { BackfillRow, PipelineRow } from '../storage/index.js';
import { backfillChanged } from './backfill-feed.js';

/** The longest error message a backfill keeps. */
const MAX_ERROR = 1000;

/**
 * Records what a pipeline's source reports of a backfill (`reportBackfill`): its progress on the
 * backfill's row (created when the source started it itself), and its start and end as platform
 * events (`backfill.started`, `.completed`, `.failed`) in the same transaction. An ended or
 * cancelled backfill stays so: a late or repeated report changes nothing.
 */
export async function recordBackfillReport(ctx: EngineContext, pipeline: Pick<PipelineRow, 'id' | 'workspace_id'>, report: BackfillReport, scrub: (text: string) => string): Promise<void> {
  // An id the API could never name (`bfl_` and a ULID) would make a record no one can read.
  if (typeof report.id !== 'string' || !isId('backfill', report.id)) {
    ctx.logger.warn({ pipeline_id: pipeline.id }, 'a source reported a backfill whose id is not a backfill id (bfl_ and 26 characters); not recorded');
    return;
  }
  const tables: Backfill['tables'] = report.tables.map((t) => ({
    table: String(t.table),
    rows_read: Math.max(0, Math.floor(Number(t.rowsRead) || 0)),
    rows_estimated: t.rowsEstimated === null || !Number.isFinite(Number(t.rowsEstimated)) ? null : Math.max(0, Math.floor(Number(t.rowsEstimated))),
    state: t.state === 'done' || t.state === 'running' ? t.state : 'pending',
  }));
  const rowsRead = tables.reduce((sum, t) => sum + t.rows_read, 0);
  const ended = report.state === 'succeeded' || report.state === 'failed';
  const error = report.state === 'failed' ? { code: String(report.error?.code ?? 'backfill_failed'), message: scrub(String(report.error?.message ?? 'The backfill failed.')).slice(0, MAX_ERROR) } : null;
  await transact(ctx, async (repos, emit) => {
    const now = nowIso(ctx);
    let row = await repos.backfills.getAnyWorkspace(report.id);
    if (row && row.pipeline_id !== pipeline.id) return;
    if (!row) {
      // Started by the source itself (an incremental first snapshot): recorded as it reports it.
      row = { id: report.id, workspace_id: pipeline.workspace_id, pipeline_id: pipeline.id, state: 'queued', tables, where: null, chunk_size: null, rows_read: 0, error: null, created_at: now, started_at: null, finished_at: null, updated_at: now };
      await repos.backfills.insert(row);
    }
    if (row.state !== 'queued' && row.state !== 'running') return;
    const starts = row.state === 'queued';
    // Said again as it stands (a restart, a source that reports each read): nothing to write.
    if (!starts && !ended && row.rows_read === rowsRead && JSON.stringify(row.tables) === JSON.stringify(tables)) return;
    const patch = {
      tables,
      rows_read: rowsRead,
      updated_at: now,
      state: ended ? report.state : 'running',
      ...(starts ? { started_at: now } : {}),
      ...(ended ? { finished_at: now, error } : {}),
    } as const;
    if (!(await repos.backfills.updateOpen(row.id, patch))) return;
    const data = (extra: JsonObject = {}): JsonObject => ({ pipeline_id: pipeline.id, backfill_id: row.id, rows_read: rowsRead, ...extra });
    if (starts) emit(pipeline.workspace_id, 'backfill.started', data());
    if (report.state === 'succeeded') emit(pipeline.workspace_id, 'backfill.completed', data());
    if (report.state === 'failed') emit(pipeline.workspace_id, 'backfill.failed', data({ error }));
    backfillChanged(ctx, row);
  });
}

/** The metrics' view of a running backfill's report (see `EngineContext.backfills`). */
export function backfillProgressOf(report: BackfillReport): BackfillProgress {
  const remaining = report.tables.filter((t) => t.state !== 'done');
  return {
    id: String(report.id),
    table: String(remaining[0]?.table ?? report.tables.at(-1)?.table ?? ''),
    rowsRead: report.tables.reduce((sum, t) => sum + (Number(t.rowsRead) || 0), 0),
    tablesRemaining: remaining.length,
  };
}

/** A stored backfill as the API shows it: `paused` while its pipeline is, if it was running. */
export function presentBackfill(row: BackfillRow, pipelineState: PipelineRow['state'] | undefined): Backfill {
  return {
    id: row.id,
    pipeline_id: row.pipeline_id,
    state: row.state === 'running' && pipelineState === 'paused' ? 'paused' : row.state,
    tables: row.tables,
    where: row.where,
    chunk_size: row.chunk_size,
    rows_read: row.rows_read,
    error: row.error,
    created_at: row.created_at,
    started_at: row.started_at,
    finished_at: row.finished_at,
  };
}

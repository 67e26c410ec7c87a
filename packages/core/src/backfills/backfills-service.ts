import { concat, concatMap, filter, from, type Observable } from 'rxjs';
import { assertSchema, FerryError, inputSchemas, notFound, paginate, validationError, type Backfill, type CreateBackfillInput, type Page, type PageParams } from '../common/index.js';
import { connectorContext, connectorInbox, openConnector } from '../connectors/index.js';
import { nowIso, reader, transact, NO_ENGINE_HOOKS, type EngineContext, type EngineHooks } from '../context/index.js';
import { ConnectorError, scrub, type BackfillPlan } from '../plugin-api/index.js';
import type { BackfillRow, PipelineRow } from '../storage/index.js';
import { backfillChanged } from './backfill-feed.js';
import { presentBackfill } from './backfill-reports.js';

/** How long a source may take to check a backfill before the request is answered 503. */
const PLAN_TIMEOUT_MS = 30_000;

/** The codes a source refuses a backfill with that the API answers as they are (422). */
const REFUSALS = new Set(['backfill_needs_key', 'invalid_where', 'backfill_unsupported'] as const);

/**
 * Backfills: re-reads of what a pipeline's source holds, while its changes keep streaming
 * (docs/api.md, Backfills). A backfill is asked for here, checked by the source's plugin
 * (`planBackfill`), recorded `queued`, and run by the source of the pipeline's flow, which reports
 * its progress and its end (see `backfill-reports.ts`). A cancel is final; the source drops the
 * backfill at its next batch.
 */
export class BackfillsService {
  constructor(
    private readonly ctx: EngineContext,
    private readonly hooks: EngineHooks = NO_ENGINE_HOOKS,
  ) {}

  /**
   * Asks for a backfill of the pipeline's source: `tables` (default: all of the pipeline's),
   * `where` (a row filter per table) and `chunk_size`. Answers the backfill, `queued`; the
   * pipeline's flow starts it when the backfills before it ended (a draft or paused pipeline's
   * when it runs again).
   */
  async create(workspaceId: string, pipelineId: string, input: CreateBackfillInput = {}): Promise<Backfill> {
    assertSchema(inputSchemas.createBackfill, input ?? {});
    const pipeline = await this.pipeline(workspaceId, pipelineId);
    if (pipeline.state === 'deleting') {
      throw new FerryError('invalid_state_transition', 'The pipeline is being deleted.', { currentStatus: pipeline.state });
    }
    const plan = await this.plan(pipeline, input);
    const now = nowIso(this.ctx);
    const row: BackfillRow = {
      id: this.ctx.ids.create('backfill'),
      workspace_id: workspaceId,
      pipeline_id: pipelineId,
      state: 'queued',
      tables: plan.tables.map((t) => ({ table: t.table, rows_read: 0, rows_estimated: t.rowsEstimated === null ? null : Math.max(0, Math.round(t.rowsEstimated)), state: 'pending' })),
      where: plan.where ?? input.where ?? null,
      chunk_size: input.chunk_size ?? null,
      rows_read: 0,
      error: null,
      created_at: now,
      started_at: null,
      finished_at: null,
      updated_at: now,
    };
    await transact(this.ctx, async (repos) => {
      // Deleted (or being deleted) while the source checked: nothing to backfill any more.
      const current = await repos.pipelines.get(workspaceId, pipelineId);
      if (!current) throw notFound('pipeline', pipelineId);
      if (current.state === 'deleting') throw new FerryError('invalid_state_transition', 'The pipeline is being deleted.', { currentStatus: current.state });
      await repos.backfills.insert(row);
      backfillChanged(this.ctx, row);
    });
    this.hooks.pipelineChanged(pipelineId);
    return presentBackfill(row, pipeline.state);
  }

  /** One backfill. */
  async get(workspaceId: string, id: string): Promise<Backfill> {
    const repos = reader(this.ctx);
    const row = await repos.backfills.get(workspaceId, id);
    const pipeline = row && (await repos.pipelines.get(workspaceId, row.pipeline_id));
    if (!row || !pipeline) throw notFound('backfill', id);
    return presentBackfill(row, pipeline.state);
  }

  /** The backfills of a pipeline, oldest first (`order: 'desc'`: newest first). */
  async list(workspaceId: string, pipelineId: string, params: PageParams = {}): Promise<Page<Backfill>> {
    const repos = reader(this.ctx);
    const pipeline = await this.pipeline(workspaceId, pipelineId);
    return paginate(
      this.ctx.cursors,
      params,
      { scope: { resource: `backfills:${pipelineId}`, workspaceId, filters: {} }, key: (row: BackfillRow) => [row.id] },
      (after, limit, order) => repos.backfills.list(workspaceId, pipelineId, after, limit, order),
      (rows) => rows.map((row) => presentBackfill(row, pipeline.state)),
    );
  }

  /**
   * Cancels a queued or running backfill: final at once (`cancelled`); the source stops reading
   * it at its next batch, and rows it handed over stay written. 409 `invalid_state_transition`
   * once it has ended.
   */
  async cancel(workspaceId: string, id: string): Promise<Backfill> {
    const row = await transact(this.ctx, async (repos) => {
      const found = await repos.backfills.get(workspaceId, id);
      if (!found || !(await repos.pipelines.get(workspaceId, found.pipeline_id))) throw notFound('backfill', id);
      const now = nowIso(this.ctx);
      if (!(await repos.backfills.updateOpen(id, { state: 'cancelled', finished_at: now, updated_at: now }))) {
        throw new FerryError('invalid_state_transition', `The backfill is ${found.state}: only a queued or running one can be cancelled.`, { currentStatus: found.state });
      }
      backfillChanged(this.ctx, found);
      return found;
    });
    this.hooks.pipelineChanged(row.pipeline_id);
    return this.get(workspaceId, id);
  }

  /**
   * The pipeline's backfills as they change: first each one it has (oldest first, up to the 100
   * newest), then a new snapshot each time this engine commits a change of one (asked for,
   * started, a batch of rows, ended, cancelled). Changes committed by other engines sharing the
   * storage appear in the replay, not in the live part. Unsubscribe to stop.
   */
  changes$(workspaceId: string, pipelineId: string): Observable<Backfill> {
    const live = this.ctx.backfillFeed.changes$.pipe(
      filter((c) => c.workspaceId === workspaceId && c.pipelineId === pipelineId),
      concatMap(async (c) => this.get(workspaceId, c.backfillId).catch(() => undefined)),
      filter((b): b is Backfill => b !== undefined),
    );
    const replay = from(this.list(workspaceId, pipelineId, { limit: 100 })).pipe(concatMap((page) => from([...page.data].reverse())));
    return concat(replay, live);
  }

  private async pipeline(workspaceId: string, pipelineId: string): Promise<PipelineRow> {
    const row = await reader(this.ctx).pipelines.get(workspaceId, pipelineId);
    if (!row) throw notFound('pipeline', pipelineId);
    return row;
  }

  /** The source's plugin checks the backfill; its refusals become the API's errors. */
  private async plan(pipeline: PipelineRow, input: CreateBackfillInput): Promise<BackfillPlan> {
    const opened = await openConnector(this.ctx, pipeline.workspace_id, pipeline.source_connector_id);
    const plan = opened.plugin.definition.planBackfill;
    if (!plan) throw new FerryError('backfill_unsupported', `A ${opened.row.type} source cannot backfill: it has nothing it could read again.`);
    const abort = new AbortController();
    const timer = this.ctx.clock.setTimeout(() => abort.abort(new Error('the backfill check timed out')), PLAN_TIMEOUT_MS);
    const clean = (text: string) => scrub(text, opened.secretValues);
    try {
      return await Promise.race([
        plan({ ...connectorContext(this.ctx, opened, abort.signal), pipelineId: pipeline.id, inbox: connectorInbox(this.ctx, opened.row.id) }, {
          tables: input.tables ?? null,
          where: input.where ?? null,
          chunkSize: input.chunk_size ?? null,
        }),
        new Promise<never>((_, reject) => abort.signal.addEventListener('abort', () => reject(new FerryError('unavailable', 'The source did not answer in time.', { retryAfterSeconds: 5 })), { once: true })),
      ]);
    } catch (error) {
      if (error instanceof FerryError) throw error;
      if (error instanceof ConnectorError && !error.retryable) {
        const message = clean(error.message);
        if (error.code === 'unknown_table') throw validationError([{ pointer: '/tables', code: 'unknown_table', detail: message }], message);
        if (REFUSALS.has(error.code as never)) throw new FerryError(error.code as 'invalid_where', message);
        throw new FerryError('backfill_unsupported', message);
      }
      const message = error instanceof Error ? clean(error.message) : 'The source could not be reached.';
      throw new FerryError('unavailable', `The source could not check the backfill: ${message}`, { retryAfterSeconds: 5 });
    } finally {
      timer.cancel();
    }
  }
}

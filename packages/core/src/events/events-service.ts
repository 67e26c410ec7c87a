import { type BulkReplayInput, type Count, type EventRecord, type ListEventsParams, type Page, EVENT_STATUSES, notFound, validationError, type FieldError, paginate, inputSchemas, assertSchema, assertText, normalizeTimestamp } from '../common/index.js';
import { nowIso, reader, transact, type EngineContext, NO_ENGINE_HOOKS, type EngineHooks } from '../context/index.js';
import type { EventRow } from '../storage/index.js';
import { requestReplay } from './dead-letters.js';

/**
 * The per-pipeline event log (docs/api.md, Events): listing, and replay of dead-lettered events,
 * one or in bulk. The runtime performs the replay; this service records the request.
 */
export class EventsService {
  constructor(
    private readonly ctx: EngineContext,
    private readonly hooks: EngineHooks = NO_ENGINE_HOOKS,
  ) {}

  /** Lists a pipeline's events in log order; `next_cursor` is kept for tailing. */
  async list(workspaceId: string, pipelineId: string, params: ListEventsParams = {}): Promise<Page<EventRecord>> {
    const repos = reader(this.ctx);
    assertText(params.type, '/type');
    const errors: FieldError[] = [];
    if (params.status !== undefined && !EVENT_STATUSES.includes(params.status)) {
      errors.push({ pointer: '/status', code: 'enum', detail: `status is one of ${EVENT_STATUSES.join(', ')}.` });
    }
    const filters = {
      type: params.type,
      status: params.status,
      since: params.since === undefined ? undefined : normalizeTimestamp(params.since, '/since'),
      until: params.until === undefined ? undefined : normalizeTimestamp(params.until, '/until'),
    };
    if (errors.length > 0) throw validationError(errors);
    if (!(await repos.pipelines.get(workspaceId, pipelineId))) throw notFound('pipeline', pipelineId);
    return paginate(
      this.ctx.cursors,
      params,
      {
        // `event-log:`, not the `events:` of the (occurred_at, id) positions before log order:
        // a cursor made then is refused (invalid_cursor) rather than read as a log position.
        scope: { resource: `event-log:${pipelineId}`, workspaceId, filters },
        key: (row: EventRow) => [String(row.log!.unit), String(row.log!.index)],
        tail: true,
      },
      (after, limit, order) => repos.events.list(workspaceId, pipelineId, filters, after, limit, order),
      (rows) => rows.map(presentEvent),
    );
  }

  /** One event. */
  async get(workspaceId: string, eventId: string): Promise<EventRecord> {
    const row = await reader(this.ctx).events.get(workspaceId, eventId);
    if (!row) throw notFound('event', eventId);
    return presentEvent(row);
  }

  /**
   * Queues the replay of a dead-lettered event from the stage where it failed; the event turns
   * `replaying`. Any other status is 409 `event_not_dead_lettered` with `current_status`.
   */
  async replay(workspaceId: string, eventId: string): Promise<EventRecord> {
    const now = nowIso(this.ctx);
    const record = presentEvent(await transact(this.ctx, (repos) => requestReplay(repos, workspaceId, eventId, now)));
    this.hooks.replayRequested();
    return record;
  }

  /** Queues the replay of every dead-lettered event of a pipeline that matches; returns how many. */
  async replayMany(workspaceId: string, pipelineId: string, input: BulkReplayInput = {}): Promise<Count> {
    assertSchema(inputSchemas.bulkReplay, input);
    const filters = {
      type: input.type,
      since: input.since === undefined ? undefined : normalizeTimestamp(input.since, '/since'),
      until: input.until === undefined ? undefined : normalizeTimestamp(input.until, '/until'),
    };
    const now = nowIso(this.ctx);
    const result = await transact(this.ctx, async (repos) => {
      if (!(await repos.pipelines.get(workspaceId, pipelineId))) throw notFound('pipeline', pipelineId);
      return { count: await repos.events.requestBulkReplay(workspaceId, pipelineId, filters, now) };
    });
    if (result.count > 0) this.hooks.replayRequested();
    return result;
  }
}

/** The public shape of an event row. */
export function presentEvent(row: EventRow): EventRecord {
  return {
    id: row.id,
    pipeline_id: row.pipeline_id,
    type: row.type,
    occurred_at: row.occurred_at,
    payload: row.payload,
    status: row.status,
    attempts: row.attempts,
    error: row.error,
    dead_lettered_at: row.dead_lettered_at,
  };
}

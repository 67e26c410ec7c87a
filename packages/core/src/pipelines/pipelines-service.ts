import { randomBytes } from 'node:crypto';
import { presentHold, presentRun, presentRuns, runChanged } from './run-feed.js';
import { type CreatePipelineInput, type Page, type PageParams, type Pipeline, type PipelineState, type PipelineStats, type PipelineStatsParams, type Run, type UpdatePipelineInput, PIPELINE_STATES, FerryError, notFound, validationError, type FieldError, paginate, inputSchemas, readOnlyFields, assertSchema, assertText, schemaErrors } from '../common/index.js';
import { assertWorkspaceId, nowIso, reader, transact, type EngineContext, NO_ENGINE_HOOKS, type EngineHooks } from '../context/index.js';
import { assertSchedule } from './cron-schedule.js';
import { DEFAULT_STATS_MINUTES, readPipelineStats } from './pipeline-stats.js';
import { type Repositories, isUniqueViolation, type PipelineHoldRow, type PipelineRow, type NewRun, type RunRow } from '../storage/index.js';
import type { TSchema } from '@sinclair/typebox';

/** The result of deleting a pipeline: gone at once, or `deleting` until in-flight runs finish. */
export type DeletePipelineResult = { status: 'deleted' } | { status: 'deleting'; pipeline: Pipeline };

/**
 * Pipelines: CRUD, names unique per workspace, the references and direction rules, schedule and
 * transform validation, and the state machine draft -> active <-> paused, deleting
 * (docs/api.md, Pipelines; docs/concepts.md, States and transitions).
 */
export class PipelinesService {
  constructor(
    private readonly ctx: EngineContext,
    private readonly hooks: EngineHooks = NO_ENGINE_HOOKS,
  ) {}

  /** Creates a pipeline in `draft` (or `active` with `activate: true`). */
  async create(workspaceId: string, input: CreatePipelineInput): Promise<Pipeline> {
    assertWorkspaceId(workspaceId);
    this.assertInput(inputSchemas.createPipeline, input, readOnlyFields.pipeline);
    const transforms = input.transforms ?? [];
    if (input.schedule !== undefined && input.schedule !== null) assertSchedule(input.schedule);
    const now = nowIso(this.ctx);
    const defaults = this.ctx.settings.pipelineDefaults;
    const row: PipelineRow = {
      id: this.ctx.ids.create('pipeline'),
      workspace_id: workspaceId,
      name: input.name,
      source_connector_id: input.source_connector_id,
      destination_connector_id: input.destination_connector_id,
      transforms,
      schedule: input.schedule ?? null,
      state: input.activate ? 'active' : 'draft',
      batch_size: input.batch_size ?? defaults.batch_size,
      flush_interval_ms: input.flush_interval_ms ?? defaults.flush_interval_ms,
      max_attempts: input.max_attempts ?? defaults.max_attempts,
      event_log: { payloads: input.event_log?.payloads ?? 'all', retention_days: input.event_log?.retention_days ?? null },
      salt: randomBytes(16).toString('hex'),
      last_tick_at: input.activate ? now : null,
      paused_by: null,
      created_at: now,
      updated_at: now,
      deleted_at: null,
    };
    await transact(this.ctx, async (repos, emit) => {
      await repos.workspaces.create(workspaceId, now);
      await this.assertConnectors(repos, workspaceId, row.source_connector_id, row.destination_connector_id);
      await this.insertUnique(repos, row);
      emit(workspaceId, 'pipeline.created', { pipeline_id: row.id });
      if (row.state === 'active') emit(workspaceId, 'pipeline.activated', { pipeline_id: row.id });
    });
    this.hooks.pipelineChanged(row.id);
    return this.present(row, null);
  }

  /** One pipeline with its `last_run`. */
  async get(workspaceId: string, id: string): Promise<Pipeline> {
    const repos = reader(this.ctx);
    const row = await repos.pipelines.get(workspaceId, id);
    if (!row) throw notFound('pipeline', id);
    const [latest, holds] = await Promise.all([repos.runs.latest([id]), repos.pipelineHolds.forPipelines(workspaceId, [id])]);
    return this.present(row, latest.get(id) ?? null, holds.get(id));
  }

  /** Lists pipelines, optionally by `state` and exact `name`. */
  async list(workspaceId: string, params: PageParams & { state?: PipelineState; name?: string } = {}): Promise<Page<Pipeline>> {
    if (params.state !== undefined && !PIPELINE_STATES.includes(params.state)) {
      throw validationError([{ pointer: '/state', code: 'enum', detail: `state is one of ${PIPELINE_STATES.join(', ')}.` }]);
    }
    const repos = reader(this.ctx);
    assertText(params.name, '/name');
    const filters = { state: params.state, name: params.name };
    return paginate(
      this.ctx.cursors,
      params,
      { scope: { resource: 'pipelines', workspaceId, filters }, key: (row: PipelineRow) => [row.id] },
      (after, limit, order) => repos.pipelines.list(workspaceId, filters, after, limit, order),
      async (rows) => {
        const ids = rows.map((r) => r.id);
        const [latest, holds] = await Promise.all([repos.runs.latest(ids), repos.pipelineHolds.forPipelines(workspaceId, ids)]);
        return rows.map((r) => this.present(r, latest.get(r.id) ?? null, holds.get(r.id)));
      },
    );
  }

  /**
   * Updates name, transforms, schedule or tuning. An active pipeline picks the change up at its
   * next batch. `schedule: null` makes the pipeline streaming.
   */
  async update(workspaceId: string, id: string, input: UpdatePipelineInput): Promise<Pipeline> {
    this.assertInput(inputSchemas.updatePipeline, input, [...readOnlyFields.pipeline, 'source_connector_id', 'destination_connector_id', 'activate']);
    if (input.schedule !== undefined && input.schedule !== null) assertSchedule(input.schedule);
    await transact(this.ctx, async (repos) => {
      const row = await repos.pipelines.get(workspaceId, id);
      if (!row) throw notFound('pipeline', id);
      if (row.state === 'deleting') {
        throw new FerryError('invalid_state_transition', 'The pipeline is being deleted.', { currentStatus: row.state });
      }
      const patch: Partial<PipelineRow> = { updated_at: nowIso(this.ctx) };
      // A new schedule counts its ticks from now: no catch-up run for the ticks of the old one.
      if (input.schedule !== undefined && input.schedule !== row.schedule) patch.last_tick_at = patch.updated_at!;
      for (const key of ['name', 'transforms', 'schedule', 'batch_size', 'flush_interval_ms', 'max_attempts'] as const) {
        if (input[key] !== undefined) (patch as Record<string, unknown>)[key] = input[key];
      }
      // Fields of `event_log` left out keep their value.
      if (input.event_log !== undefined) patch.event_log = { ...row.event_log, ...input.event_log };
      try {
        await repos.pipelines.update(workspaceId, id, patch);
      } catch (error) {
        if (isUniqueViolation(error)) throw nameTaken(input.name ?? row.name);
        throw error;
      }
    });
    this.hooks.pipelineChanged(id);
    return this.get(workspaceId, id);
  }

  /** draft or paused -> active (`invalid_state_transition` otherwise). Emits `pipeline.activated`. */
  async activate(workspaceId: string, id: string): Promise<Pipeline> {
    await this.transition(workspaceId, id, ['draft', 'paused'], 'active', 'pipeline.activated');
    this.hooks.pipelineChanged(id);
    return this.get(workspaceId, id);
  }

  /**
   * active -> paused, after the in-flight batch finished; the checkpoint stays where that batch
   * left it. Emits `pipeline.paused`.
   */
  async pause(workspaceId: string, id: string): Promise<Pipeline> {
    await this.transition(workspaceId, id, ['active'], 'paused', 'pipeline.paused');
    this.hooks.pipelineChanged(id);
    await this.hooks.drain(id);
    return this.get(workspaceId, id);
  }

  /**
   * Deletes a pipeline. With runs in flight it turns `deleting` and the runtime completes the
   * deletion when they finish; otherwise it is gone at once. A source whose type keeps something
   * of the pipeline in the source system (`releaseSource`: a replication slot) releases it first;
   * when it cannot now (unreachable), the pipeline stays `deleting` and the runtime tries again.
   * Connectors and data already written to the destination are kept. Emits `pipeline.deleted`
   * when gone.
   */
  async delete(workspaceId: string, id: string): Promise<DeletePipelineResult> {
    let release: PipelineRow | undefined;
    let result = await transact(this.ctx, async (repos, emit): Promise<DeletePipelineResult> => {
      const row = await repos.pipelines.get(workspaceId, id);
      if (!row) throw notFound('pipeline', id);
      const inFlight = (await repos.runs.inFlight(id)).filter((r) => r.status === 'running');
      const releases = inFlight.length === 0 && row.state !== 'deleting' && (await this.sourceReleases(repos, row));
      if (inFlight.length > 0 || row.state === 'deleting' || releases) {
        // Deleting first, also when the source releases: nothing can activate it meanwhile.
        const now = nowIso(this.ctx);
        await repos.pipelines.update(workspaceId, id, { state: 'deleting', updated_at: now });
        if (releases) release = { ...row, state: 'deleting', updated_at: now };
        return { status: 'deleting', pipeline: this.present({ ...row, state: 'deleting', updated_at: now }, inFlight[inFlight.length - 1] ?? null) };
      }
      await finishPipelineDeletion(this.ctx, repos, row, emit);
      return { status: 'deleted' };
    });
    // Outside the transaction: releasing is I/O to the source system.
    if (release && await this.hooks.releaseSource(release)) {
      const deleting = result;
      result = await transact(this.ctx, async (repos, emit): Promise<DeletePipelineResult> => {
        const row = await repos.pipelines.get(workspaceId, id);
        if (!row || row.state !== 'deleting' || (await repos.runs.inFlight(id)).some((r) => r.status === 'running')) return deleting;
        await finishPipelineDeletion(this.ctx, repos, row, emit);
        return { status: 'deleted' };
      });
    }
    this.hooks.pipelineChanged(id);
    return result;
  }

  /** True when the pipeline's source connector type has a `releaseSource` hook. */
  private async sourceReleases(repos: Repositories, row: PipelineRow): Promise<boolean> {
    const source = await repos.connectors.get(row.workspace_id, row.source_connector_id);
    return source !== null && this.ctx.registry.connector(source.type)?.definition.releaseSource !== undefined;
  }

  /**
   * Queues a run of an active scheduled pipeline now (`POST /v2/pipelines/{id}/runs`), besides
   * its schedule. A draft, paused or deleting pipeline, or a streaming one (it runs all the time),
   * is `invalid_state_transition` with its state. Returns the queued run.
   */
  async triggerRun(workspaceId: string, id: string): Promise<Run> {
    const run = await transact(this.ctx, async (repos) => {
      // A pause racing this may leave a queued run behind; the runner checks the state when it claims one.
      const row = await repos.pipelines.get(workspaceId, id);
      if (!row) throw notFound('pipeline', id);
      if (row.state !== 'active') {
        throw new FerryError('invalid_state_transition', `Only an active pipeline can run; this one is ${row.state}.`, { currentStatus: row.state });
      }
      if (row.schedule === null) {
        throw new FerryError('invalid_state_transition', 'A streaming pipeline runs continuously; only scheduled pipelines take manual runs.', {
          currentStatus: row.state,
        });
      }
      const now = nowIso(this.ctx);
      // No tick: manual runs never collide with scheduled ones (unique per pipeline and tick).
      const newRun: NewRun = { id: this.ctx.ids.create('run'), workspace_id: workspaceId, pipeline_id: id, trigger: 'manual', scheduled_for: null, status: 'queued', created_at: now };
      await repos.runs.insert(newRun);
      runChanged(this.ctx, newRun);
      return (await repos.runs.get(workspaceId, newRun.id))!;
    });
    this.hooks.pipelineChanged(id);
    return presentRun(run);
  }

  /** Runs of a pipeline, oldest first. */
  async listRuns(workspaceId: string, pipelineId: string, params: PageParams = {}): Promise<Page<Run>> {
    const repos = reader(this.ctx);
    if (!(await repos.pipelines.get(workspaceId, pipelineId))) throw notFound('pipeline', pipelineId);
    return paginate(
      this.ctx.cursors,
      params,
      { scope: { resource: `runs:${pipelineId}`, workspaceId, filters: {} }, key: (row: RunRow) => [row.id] },
      (after, limit, order) => repos.runs.list(workspaceId, pipelineId, after, limit, order),
      (rows) => presentRuns(repos, workspaceId, pipelineId, rows),
    );
  }

  /**
   * A pipeline's events per minute over the last `minutes` minutes (1 to 1440, default 60), the
   * current minute last, and how many of its events are `dead_lettered` and `replaying` now
   * (`GET /v2/pipelines/{id}/stats`). Counted are the events its batches committed, by the minute
   * (UTC) of the commit; `per_minute` has an entry for every minute, zeros where nothing
   * committed. Minutes are kept 7 days by default (`retention.pipelineMinutesMs`).
   */
  async stats(workspaceId: string, id: string, params: PipelineStatsParams = {}): Promise<PipelineStats> {
    assertSchema(inputSchemas.pipelineStats, params);
    const repos = reader(this.ctx);
    const row = await repos.pipelines.get(workspaceId, id);
    if (!row) throw notFound('pipeline', id);
    return readPipelineStats(repos, row, params.minutes ?? DEFAULT_STATS_MINUTES, this.ctx.clock.now());
  }

  private async transition(
    workspaceId: string,
    id: string,
    from: readonly PipelineState[],
    to: PipelineState,
    event: 'pipeline.activated' | 'pipeline.paused',
  ): Promise<void> {
    await transact(this.ctx, async (repos, emit) => {
      const row = await repos.pipelines.get(workspaceId, id);
      if (!row) throw notFound('pipeline', id);
      // Compare-and-set on the state: of two concurrent transitions only one wins.
      // A user's transition also ends a rotation's hold: the rotation will not resume it.
      const now = nowIso(this.ctx);
      // An activated schedule counts its ticks from now: the ones it missed while paused are not caught up.
      const patch: Partial<PipelineRow> = { state: to, paused_by: null, updated_at: now, ...(to === 'active' ? { last_tick_at: now } : {}) };
      if (!from.includes(row.state) || !(await repos.pipelines.update(workspaceId, id, patch, from))) {
        throw new FerryError('invalid_state_transition', `A pipeline cannot go from ${row.state} to ${to}.`, { currentStatus: row.state });
      }
      emit(workspaceId, event, { pipeline_id: id });
    });
  }

  private async assertConnectors(repos: Repositories, workspaceId: string, sourceId: string, destinationId: string): Promise<void> {
    // Share-locked until commit: a concurrent delete of either connector waits, then sees this pipeline.
    const source = await repos.connectors.get(workspaceId, sourceId, 'share');
    const destination = await repos.connectors.get(workspaceId, destinationId, 'share');
    const missing: FieldError[] = [];
    if (!source) missing.push({ pointer: '/source_connector_id', code: 'invalid_reference', detail: 'No such connector in this workspace.' });
    if (!destination) missing.push({ pointer: '/destination_connector_id', code: 'invalid_reference', detail: 'No such connector in this workspace.' });
    if (missing.length > 0) throw new FerryError('invalid_reference', 'A referenced connector does not exist.', { errors: missing });
    const wrong: FieldError[] = [];
    if (source!.direction === 'destination') {
      wrong.push({ pointer: '/source_connector_id', code: 'invalid_direction', detail: 'The source connector must be a source or bidirectional.' });
    }
    if (destination!.direction === 'source') {
      wrong.push({ pointer: '/destination_connector_id', code: 'invalid_direction', detail: 'The destination connector must be a destination or bidirectional.' });
    }
    if (wrong.length > 0) throw new FerryError('invalid_direction', 'A connector cannot be used in that direction.', { errors: wrong });
  }

  /**
   * Validates the body's shape and every transform step together, so one answer lists every
   * field problem (steps against their type's schema, pointers carrying the step index).
   */
  private assertInput(schema: TSchema, input: unknown, readOnly: readonly string[]): void {
    const errors = schemaErrors(schema, input, { readOnly });
    const steps = (input as { transforms?: unknown } | null)?.transforms;
    if (Array.isArray(steps)) {
      const seen = new Set(errors.map((e) => e.pointer));
      errors.push(...this.transformErrors(steps).filter((e) => !seen.has(e.pointer)));
    }
    if (errors.length > 0) throw validationError(errors);
  }

  private transformErrors(steps: readonly unknown[]): FieldError[] {
    const errors: FieldError[] = [];
    steps.forEach((step, index) => {
      const prefix = `/transforms/${index}`;
      const type = (step as { type?: unknown } | null)?.type;
      if (typeof type !== 'string') return; // the body schema reports it
      const definition = this.ctx.registry.transform(type);
      if (!definition) {
        errors.push({ pointer: `${prefix}/type`, code: 'enum', detail: `Unknown step type; known: ${this.ctx.registry.transformTypes().join(', ')}.` });
        return;
      }
      const found = schemaErrors(definition.schema, step, { prefix });
      if (found.length === 0 && definition.validate) {
        for (const e of definition.validate(step)) errors.push({ ...e, pointer: prefix + e.pointer });
      }
      errors.push(...found);
    });
    return errors;
  }

  private async insertUnique(repos: Repositories, row: PipelineRow): Promise<void> {
    try {
      await repos.pipelines.insert(row);
    } catch (error) {
      if (isUniqueViolation(error)) throw nameTaken(row.name);
      throw error;
    }
  }

  private present(row: PipelineRow, lastRun: RunRow | null, hold?: PipelineHoldRow): Pipeline {
    return {
      id: row.id,
      name: row.name,
      source_connector_id: row.source_connector_id,
      destination_connector_id: row.destination_connector_id,
      transforms: row.transforms,
      schedule: row.schedule,
      state: row.state,
      batch_size: row.batch_size,
      flush_interval_ms: row.flush_interval_ms,
      max_attempts: row.max_attempts,
      event_log: { payloads: row.event_log.payloads, retention_days: row.event_log.retention_days },
      held: hold ? presentHold(hold) : null,
      last_run: lastRun ? presentRun(lastRun, hold) : null,
      created_at: row.created_at,
      updated_at: row.updated_at,
    };
  }
}

function nameTaken(name: string): FerryError {
  return new FerryError('name_taken', `A pipeline named ${JSON.stringify(name)} already exists in this workspace.`);
}

/**
 * Completes the deletion of a pipeline (queued runs are cancelled). Used by
 * {@link PipelinesService.delete} and by the runtime once the last in-flight run of a `deleting`
 * pipeline finished.
 */
export async function finishPipelineDeletion(
  ctx: EngineContext,
  repos: Repositories,
  row: PipelineRow,
  emit: (ws: string, type: 'pipeline.deleted', data: { pipeline_id: string }) => unknown,
): Promise<void> {
  const now = nowIso(ctx);
  for (const run of await repos.runs.inFlight(row.id)) {
    if (run.status !== 'queued') continue;
    await repos.runs.update(run.id, { status: 'failed', finished_at: now, error: 'pipeline_deleted' });
    runChanged(ctx, run);
  }
  await repos.pipelines.markDeleted(row.workspace_id, row.id, now);
  emit(row.workspace_id, 'pipeline.deleted', { pipeline_id: row.id });
}

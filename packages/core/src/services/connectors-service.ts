import type { CheckResult, JsonObject } from '../plugin/types.js';
import { connectorOutboundFor, URL_NOT_ALLOWED } from '../connector-outbound.js';
import type { Connector, CreateConnectorInput, Page, PageParams, UpdateConnectorInput } from '../domain.js';
import { assertWorkspaceId, nowIso, reader, transact, type EngineContext } from '../engine-context.js';
import { FerryError, isFerryError, notFound, validationError, type FieldError } from '../errors.js';
import { paginate } from '../pagination.js';
import { joinSecrets, mergeConfig, scrub, splitSecrets } from '../plugin/config-secrets.js';
import { ConnectorError } from '../plugin/connector-error.js';
import type { RegisteredConnector } from '../plugin/registry.js';
import { REDACTED } from '../plugin/secret.js';
import { inputSchemas, readOnlyFields } from '../schemas.js';
import type { ConnectorRow } from '../storage/repositories/connectors-repo.js';
import { assertSchema, assertText, pointerToken, schemaErrors } from '../validation.js';
import { Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { NO_ENGINE_HOOKS, type EngineHooks } from './engine-hooks.js';
import { connectorContext, openConnector, recordConnectorHealth, registeredConnector, sealConnectorSecrets, unsealConnectorSecrets } from './opened-connector.js';

/** Input of {@link ConnectorsService.rotate}. */
export interface RotateConnectorInput {
  /** New values of secret config fields; absent when the plugin generates them. */
  config?: JsonObject;
}

/** What a completed rotation answers (contract section 5.1). */
export interface ConnectorRotationResult {
  connector: Connector;
  rotation: { status: 'completed'; paused_pipeline_ids: string[]; started_at: string; completed_at: string };
}

/** The recovery record kept in `connectors.rotation_state` while a rotation runs. */
interface RotationState {
  /** The previous sealed secrets, restored when the rotation fails or a crash interrupts it. */
  previous_secrets: string | null;
  previous_health: ConnectorRow['health'];
  paused_pipeline_ids: string[];
}

const ROTATE_INPUT = Type.Object({ config: Type.Optional(Type.Object({}, { additionalProperties: true })) }, { additionalProperties: false });
/** A rotation running longer than this is taken for one a crash interrupted. */
const ROTATION_STALE_MS = 15 * 60 * 1000;

/** How long a connection check may take before it counts as failed. */
const CHECK_TIMEOUT_MS = 10_000;

/**
 * Connectors: CRUD with the direction rules, secret fields encrypted at rest and redacted on
 * the way out, and live checks through the plugin (contract section 5).
 */
export class ConnectorsService {
  constructor(
    private readonly ctx: EngineContext,
    private readonly hooks: EngineHooks = NO_ENGINE_HOOKS,
  ) {}

  /** Creates a connector (`validation_failed`, `invalid_direction`). */
  async create(workspaceId: string, input: CreateConnectorInput): Promise<Connector> {
    assertWorkspaceId(workspaceId);
    assertSchema(inputSchemas.createConnector, input, { readOnly: readOnlyFields.connector });
    const plugin = this.plugin(input.type, '/type');
    if (!plugin.definition.directions.includes(input.direction)) {
      const detail = `A ${input.type} connector cannot be ${input.direction}; it supports ${plugin.definition.directions.join(', ')}.`;
      throw new FerryError('invalid_direction', detail, { errors: [{ pointer: '/direction', code: 'invalid_direction', detail }] });
    }
    // "********" is what responses show in place of a secret; as a new value it is a mistake.
    const placeholders = splitSecrets(input.config, plugin.secretPaths).secrets.filter((s) => s.value === REDACTED);
    if (placeholders.length > 0) {
      throw validationError(placeholders.map((s) => ({ pointer: `/config/${s.path.join('/')}`, code: 'redacted_value', detail: 'This is the redacted placeholder, not a value; send the secret itself.' })));
    }
    // Fields the plugin generates itself (a webhook's signing secret), on a config the schema accepts.
    const prepare = plugin.definition.prepareConfig;
    const config = prepare && schemaErrors(plugin.definition.configSchema, input.config).length === 0 ? (prepare(structuredClone(input.config), input.direction) as JsonObject) : input.config;
    this.validateConfig(plugin, config, input.direction);
    const id = this.ctx.ids.create('connector');
    const now = nowIso(this.ctx);
    const split = splitSecrets(config, plugin.secretPaths);
    const row: ConnectorRow = {
      id,
      workspace_id: workspaceId,
      name: input.name ?? null,
      type: input.type,
      direction: input.direction,
      config: split.plain,
      secrets: sealConnectorSecrets(this.ctx, workspaceId, id, split.secrets),
      health: 'healthy',
      health_checked_at: null,
      last_error: null,
      rotation_status: null,
      rotation_started_at: null,
      rotation_state: null,
      created_at: now,
      updated_at: now,
    };
    await transact(this.ctx, async (repos) => {
      await repos.workspaces.create(workspaceId, now);
      await repos.connectors.insert(row);
    });
    // A secret the connector generated is shown this once, in clear: nobody else could sign with it.
    return this.present(row, 0, this.generatedReadable(plugin, input.config, config));
  }

  /** One connector with `health` and `pipeline_count`. */
  async get(workspaceId: string, id: string): Promise<Connector> {
    const repos = reader(this.ctx);
    const row = await repos.connectors.get(workspaceId, id);
    if (!row) throw notFound('connector', id);
    const counts = await repos.connectors.pipelineCounts(workspaceId, [id]);
    return this.present(row, counts.get(id) ?? 0);
  }

  /**
   * The secret a connector lets its owner read back (a webhook connector's `signing_secret`, which
   * senders sign with), as `{ signing_secret }`. `not_found` for a connector of a type without one,
   * as for an unknown id.
   */
  async signingSecret(workspaceId: string, id: string): Promise<{ signing_secret: string }> {
    const row = await reader(this.ctx).connectors.get(workspaceId, id);
    if (!row) throw notFound('connector', id);
    const field = registeredConnector(this.ctx, row).definition.readableSecret;
    const value = field === undefined ? undefined : unsealConnectorSecrets(this.ctx, row).find((s) => s.path.length === 1 && s.path[0] === field)?.value;
    if (typeof value !== 'string') throw new FerryError('not_found', `A ${row.type} connector has no signing secret.`);
    return { signing_secret: value };
  }

  /** Lists connectors, optionally of one type. */
  async list(workspaceId: string, params: PageParams & { type?: string } = {}): Promise<Page<Connector>> {
    const repos = reader(this.ctx);
    assertText(params.type, '/type');
    const filters = { type: params.type };
    return paginate(
      this.ctx.cursors,
      params,
      { scope: { resource: 'connectors', workspaceId, filters }, key: (row: ConnectorRow) => [row.id] },
      (after, limit) => repos.connectors.list(workspaceId, filters, after, limit),
      async (rows) => {
        const counts = await repos.connectors.pipelineCounts(workspaceId, rows.map((r) => r.id));
        return rows.map((r) => this.present(r, counts.get(r.id) ?? 0));
      },
    );
  }

  /**
   * Updates the name and/or config. The config patch is merged over the current config (secrets
   * included; a secret sent back as `"********"` keeps its value), then validated as a whole.
   */
  async update(workspaceId: string, id: string, input: UpdateConnectorInput): Promise<Connector> {
    assertSchema(inputSchemas.updateConnector, input, { readOnly: [...readOnlyFields.connector, 'type', 'direction'] });
    // Read, merge and write in one transaction with the row locked: two concurrent PATCHes of
    // different fields both land, and a PATCH never writes back credentials a rotation replaced.
    await transact(this.ctx, async (repos) => {
      const row = await repos.connectors.get(workspaceId, id, 'update');
      if (!row) throw notFound('connector', id);
      const patch: Partial<ConnectorRow> = { updated_at: nowIso(this.ctx) };
      if (input.name !== undefined) patch.name = input.name;
      if (input.config !== undefined) {
        if (row.rotation_status === 'rotating') {
          throw new FerryError('rotation_in_progress', 'The connector is rotating its credentials; change its config when the rotation completes.', { currentStatus: 'rotating' });
        }
        // Secrets are decrypted only when the config changes: a rename works even without the key.
        const plugin = registeredConnector(this.ctx, row);
        const merged = mergeConfig(joinSecrets(row.config, unsealConnectorSecrets(this.ctx, row)), input.config, plugin.secretPaths);
        this.validateConfig(plugin, merged, row.direction);
        const split = splitSecrets(merged, plugin.secretPaths);
        patch.config = split.plain;
        patch.secrets = sealConnectorSecrets(this.ctx, workspaceId, id, split.secrets);
      }
      await repos.connectors.update(workspaceId, id, patch);
    });
    // Pipelines on it open it again, with the new config, before their next batch.
    if (input.config !== undefined) for (const p of await reader(this.ctx).pipelines.referencing(workspaceId, id)) this.hooks.pipelineChanged(p.id);
    return this.get(workspaceId, id);
  }

  /** Deletes a connector no live pipeline references (`connector_in_use` otherwise). */
  async delete(workspaceId: string, id: string): Promise<void> {
    await transact(this.ctx, async (repos) => {
      // Locked, so a pipeline being created on it (which share-locks it) cannot slip in between.
      const row = await repos.connectors.get(workspaceId, id, 'update');
      if (!row) throw notFound('connector', id);
      const users = await repos.pipelines.referencing(workspaceId, id);
      if (users.length > 0) {
        throw new FerryError('connector_in_use', `The connector is used by ${users.length} pipeline(s): ${users.map((p) => p.id).join(', ')}.`);
      }
      await repos.connectors.delete(workspaceId, id);
    });
  }

  /**
   * A live connection check through the plugin. Records the health; a change emits
   * `connector.health_changed`, a failure `connector.error`.
   */
  async check(workspaceId: string, id: string): Promise<{ health: Connector['health']; latency_ms: number; error?: { code: string; message: string }; details?: JsonObject }> {
    const opened = await openConnector(this.ctx, workspaceId, id);
    const started = this.ctx.clock.now();
    let result: CheckResult;
    const abort = new AbortController();
    const timer = this.ctx.clock.setTimeout(() => abort.abort(new Error('check timed out')), CHECK_TIMEOUT_MS);
    try {
      const check = opened.plugin.definition.check;
      result = check
        ? await Promise.race([
            check(connectorContext(this.ctx, opened, abort.signal)),
            new Promise<never>((_, reject) => abort.signal.addEventListener('abort', () => reject(new FerryError('unavailable', 'check timed out')), { once: true })),
          ])
        : { health: opened.row.health, latencyMs: 0 };
    } catch (error) {
      const e = error as { code?: unknown; message?: unknown };
      result = {
        health: 'down',
        latencyMs: this.ctx.clock.now() - started,
        error: { code: typeof e.code === 'string' ? e.code : 'check_failed', message: String(e.message ?? 'check failed') },
      };
    } finally {
      timer.cancel();
    }
    const error = result.error ? { code: result.error.code, message: scrub(result.error.message, opened.secretValues).slice(0, 1000) } : undefined;
    await recordConnectorHealth(this.ctx, opened.row, result.health, error);
    const details = result.details ? (JSON.parse(scrub(JSON.stringify(result.details), opened.secretValues)) as JsonObject) : undefined;
    return { health: result.health, latency_ms: Math.max(0, Math.round(result.latencyMs)), ...(error ? { error } : {}), ...(details ? { details } : {}) };
  }

  /**
   * Rotates a connector's credentials (contract section 5.1): marks it rotating (a second rotation
   * meanwhile is `rotation_in_progress`), pauses every active pipeline that uses it once their
   * in-flight batches finish, swaps in the new secret fields (`input.config`, or what the plugin's
   * `rotate` generates), checks the connection with them, and resumes exactly the pipelines it
   * paused. A failed check restores the old credentials, resumes, and throws `rotation_failed`.
   * One connector shared by N pipelines is rotated once. Emits `connector.rotated`.
   */
  async rotate(workspaceId: string, id: string, input: RotateConnectorInput = {}): Promise<ConnectorRotationResult> {
    assertSchema(ROTATE_INPUT, input);
    const opened = await openConnector(this.ctx, workspaceId, id);
    const { plugin } = opened;
    const supplied = input.config;
    if (supplied !== undefined) this.assertSecretFields(plugin, supplied);
    else if (!plugin.definition.rotate) {
      throw validationError(
        [{ pointer: '/config', code: 'required', detail: `A ${opened.row.type} connector cannot generate credentials; supply the new secret fields.` }],
        'This connector type cannot rotate on its own.',
      );
    }
    const startedAt = nowIso(this.ctx);
    const marker = `rotation:${id}`;
    // 1. Mark it rotating and pause the active pipelines that use it, in one transaction.
    const paused = await transact(this.ctx, async (repos, emit) => {
      const row = await repos.connectors.get(workspaceId, id, 'update');
      if (!row) throw notFound('connector', id);
      if (row.rotation_status === 'rotating') {
        throw new FerryError('rotation_in_progress', 'A rotation of this connector is already running.', { currentStatus: 'rotating' });
      }
      const ids: string[] = [];
      for (const pipeline of await repos.pipelines.referencing(workspaceId, id)) {
        if (pipeline.state !== 'active') continue;
        if (await repos.pipelines.update(workspaceId, pipeline.id, { state: 'paused', paused_by: marker, updated_at: startedAt }, ['active'])) {
          ids.push(pipeline.id);
          emit(workspaceId, 'pipeline.paused', { pipeline_id: pipeline.id, reason: 'rotation' });
        }
      }
      const state: RotationState = { previous_secrets: row.secrets, previous_health: row.health, paused_pipeline_ids: ids };
      await repos.connectors.update(workspaceId, id, { rotation_status: 'rotating', rotation_started_at: startedAt, rotation_state: JSON.stringify(state), health: 'degraded', updated_at: startedAt });
      if (row.health !== 'degraded') emit(workspaceId, 'connector.health_changed', { connector_id: id, previous_health: row.health, health: 'degraded' });
      return ids;
    });
    for (const pipelineId of paused) this.hooks.pipelineChanged(pipelineId);
    await Promise.all(paused.map((pipelineId) => this.hooks.drain(pipelineId)));

    // 2. New secret fields, merged and validated; 3. swapped in; 4. checked.
    let failure: FerryError | undefined;
    let revealed: JsonObject | undefined;
    try {
      // Supplied fields go through the plugin too, when it rotates: it may check them or derive
      // the stored form (a password spliced into a connection string).
      if (supplied) this.assertSecretFields(plugin, supplied);
      const rotate = plugin.definition.rotate;
      const fields = rotate
        ? ((await rotate(connectorContext(this.ctx, opened, new AbortController().signal), supplied ? { config: supplied } : {})) as JsonObject)
        : supplied!;
      this.assertSecretFields(plugin, fields);
      const merged = mergeConfig(joinSecrets(opened.row.config, unsealConnectorSecrets(this.ctx, opened.row)), fields, plugin.secretPaths);
      this.validateConfig(plugin, merged, opened.row.direction);
      const split = splitSecrets(merged, plugin.secretPaths);
      await transact(this.ctx, (repos) => repos.connectors.update(workspaceId, id, { config: split.plain, secrets: sealConnectorSecrets(this.ctx, workspaceId, id, split.secrets) }));
      if (supplied === undefined) revealed = this.generatedReadable(plugin, {}, fields);
      const checked = await this.check(workspaceId, id);
      if (checked.health === 'down') {
        failure = new FerryError('rotation_failed', `The check with the new credentials failed${checked.error ? `: ${checked.error.code}` : ''}; the old credentials are back.`);
      }
    } catch (error) {
      if (isFerryError(error, 'validation_failed')) failure = error;
      else if (supplied === undefined && error instanceof ConnectorError && !error.retryable) {
        // The plugin says it cannot generate credentials here (say, no admin connection): the
        // caller must supply them, as for a type without `rotate`.
        failure = validationError(
          [{ pointer: '/config', code: 'required', detail: `This connector cannot generate new credentials (${error.code}); supply the new secret fields.` }],
          'New credentials must be supplied.',
        );
      } else failure = new FerryError('rotation_failed', 'New credentials could not be obtained; the old credentials are back.', { cause: error });
    }
    // 5. Resume what it paused, and on failure put the old credentials back.
    const completedAt = nowIso(this.ctx);
    await this.finishRotation(workspaceId, id, failure ? 'rolled_back' : 'completed', completedAt);
    if (failure) throw failure;
    const connector = await this.get(workspaceId, id);
    return {
      connector: revealed ? { ...connector, config: { ...connector.config, ...revealed } } : connector,
      rotation: { status: 'completed', paused_pipeline_ids: paused, started_at: startedAt, completed_at: completedAt },
    };
  }

  /**
   * Finishes rotations a crash interrupted (engine start): restores the previous credentials and
   * resumes the pipelines they paused. Only rotations older than `staleAfterMs` are touched, so a
   * rotation another live engine is running is left alone.
   */
  async recoverRotations(staleAfterMs = ROTATION_STALE_MS): Promise<number> {
    const before = new Date(this.ctx.clock.now() - staleAfterMs).toISOString();
    const stale = await this.ctx.storage.repos.connectors.listRotating(before);
    for (const row of stale) {
      await this.finishRotation(row.workspace_id, row.id, 'rolled_back', nowIso(this.ctx));
      this.ctx.logger.warn({ connector_id: row.id }, 'an interrupted credential rotation was rolled back');
    }
    return stale.length;
  }

  private async finishRotation(workspaceId: string, id: string, outcome: 'completed' | 'rolled_back', now: string): Promise<void> {
    const marker = `rotation:${id}`;
    const resumed = await transact(this.ctx, async (repos, emit) => {
      const row = await repos.connectors.get(workspaceId, id, 'update');
      if (!row || row.rotation_status !== 'rotating') return [];
      const state = JSON.parse(row.rotation_state ?? '{}') as Partial<RotationState>;
      const patch: Partial<ConnectorRow> = { rotation_status: null, rotation_started_at: null, rotation_state: null, updated_at: now };
      if (outcome === 'rolled_back') patch.secrets = state.previous_secrets ?? row.secrets;
      // `degraded` meant "rotating"; after a rollback the old credentials' health is back, after a
      // success the check's verdict stands (a type without a check counts as healthy).
      const health = outcome === 'rolled_back' ? (state.previous_health ?? row.health) : row.health === 'degraded' ? 'healthy' : row.health;
      if (health !== row.health) {
        patch.health = health;
        emit(workspaceId, 'connector.health_changed', { connector_id: id, previous_health: row.health, health });
      }
      await repos.connectors.update(workspaceId, id, patch);
      const ids: string[] = [];
      for (const pipelineId of state.paused_pipeline_ids ?? []) {
        const pipeline = await repos.pipelines.get(workspaceId, pipelineId);
        // Exactly the pipelines this rotation paused and nobody touched since: a user's pause or
        // delete meanwhile wins.
        if (!pipeline || pipeline.state !== 'paused' || pipeline.paused_by !== marker) continue;
        await repos.pipelines.update(workspaceId, pipelineId, { state: 'active', paused_by: null, updated_at: now }, ['paused']);
        emit(workspaceId, 'pipeline.activated', { pipeline_id: pipelineId, reason: 'rotation' });
        ids.push(pipelineId);
      }
      if (outcome === 'completed') emit(workspaceId, 'connector.rotated', { connector_id: id, paused_pipeline_ids: state.paused_pipeline_ids ?? [] });
      return ids;
    });
    for (const pipelineId of resumed) this.hooks.pipelineChanged(pipelineId);
  }

  /** Rotation input may name secret fields only, with real values. */
  private assertSecretFields(plugin: RegisteredConnector, fields: JsonObject): void {
    const secretRoots = new Set(plugin.secretPaths.map((p) => p[0]));
    const errors: FieldError[] = [];
    for (const [key, value] of Object.entries(fields)) {
      const pointer = `/config/${pointerToken(key)}`;
      if (!secretRoots.has(key)) errors.push({ pointer, code: 'not_secret', detail: 'Only secret fields rotate; change other fields with PATCH.' });
      else if (value === REDACTED) errors.push({ pointer, code: 'redacted_value', detail: 'This is the redacted placeholder, not a value; send the secret itself.' });
    }
    if (errors.length > 0) throw validationError(errors);
  }

  private plugin(type: string, pointer: string): RegisteredConnector {
    const plugin = this.ctx.registry.connector(type);
    if (!plugin) {
      const known = this.ctx.registry.connectorTypes();
      throw validationError([{ pointer, code: 'enum', detail: `Unknown connector type; this engine supports: ${known.join(', ') || 'none'}.` }]);
    }
    return plugin;
  }

  // The schema first; the plugin's own rules (which fields a direction needs, hosts the
  // outbound policy refuses) only on a config the schema accepts, with schema defaults applied.
  // A config whose only problems are refused hosts is well formed but breaks a rule: 422
  // `url_not_allowed`, as for a webhook subscription's url; anything else wrong is a 400.
  private validateConfig(plugin: RegisteredConnector, config: JsonObject, direction: ConnectorRow['direction']): void {
    const errors = schemaErrors(plugin.definition.configSchema, config, { prefix: '/config' });
    if (errors.length === 0 && plugin.definition.validateConfig) {
      const withDefaults = Value.Default(plugin.definition.configSchema, structuredClone(config)) as JsonObject;
      const outbound = connectorOutboundFor(this.ctx.settings.outboundAllow);
      for (const e of plugin.definition.validateConfig(withDefaults, direction, outbound)) errors.push({ ...e, pointer: `/config${e.pointer}` });
    }
    if (errors.length > 0 && errors.every((e) => e.code === URL_NOT_ALLOWED)) {
      throw new FerryError(URL_NOT_ALLOWED, errors[0]!.detail, { errors });
    }
    if (errors.length > 0) throw validationError(errors, 'The connector config is not valid.');
  }

  /**
   * The connector's readable secret (see `ConnectorDefinition.readableSecret`) when the connector
   * generated it: absent from what the caller sent, present in what is stored. Undefined otherwise:
   * a secret the caller supplied is never echoed back.
   */
  private generatedReadable(plugin: RegisteredConnector, sent: JsonObject, stored: JsonObject): JsonObject | undefined {
    const field = plugin.definition.readableSecret;
    if (field === undefined || sent[field] !== undefined || typeof stored[field] !== 'string') return undefined;
    return { [field]: stored[field] };
  }

  private present(row: ConnectorRow, pipelineCount: number, revealed?: JsonObject): Connector {
    return {
      id: row.id,
      name: row.name,
      type: row.type,
      direction: row.direction,
      config: revealed ? { ...row.config, ...revealed } : row.config,
      health: row.rotation_status === 'rotating' && row.health === 'healthy' ? 'degraded' : row.health,
      pipeline_count: pipelineCount,
      rotation_status: row.rotation_status,
      last_error: row.last_error,
      created_at: row.created_at,
      updated_at: row.updated_at,
    };
  }
}

import { type Connector, type ConnectorCheck, type ConnectorRotationResult, type RotateConnectorInput, FerryError, isFerryError, notFound, validationError, type FieldError, inputSchemas, assertSchema, pointerToken } from '../common/index.js';
import { nowIso, transact, type EngineContext, type EngineHooks } from '../context/index.js';
import { joinSecrets, mergeConfig, splitSecrets, ConnectorError, type RegisteredConnector, REDACTED, type JsonObject } from '../plugin-api/index.js';
import type { ConnectorRow } from '../storage/index.js';
import { generatedReadableSecret, validateConnectorConfig } from './connector-config.js';
import { connectorContext, openConnector, sealConnectorSecrets, unsealConnectorSecrets } from './opened-connector.js';

/** The recovery record kept in `connectors.rotation_state` while a rotation runs. */
interface RotationState {
  /** The previous sealed secrets, restored when the rotation fails or a crash interrupts it. */
  previous_secrets: string | null;
  previous_health: ConnectorRow['health'];
  paused_pipeline_ids: string[];
}

/** A rotation running longer than this is taken for one a crash interrupted. */
const ROTATION_STALE_MS = 15 * 60 * 1000;

/**
 * What a rotation needs from the connectors service: the same check a client runs, and the
 * connector as a response shows it. An interface rather than the service's type so the service can
 * call down into this file without the two importing each other.
 */
export interface RotationConnectors {
  check(workspaceId: string, id: string): Promise<ConnectorCheck>;
  get(workspaceId: string, id: string): Promise<Connector>;
}

/**
 * Rotates a connector's credentials (docs/api.md, Connector rotation): marks it rotating (a second rotation
 * meanwhile is `rotation_in_progress`), pauses every active pipeline that uses it once their
 * in-flight batches finish, swaps in the new secret fields (`input.config`, or what the plugin's
 * `rotate` generates), checks the connection with them, and resumes exactly the pipelines it
 * paused. A failed check restores the old credentials, resumes, and throws `rotation_failed`.
 * One connector shared by N pipelines is rotated once. Emits `connector.rotated`.
 */
export async function rotateConnector(
  ctx: EngineContext,
  hooks: EngineHooks,
  connectors: RotationConnectors,
  workspaceId: string,
  id: string,
  input: RotateConnectorInput = {},
): Promise<ConnectorRotationResult> {
  assertSchema(inputSchemas.rotateConnector, input);
  const opened = await openConnector(ctx, workspaceId, id);
  const { plugin } = opened;
  const supplied = input.config;
  if (supplied !== undefined) assertSecretFields(plugin, supplied);
  else if (!plugin.definition.rotate) {
    throw validationError(
      [{ pointer: '/config', code: 'required', detail: `A ${opened.row.type} connector cannot generate credentials; supply the new secret fields.` }],
      'This connector type cannot rotate on its own.',
    );
  }
  const startedAt = nowIso(ctx);
  const marker = `rotation:${id}`;
  // 1. Mark it rotating and pause the active pipelines that use it, in one transaction.
  const paused = await transact(ctx, async (repos, emit) => {
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
  for (const pipelineId of paused) hooks.pipelineChanged(pipelineId);
  await Promise.all(paused.map((pipelineId) => hooks.drain(pipelineId)));

  // 2. New secret fields, merged and validated; 3. swapped in; 4. checked.
  let failure: FerryError | undefined;
  let revealed: JsonObject | undefined;
  try {
    // Supplied fields go through the plugin too, when it rotates: it may check them or derive
    // the stored form (a password spliced into a connection string).
    if (supplied) assertSecretFields(plugin, supplied);
    const rotate = plugin.definition.rotate;
    const fields = rotate
      ? ((await rotate(connectorContext(ctx, opened, new AbortController().signal), supplied ? { config: supplied } : {})) as JsonObject)
      : supplied!;
    assertSecretFields(plugin, fields);
    const merged = mergeConfig(joinSecrets(opened.row.config, unsealConnectorSecrets(ctx, opened.row)), fields, plugin.secretPaths);
    validateConnectorConfig(ctx, plugin, merged, opened.row.direction);
    const split = splitSecrets(merged, plugin.secretPaths);
    await transact(ctx, (repos) => repos.connectors.update(workspaceId, id, { config: split.plain, secrets: sealConnectorSecrets(ctx, workspaceId, id, split.secrets) }));
    if (supplied === undefined) revealed = generatedReadableSecret(plugin, {}, fields);
    const checked = await connectors.check(workspaceId, id);
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
  const completedAt = nowIso(ctx);
  await finishRotation(ctx, hooks, workspaceId, id, failure ? 'rolled_back' : 'completed', completedAt);
  if (failure) throw failure;
  const connector = await connectors.get(workspaceId, id);
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
export async function recoverRotations(ctx: EngineContext, hooks: EngineHooks, staleAfterMs = ROTATION_STALE_MS): Promise<number> {
  const before = new Date(ctx.clock.now() - staleAfterMs).toISOString();
  const stale = await ctx.storage.repos.connectors.listRotating(before);
  for (const row of stale) {
    await finishRotation(ctx, hooks, row.workspace_id, row.id, 'rolled_back', nowIso(ctx));
    ctx.logger.warn({ connector_id: row.id }, 'an interrupted credential rotation was rolled back');
  }
  return stale.length;
}

async function finishRotation(ctx: EngineContext, hooks: EngineHooks, workspaceId: string, id: string, outcome: 'completed' | 'rolled_back', now: string): Promise<void> {
  const marker = `rotation:${id}`;
  const resumed = await transact(ctx, async (repos, emit) => {
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
  for (const pipelineId of resumed) hooks.pipelineChanged(pipelineId);
}

/** Rotation input may name secret fields only, with real values. */
function assertSecretFields(plugin: RegisteredConnector, fields: JsonObject): void {
  const secretRoots = new Set(plugin.secretPaths.map((p) => p[0]));
  const errors: FieldError[] = [];
  for (const [key, value] of Object.entries(fields)) {
    const pointer = `/config/${pointerToken(key)}`;
    if (!secretRoots.has(key)) errors.push({ pointer, code: 'not_secret', detail: 'Only secret fields rotate; change other fields with PATCH.' });
    else if (value === REDACTED) errors.push({ pointer, code: 'redacted_value', detail: 'This is the redacted placeholder, not a value; send the secret itself.' });
  }
  if (errors.length > 0) throw validationError(errors);
}

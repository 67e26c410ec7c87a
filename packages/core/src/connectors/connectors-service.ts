import { type CheckResult, type JsonObject, joinSecrets, mergeConfig, scrub, splitSecrets, type RegisteredConnector, REDACTED } from '../plugin-api/index.js';
import { type Connector, type ConnectorCheck, type ConnectorRotationResult, type ConnectorSigningSecret, type CreateConnectorInput, type Page, type PageParams, type RotateConnectorInput, type UpdateConnectorInput, FerryError, notFound, validationError, paginate, inputSchemas, readOnlyFields, assertSchema, assertText, schemaErrors } from '../common/index.js';
import { assertWorkspaceId, nowIso, reader, transact, type EngineContext, NO_ENGINE_HOOKS, type EngineHooks } from '../context/index.js';
import type { ConnectorRow } from '../storage/index.js';
import { generatedReadableSecret, validateConnectorConfig } from './connector-config.js';
import { rotateConnector } from './connector-rotation.js';
import { connectorContext, openConnector, recordConnectorHealth, registeredConnector, sealConnectorSecrets, unsealConnectorSecrets } from './opened-connector.js';

/** How long a connection check may take before it counts as failed. */
const CHECK_TIMEOUT_MS = 10_000;

/**
 * Connectors: CRUD with the direction rules, secret fields encrypted at rest and redacted on
 * the way out, and live checks through the plugin (docs/api.md, Connectors).
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
    validateConnectorConfig(this.ctx, plugin, config, input.direction);
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
    return this.present(row, 0, generatedReadableSecret(plugin, input.config, config));
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
  async signingSecret(workspaceId: string, id: string): Promise<ConnectorSigningSecret> {
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
      (after, limit, order) => repos.connectors.list(workspaceId, filters, after, limit, order),
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
        validateConnectorConfig(this.ctx, plugin, merged, row.direction);
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
  async check(workspaceId: string, id: string): Promise<ConnectorCheck> {
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
   * Rotates a connector's credentials (see `connector-rotation.ts`): its active pipelines are
   * paused while the new secrets are swapped in and checked, and resumed; a failed check puts the
   * old ones back (`rotation_failed`). Emits `connector.rotated`.
   */
  async rotate(workspaceId: string, id: string, input: RotateConnectorInput = {}): Promise<ConnectorRotationResult> {
    return rotateConnector(this.ctx, this.hooks, this, workspaceId, id, input);
  }

  private plugin(type: string, pointer: string): RegisteredConnector {
    const plugin = this.ctx.registry.connector(type);
    if (!plugin) {
      const known = this.ctx.registry.connectorTypes();
      throw validationError([{ pointer, code: 'enum', detail: `Unknown connector type; this engine supports: ${known.join(', ') || 'none'}.` }]);
    }
    return plugin;
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

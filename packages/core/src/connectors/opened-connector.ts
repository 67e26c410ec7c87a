import { Value } from '@sinclair/typebox/value';
import { connectorOutboundFor } from '../net/index.js';
import { type Connector, FerryError, notFound } from '../common/index.js';
import { nowIso, reader, transact, type EngineContext } from '../context/index.js';
import { joinSecrets, secretStrings, type SplitConfig, type RegisteredConnector, type ConnectorContext, type ConnectorInbox, type JsonObject } from '../plugin-api/index.js';
import type { ConnectorRow } from '../storage/index.js';

/**
 * A connector with its config in clear, as plugins receive it: what the runtime, checks and
 * rotations work with. Never leaves the engine (the services answer redacted records).
 */
export interface OpenedConnector {
  row: ConnectorRow;
  plugin: RegisteredConnector;
  /** Full config, secrets decrypted and schema defaults applied. */
  config: JsonObject;
  /** Secret values, to scrub from any message before it is stored or logged. */
  secretValues: string[];
}

/** Loads a connector with its config in clear (`not_found`; `unavailable` when its type is not registered). */
export async function openConnector(ctx: EngineContext, workspaceId: string, id: string): Promise<OpenedConnector> {
  const row = await reader(ctx).connectors.get(workspaceId, id);
  if (!row) throw notFound('connector', id);
  const plugin = registeredConnector(ctx, row);
  const secrets = unsealConnectorSecrets(ctx, row);
  const full = joinSecrets(row.config, secrets);
  return {
    row,
    plugin,
    config: Value.Default(plugin.definition.configSchema, structuredClone(full)) as JsonObject,
    secretValues: secretStrings(secrets),
  };
}

/** The plugin context of an opened connector. */
export function connectorContext(ctx: EngineContext, opened: OpenedConnector, signal: AbortSignal): ConnectorContext<JsonObject> {
  return {
    config: opened.config,
    connectorId: opened.row.id,
    workspaceId: opened.row.workspace_id,
    direction: opened.row.direction,
    logger: ctx.logger.child({ connector_id: opened.row.id, connector_type: opened.row.type }),
    clock: ctx.clock,
    signal,
    // The engine's one policy, shared by every context of this engine (built once per list).
    outbound: connectorOutboundFor(ctx.settings.outboundAllow),
  };
}

/**
 * Records a connector's health (from a check, a read or a write). Emits
 * `connector.health_changed` when it changes and `connector.error` when `error` is given.
 */
export async function recordConnectorHealth(
  ctx: EngineContext,
  row: Pick<ConnectorRow, 'id' | 'workspace_id' | 'health'>,
  health: Connector['health'],
  error?: { code: string; message: string },
): Promise<void> {
  const now = nowIso(ctx);
  await transact(ctx, async (repos, emit) => {
    // Locked: concurrent reports are applied one after the other, so every change is emitted.
    const current = await repos.connectors.get(row.workspace_id, row.id, 'update');
    if (!current) return;
    await repos.connectors.update(row.workspace_id, row.id, {
      health,
      health_checked_at: now,
      last_error: error ? { ...error, at: now } : current.last_error,
    });
    if (current.health !== health) {
      emit(row.workspace_id, 'connector.health_changed', { connector_id: row.id, previous_health: current.health, health });
    }
    if (error) emit(row.workspace_id, 'connector.error', { connector_id: row.id, error: error.code, message: error.message });
  });
}

/** The plugin of a stored connector; `unavailable` when this engine does not register its type. */
export function registeredConnector(ctx: EngineContext, row: ConnectorRow): RegisteredConnector {
  const plugin = ctx.registry.connector(row.type);
  if (!plugin) {
    throw new FerryError('unavailable', `Connector type ${JSON.stringify(row.type)} is not registered in this engine.`, { retryAfterSeconds: 60 });
  }
  return plugin;
}

// The row id and workspace are the AAD: a sealed value copied onto another row does not open.

/** A connector's secret fields, encrypted for its row (null when it has none). */
export function sealConnectorSecrets(ctx: EngineContext, workspaceId: string, id: string, secrets: SplitConfig['secrets']): string | null {
  return secrets.length === 0 ? null : ctx.box.seal(JSON.stringify(secrets), `connector:${workspaceId}:${id}`);
}

/** A connector row's secret fields, decrypted. */
export function unsealConnectorSecrets(ctx: EngineContext, row: ConnectorRow): SplitConfig['secrets'] {
  return row.secrets === null ? [] : (JSON.parse(ctx.box.open(row.secrets, `connector:${row.workspace_id}:${row.id}`)) as SplitConfig['secrets']);
}

/** The inbox of one connector, as its plugin reads it (positions are inbox sequence numbers). */
export function connectorInbox(ctx: EngineContext, connectorId: string): ConnectorInbox {
  return {
    async read(checkpoint, max) {
      const after = typeof checkpoint === 'number' ? checkpoint : 0;
      const rows = await ctx.storage.repos.inbox.readAfter(connectorId, after, max);
      return {
        records: rows.map((row) => ({ position: String(row.seq), type: row.type, occurredAt: row.occurred_at, payload: row.payload })),
        checkpoint: rows.length === 0 ? after : rows[rows.length - 1]!.seq,
      };
    },
  };
}

import type { EngineContext } from '../engine/index.js';
import { isFerryError } from '../common/index.js';
import { scrub, type ConnectorHealth, type ConnectorInbox, type Destination, type Source } from '../plugin-api/index.js';
import { connectorContext, openConnector, recordConnectorHealth, type OpenedConnector } from '../connectors/index.js';
import type { ConnectorRow, PipelineRow } from '../storage/index.js';
import { FlowError, toFlowError } from './flow-error.js';
import { TransformChain, UnknownStepError } from './transform-chain.js';

/** A pipeline's source and destination opened through their plugins, and its compiled steps. */
export interface PipelineConnections {
  source: OpenedConnector;
  destination: OpenedConnector;
  /** Absent for a replay, which only writes. */
  reader?: Source;
  writer: Destination;
  /** Replaces every secret of both connectors in a message. */
  scrub: (text: string) => string;
  /** Changes when either connector's settings change (config, rotation): time to open them again. */
  version: string;
  close(): Promise<void>;
}

/**
 * Opens the connectors a pipeline moves events between. Anything that goes wrong is a {@link FlowError}:
 * a plugin's own error keeps its flag, a connector type this engine does not register or a step
 * type that disappeared cannot heal by retrying soon, but is retried slowly like everything
 * else (a redeploy with the plugin fixes it).
 */
export async function openConnections(
  ctx: EngineContext,
  pipeline: PipelineRow,
  options: { withSource: boolean; signal: AbortSignal },
): Promise<PipelineConnections> {
  let source: OpenedConnector;
  let destination: OpenedConnector;
  try {
    source = await openConnector(ctx, pipeline.workspace_id, pipeline.source_connector_id);
    destination = await openConnector(ctx, pipeline.workspace_id, pipeline.destination_connector_id);
  } catch (error) {
    if (isFerryError(error, 'unavailable')) throw new FlowError('internal', 'connector_type_unavailable', error.message, false, { cause: error });
    throw error;
  }
  const secrets = [...source.secretValues, ...destination.secretValues];
  const clean = (text: string) => scrub(text, secrets);
  const opened: { reader?: Source; writer?: Destination } = {};
  const closeAll = async () => {
    // A closed source reports nothing any more: its last figure would go stale.
    if (options.withSource) ctx.sourceLag.delete(pipeline.id);
    for (const side of [opened.reader, opened.writer]) {
      try {
        await side?.close?.();
      } catch (error) {
        ctx.logger.warn({ pipeline_id: pipeline.id, err: clean(String((error as Error)?.message ?? error)) }, 'closing a connector failed');
      }
    }
  };
  try {
    const pluginContext = (c: OpenedConnector) => ({
      ...connectorContext(ctx, c, options.signal),
      pipelineId: pipeline.id,
      inbox: connectorInbox(ctx, c.row.id),
      reportLag: (bytes: number) => {
        if (Number.isFinite(bytes) && bytes >= 0) ctx.sourceLag.set(pipeline.id, bytes);
      },
    });
    if (options.withSource) {
      const open = source.plugin.definition.source;
      if (!open) throw new FlowError('source', 'direction_unsupported', `Connector type ${source.row.type} cannot be read from.`, false);
      try {
        opened.reader = await open(pluginContext(source));
      } catch (error) {
        throw toFlowError('source', error, clean);
      }
    }
    const openWriter = destination.plugin.definition.destination;
    if (!openWriter) throw new FlowError('destination', 'direction_unsupported', `Connector type ${destination.row.type} cannot be written to.`, false);
    try {
      opened.writer = await openWriter(pluginContext(destination));
    } catch (error) {
      throw toFlowError('destination', error, clean);
    }
    return {
      source,
      destination,
      reader: opened.reader,
      writer: opened.writer,
      scrub: clean,
      version: connectorsVersion(source.row, destination.row),
      close: closeAll,
    };
  } catch (error) {
    await closeAll();
    throw error;
  }
}

/**
 * Reports what reads and writes learn about a connector's health: `degraded` at the first
 * failure, `down` after `downAfter` in a row, `healthy` again at the first success. Storage is
 * written only on a change, and `connector.error` is emitted once per outage, not per retry.
 */
export class HealthReporter {
  private readonly known = new Map<string, ConnectorHealth>();

  constructor(
    private readonly ctx: EngineContext,
    private readonly downAfter: number,
  ) {}

  /** Remembers what storage says now, so the first report compares with the truth. */
  observe(connector: OpenedConnector): void {
    if (!this.known.has(connector.row.id)) this.known.set(connector.row.id, connector.row.health);
  }

  /** A failure; `consecutive` counts this one. */
  async failed(connector: OpenedConnector, consecutive: number, error: { code: string; message: string }): Promise<void> {
    const health: ConnectorHealth = consecutive >= this.downAfter ? 'down' : 'degraded';
    const before = this.known.get(connector.row.id) ?? connector.row.health;
    // Only a success makes it better: a flow that starts again on a connector already down (a new
    // session, another engine) counts from 1 but must not report it `degraded` again.
    if (before === health || (before === 'down' && health === 'degraded')) return;
    this.known.set(connector.row.id, health);
    await recordConnectorHealth(this.ctx, connector.row, health, before === 'healthy' ? error : undefined);
  }

  /** A success. */
  async succeeded(connector: OpenedConnector): Promise<void> {
    const before = this.known.get(connector.row.id) ?? connector.row.health;
    if (before === 'healthy') return;
    this.known.set(connector.row.id, 'healthy');
    await recordConnectorHealth(this.ctx, connector.row, 'healthy');
  }
}

/** Compiles a pipeline's steps; a step type this engine lacks is a {@link FlowError} no quick retry fixes. */
export function compileSteps(ctx: EngineContext, pipeline: PipelineRow): TransformChain {
  try {
    return new TransformChain(pipeline.transforms, ctx.registry, { pipelineId: pipeline.id, workspaceId: pipeline.workspace_id, salt: pipeline.salt });
  } catch (error) {
    if (error instanceof UnknownStepError) throw new FlowError('internal', error.code, error.message, false);
    throw error;
  }
}

/**
 * What identifies the connectors' settings: their stored config and sealed secrets, not just
 * `updated_at`, which two changes within one millisecond (or one instant of a virtual clock) share.
 */
export function connectorsVersion(source: ConnectorRow | null, destination: ConnectorRow | null): string {
  return JSON.stringify([source?.config, source?.secrets, source?.updated_at, destination?.config, destination?.secrets, destination?.updated_at]);
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

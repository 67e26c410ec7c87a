import type { EngineContext } from '../context/index.js';
import { isFerryError } from '../common/index.js';
import { scrub, type BackfillReport, type BackfillRequests, type ConnectorHealth, type Destination, type Source } from '../plugin-api/index.js';
import { connectorContext, connectorInbox, openConnector, recordConnectorHealth, type OpenedConnector } from '../connectors/index.js';
import { backfillProgressOf, backfillRequests, recordBackfillReport } from '../backfills/index.js';
import type { ConnectorRow, PipelineRow } from '../storage/index.js';
import { FlowError, toFlowError } from './flow-error.js';
import { TransformChain, UnknownStepError } from './transform-chain.js';

/** One side of a pipeline: what it reads from, or what it writes to. */
export type PipelineSide = 'source' | 'destination';

/**
 * A pipeline's source and destination opened through their plugins. Each side can be opened
 * again on its own ({@link reopen}) when its connector changes: a fix to the destination reaches
 * the batch held against it at its next attempt, without giving up the source's position.
 */
export interface PipelineConnections {
  source: OpenedConnector;
  destination: OpenedConnector;
  /** Absent for a replay, which only writes. */
  reader?: Source;
  writer: Destination;
  /** Replaces every secret of both connectors in a message. */
  scrub: (text: string) => string;
  /** What each side was opened from (see {@link connectorVersion}): a connector whose version differs changed since. */
  versions: Record<PipelineSide, string>;
  /**
   * Opens one side again with its connector's current settings and closes the old one; the other
   * side is kept. Nothing may be reading or writing through the old one meanwhile.
   */
  reopen(side: PipelineSide): Promise<void>;
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
  const conns = new Connections(ctx, pipeline, options);
  try {
    await conns.reopen('source');
    await conns.reopen('destination');
  } catch (error) {
    await conns.close();
    throw error;
  }
  return conns;
}

/** {@link PipelineConnections}, one side opened at a time. */
class Connections implements PipelineConnections {
  source!: OpenedConnector;
  destination!: OpenedConnector;
  reader?: Source;
  writer!: Destination;
  scrub: (text: string) => string = (text) => text;
  versions: Record<PipelineSide, string> = { source: '', destination: '' };

  constructor(
    private readonly ctx: EngineContext,
    private readonly pipeline: PipelineRow,
    private readonly options: { withSource: boolean; signal: AbortSignal },
  ) {}

  async reopen(side: PipelineSide): Promise<void> {
    const { ctx, pipeline } = this;
    let opened: OpenedConnector;
    try {
      opened = await openConnector(ctx, pipeline.workspace_id, side === 'source' ? pipeline.source_connector_id : pipeline.destination_connector_id);
    } catch (error) {
      if (isFerryError(error, 'unavailable')) throw new FlowError('internal', 'connector_type_unavailable', error.message, false, { cause: error });
      throw error;
    }
    // The messages of opening it are scrubbed of its new secrets as well as the other side's.
    const other = side === 'source' ? this.destination : this.source;
    const secrets = [...opened.secretValues, ...(other?.secretValues ?? [])];
    const clean = (text: string) => scrub(text, secrets);
    /** The version of the backfills the source was told of (see `backfillRequests`). */
    let backfillsVersion = '';
    if (side === 'source') {
      let reader: Source | undefined;
      if (this.options.withSource) {
        const open = opened.plugin.definition.source;
        if (!open) throw new FlowError('source', 'direction_unsupported', `Connector type ${opened.row.type} cannot be read from.`, false);
        // Only a type that plans backfills is asked to run them.
        const backfills = canBackfill(opened) ? await backfillRequests(ctx.storage.repos, pipeline.id) : undefined;
        backfillsVersion = backfills?.version ?? '';
        try {
          reader = await open(this.pluginContext(opened, backfills?.requests));
        } catch (error) {
          throw toFlowError('source', error, clean);
        }
      }
      await this.closeSide('source');
      this.reader = reader;
      this.source = opened;
    } else {
      const open = opened.plugin.definition.destination;
      if (!open) throw new FlowError('destination', 'direction_unsupported', `Connector type ${opened.row.type} cannot be written to.`, false);
      let writer: Destination;
      try {
        writer = await open(this.pluginContext(opened));
      } catch (error) {
        throw toFlowError('destination', error, clean);
      }
      await this.closeSide('destination');
      this.writer = writer;
      this.destination = opened;
    }
    this.versions[side] = connectorVersion(opened.row) + (side === 'source' ? backfillsVersion : '');
    this.scrub = clean;
  }

  /** Closes both sides; called once, when the flow or the replay is done with them. */
  async close(): Promise<void> {
    await this.closeSide('source');
    await this.closeSide('destination');
  }

  private pluginContext(c: OpenedConnector, backfills?: BackfillRequests) {
    const { ctx, pipeline } = this;
    const record = this.backfillRecorder(c);
    return {
      ...connectorContext(ctx, c, this.options.signal),
      pipelineId: pipeline.id,
      inbox: connectorInbox(ctx, c.row.id),
      ...(backfills ? { backfills } : {}),
      reportLag: (bytes: number) => {
        if (Number.isFinite(bytes) && bytes >= 0) ctx.sourceLag.set(pipeline.id, bytes);
      },
      reportBackfill: (report: BackfillReport) => {
        if (report.state === 'running') ctx.backfills.set(pipeline.id, backfillProgressOf(report));
        else if (ctx.backfills.get(pipeline.id)?.id === report.id) ctx.backfills.delete(pipeline.id);
        record(report);
      },
    };
  }

  /**
   * Records a source's backfill reports in storage, one after another in the order made. A
   * running backfill reports after every batch: its progress is written at most once a second
   * (the latest report then), its start and its end at once.
   */
  private backfillRecorder(c: OpenedConnector): (report: BackfillReport) => void {
    const { ctx, pipeline } = this;
    let chain: Promise<void> = Promise.resolve();
    let last = Number.NEGATIVE_INFINITY;
    let started: string | undefined;
    let waiting: BackfillReport | undefined;
    let timer: { cancel(): void } | undefined;
    const write = (report: BackfillReport) => {
      last = ctx.clock.now();
      chain = chain
        .then(() => recordBackfillReport(ctx, pipeline, report, (text) => scrub(text, c.secretValues)))
        .catch((error: unknown) => {
          // A later report says it again; a lost one only delays what the API shows.
          ctx.logger.warn({ pipeline_id: pipeline.id, backfill_id: report.id, err: (error as Error)?.message }, 'a backfill report could not be recorded');
        });
    };
    return (report) => {
      timer?.cancel();
      timer = undefined;
      waiting = undefined;
      const due = last + BACKFILL_REPORT_INTERVAL_MS - ctx.clock.now();
      if (report.state !== 'running' || started !== report.id || due <= 0 || this.options.signal.aborted) {
        started = report.id;
        write(report);
        return;
      }
      waiting = report;
      timer = ctx.clock.setTimeout(() => {
        timer = undefined;
        if (waiting && !this.options.signal.aborted) write(waiting);
        waiting = undefined;
      }, due);
    };
  }

  private async closeSide(side: PipelineSide): Promise<void> {
    const closing = side === 'source' ? this.reader : this.writer;
    if (side === 'source') {
      this.reader = undefined;
      // A closed source reports nothing any more: its last figure would go stale.
      if (this.options.withSource) {
        this.ctx.sourceLag.delete(this.pipeline.id);
        this.ctx.backfills.delete(this.pipeline.id);
      }
    }
    try {
      await closing?.close?.();
    } catch (error) {
      this.ctx.logger.warn({ pipeline_id: this.pipeline.id, err: this.scrub(String((error as Error)?.message ?? error)) }, 'closing a connector failed');
    }
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

/** Whether an opened source's type plans backfills (`planBackfill`), and so is told of those asked for. */
export function canBackfill(opened: OpenedConnector | undefined): boolean {
  return opened?.plugin.definition.planBackfill !== undefined;
}

/** How often a running backfill's progress is written to storage, at most. */
const BACKFILL_REPORT_INTERVAL_MS = 1000;

/**
 * What identifies a connector's settings: its stored config and sealed secrets, not just
 * `updated_at`, which two changes within one millisecond (or one instant of a virtual clock)
 * share. A connector that is gone has a version no opened one has.
 */
export function connectorVersion(row: ConnectorRow | null): string {
  return row === null ? 'gone' : JSON.stringify([row.config, row.secrets, row.updated_at]);
}


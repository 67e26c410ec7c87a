import { silentLogger, systemClock, type Checkpoint, type Clock, type ConnectorDirection, type ConnectorInbox, type ConnectorOutbound, type Logger, type PipelineConnectorContext, type SourceBatch } from '@ferry/core';
import { createConnectorOutbound, type OutboundLookup } from '@ferry/core/internal';

/** What {@link connectorContext} may be told; everything else takes a harmless default. */
export interface ConnectorContextOptions {
  /** Default `destination`. */
  direction?: ConnectorDirection;
  /** Default: the system clock. Pass a `VirtualClock` to drive time. */
  clock?: Clock;
  /** Default: a signal that never aborts. */
  signal?: AbortSignal;
  /** Default: an inbox that is always empty. */
  inbox?: ConnectorInbox;
  /** Default: a silent logger. */
  logger?: Logger;
  connectorId?: string;
  workspaceId?: string;
  pipelineId?: string;
  /**
   * The engine's allow list (`createEngine({ outboundAllow })`). Default none, as an engine's:
   * a test reaching a loopback server passes `['127.0.0.1']`.
   */
  outboundAllow?: readonly string[];
  /**
   * DNS resolution of the policy's lookups, to point a host name at loopback (a DNS-rebinding
   * test) without touching `/etc/hosts`. Default the system resolver.
   */
  outboundLookup?: OutboundLookup;
  /** A whole policy instead of `outboundAllow` and `outboundLookup`. */
  outbound?: ConnectorOutbound;
}

const emptyInbox: ConnectorInbox = {
  read: async (checkpoint: Checkpoint | null): Promise<SourceBatch> => ({ records: [], checkpoint: checkpoint ?? null }),
};

/**
 * The context the engine gives a plugin, for calling a connector definition directly in a test:
 * `check`, `rotate`, `source` and `destination` all take it. The config is used as given (apply
 * schema defaults first if the test relies on them, as the engine does).
 *
 * @example
 * ```ts
 * const destination = await plugin.destination!(connectorContext({ connection_string: url, table: 'out' }, { outboundAllow: ['127.0.0.1'] }));
 * ```
 */
export function connectorContext<TConfig>(config: TConfig, options: ConnectorContextOptions = {}): PipelineConnectorContext<TConfig> {
  return {
    config,
    connectorId: options.connectorId ?? 'con_test',
    workspaceId: options.workspaceId ?? 'default',
    pipelineId: options.pipelineId ?? 'pip_test',
    direction: options.direction ?? 'destination',
    logger: options.logger ?? silentLogger,
    clock: options.clock ?? systemClock,
    signal: options.signal ?? new AbortController().signal,
    inbox: options.inbox ?? emptyInbox,
    outbound:
      options.outbound ??
      createConnectorOutbound({ allow: options.outboundAllow ?? [], ...(options.outboundLookup ? { lookup: options.outboundLookup } : {}) }),
  };
}

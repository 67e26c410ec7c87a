import { isStorageUnavailable } from '../storage/index.js';
import { ConnectorError } from '../plugin-api/index.js';

/** Why a flow ended without an error. */
export type FlowEnd =
  /** The source had nothing more (runs of scheduled pipelines). */
  | 'caught_up'
  /** The pipeline is no longer active (paused, deleting, gone). */
  | 'inactive'
  /** The owner asked it to stop (engine shutdown, lease lost). */
  | 'stopped';

/**
 * Ends what a flow is doing without a failure: a stop, a pause, a lost lease, the source caught
 * up. Never counted or retried.
 */
export class FlowStop extends Error {}

/** Where a failure that holds the whole flow happened. */
export type FlowStage = 'source' | 'destination' | 'storage' | 'internal';

/**
 * The reason codes of `pipeline.failed` and of a failed run's `error`. `configuration_invalid`
 * joins the outage codes for a failure no retry can fix until someone changes a config, a
 * privilege or the system a connector points at (see {@link isConfigurationCode}); telling it
 * from an outage is what lets an operator act on the alert instead of waiting it out.
 */
export type FailureReason = 'source_unavailable' | 'destination_unavailable' | 'auth_failed' | 'configuration_invalid' | 'transform_error' | 'timeout' | 'internal';

/** Codes that say the connector's configuration, not its availability, is at fault. */
const CONFIGURATION_CODES = new Set(['configuration_invalid', 'permission_denied', 'url_not_allowed', 'tls_failed', 'query_failed', 'direction_unsupported', 'topic_invalid']);

/**
 * True for a plugin's (or the engine's) code of a configuration problem: `configuration_invalid`,
 * `permission_denied`, `url_not_allowed`, `tls_failed`, `query_failed` (the connector's own
 * SQL), `direction_unsupported`, `topic_invalid`, and any `<thing>_not_found` (`table_not_found`,
 * `bucket_not_found`, ...): the thing a config names is not there. A plugin of its own makes its
 * codes count by these names. Only a failure that is also not retryable is reported as one: a
 * `table_not_found` that a plugin retries (an eventually consistent store) is still an outage.
 */
export function isConfigurationCode(code: string): boolean {
  return CONFIGURATION_CODES.has(code) || /^[a-z][a-z0-9_]*_not_found$/.test(code);
}

/**
 * A failure of a whole batch: the source could not be read, the destination did not take the
 * batch, storage did not commit it. The checkpoint stays where it was; the runner retries with
 * backoff when `retryable`, and otherwise fails the run at once.
 */
export class FlowError extends Error {
  constructor(
    readonly stage: FlowStage,
    /** The plugin's or the engine's short code. */
    readonly code: string,
    message: string,
    readonly retryable: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'FlowError';
  }

  /**
   * The reason code `pipeline.failed` and the run record carry. The plugin's own code and message
   * are on the connector at fault (`last_error`, and the `connector.error` its health change emits).
   */
  get reason(): FailureReason {
    if (this.code === 'auth_failed') return 'auth_failed';
    if (this.code === 'timeout') return 'timeout';
    if (this.stage === 'source' || this.stage === 'destination') {
      if (!this.retryable && isConfigurationCode(this.code)) return 'configuration_invalid';
      return this.stage === 'source' ? 'source_unavailable' : 'destination_unavailable';
    }
    return 'internal';
  }

  /**
   * A failure that waits for someone to fix it (a config, a privilege, a table, credentials):
   * not retryable, and about the connector's setup, which is what a check would find too. The
   * connector is reported `down` at once rather than after a streak of retries.
   */
  get needsFix(): boolean {
    return !this.retryable && (this.reason === 'configuration_invalid' || this.reason === 'auth_failed');
  }
}

/**
 * Classifies what a plugin call or a commit threw. A ConnectorError keeps its code and flag;
 * a storage outage is retryable; anything else from a plugin is a bug in it, which no retry
 * fixes, except that an unknown error is retried like an outage: a plugin that lets a socket
 * error escape unwrapped should hold the flow, not lose it.
 */
export function toFlowError(stage: Exclude<FlowStage, 'storage' | 'internal'>, error: unknown, scrub: (text: string) => string): FlowError {
  if (error instanceof FlowError) return error;
  if (error instanceof ConnectorError) return new FlowError(stage, error.code, scrub(error.message), error.retryable, { cause: error });
  if (isStorageUnavailable(error)) return new FlowError('storage', 'storage_unavailable', 'Storage is unavailable.', true, { cause: error });
  const message = error instanceof Error ? error.message : String(error);
  return new FlowError(stage, 'unexpected_error', scrub(message).slice(0, 500), true, { cause: error });
}

/** The short code and redacted message a per-event failure is recorded with. */
export function describeEventError(error: unknown, fallbackCode: string, scrub: (text: string) => string): { code: string; message: string } {
  const code = error instanceof ConnectorError ? error.code : typeof (error as { code?: unknown })?.code === 'string' ? String((error as { code: string }).code) : fallbackCode;
  const message = error instanceof Error ? error.message : String(error);
  return { code: /^[a-z][a-z0-9_]{0,63}$/.test(code) ? code : fallbackCode, message: scrub(message).slice(0, 1000) };
}

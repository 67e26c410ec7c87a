import { isStorageUnavailable } from '../storage/storage-errors.js';
import { ConnectorError } from '../plugin/connector-error.js';

/** Where a failure that holds the whole flow happened. */
export type FlowStage = 'source' | 'destination' | 'storage' | 'internal';

/** The reason codes of `pipeline.failed` (contract section 9). */
export type FailureReason = 'source_unavailable' | 'destination_unavailable' | 'auth_failed' | 'transform_error' | 'timeout' | 'internal';

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

  /** The reason code `pipeline.failed` and the run record carry. */
  get reason(): FailureReason {
    if (this.code === 'auth_failed') return 'auth_failed';
    if (this.code === 'timeout') return 'timeout';
    if (this.stage === 'source') return 'source_unavailable';
    if (this.stage === 'destination') return 'destination_unavailable';
    return 'internal';
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

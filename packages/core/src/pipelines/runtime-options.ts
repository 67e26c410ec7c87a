import type { BackoffPolicy } from '../queue/index.js';

/** Tuning of the pipeline runtime. Every field has a default fit for production. */
export interface RuntimeOptions {
  /** Run pipelines in this engine. `false` makes an API-only engine (another instance runs them). Default true. */
  enabled: boolean;
  /** How often the engine looks for changes made by other engines, expired leases and due replays, in ms. Default 5 000. */
  pollIntervalMs: number;
  /** Lifetime of a pipeline lease; the holder renews it every third of it. Default 30 000. */
  leaseTtlMs: number;
  /** Backoff while a source, destination or storage is unreachable. Default 1 s doubling to 60 s. */
  retry: BackoffPolicy;
  /** Consecutive failed attempts of one batch after which a scheduled run ends `failed`. Default 8. */
  runRetryAttempts: number;
  /** Consecutive failed attempts after which a streaming pipeline reports `pipeline.failed` (it keeps retrying). Default 8. */
  streamFailAfterAttempts: number;
  /** Consecutive failures after which a connector counts as `down` rather than `degraded`. Default 3. */
  downAfterAttempts: number;
  /** Backoff between attempts of a record the destination refused with a retryable error. Default 500 ms doubling to 10 s. */
  recordRetry: BackoffPolicy;
  /** Scheduled and manual runs executed at once by this engine. Default 8. */
  runConcurrency: number;
  /** Dead letters replayed per destination write. Default 500. */
  replayBatchSize: number;
}

/** The defaults of {@link RuntimeOptions}. */
export const DEFAULT_RUNTIME_OPTIONS: RuntimeOptions = Object.freeze({
  enabled: true,
  pollIntervalMs: 5_000,
  leaseTtlMs: 30_000,
  retry: Object.freeze({ baseMs: 1_000, capMs: 60_000 }),
  runRetryAttempts: 8,
  streamFailAfterAttempts: 8,
  downAfterAttempts: 3,
  recordRetry: Object.freeze({ baseMs: 500, capMs: 10_000 }),
  runConcurrency: 8,
  replayBatchSize: 500,
});

/** What `createEngine({ runtime })` takes: any subset of {@link RuntimeOptions}, backoff policies included. */
export type RuntimeOptionsInput = Partial<Omit<RuntimeOptions, 'retry' | 'recordRetry'>> & { retry?: Partial<BackoffPolicy>; recordRetry?: Partial<BackoffPolicy> };

/** Options with defaults filled in. */
export function resolveRuntimeOptions(options: RuntimeOptionsInput | false | undefined): RuntimeOptions {
  if (options === false) return { ...DEFAULT_RUNTIME_OPTIONS, enabled: false };
  return { ...DEFAULT_RUNTIME_OPTIONS, ...options, retry: { ...DEFAULT_RUNTIME_OPTIONS.retry, ...options?.retry }, recordRetry: { ...DEFAULT_RUNTIME_OPTIONS.recordRetry, ...options?.recordRetry } };
}

import type { Clock } from '../common/index.js';
import type { ConnectorError } from './connector-error.js';
import type { CheckResult } from './types.js';

/**
 * A connector `check` built from a probe: `healthy`, with the probe's round trip, when `probe`
 * resolves; `down`, with the code and message of `classify(error)`, when it throws. Most checks
 * are exactly this (connect, ask the server something this side needs, classify what went
 * wrong), and the classification is the plugin's own, so messages stay free of secrets.
 *
 * @example
 * ```ts
 * check: (ctx) => probeCheck(ctx.clock, () => ping(ctx.config), (error) => classifyError(error)),
 * ```
 */
export async function probeCheck(clock: Clock, probe: () => Promise<unknown>, classify: (error: unknown) => ConnectorError): Promise<CheckResult> {
  const started = clock.now();
  try {
    await probe();
    return { health: 'healthy', latencyMs: Math.max(0, clock.now() - started) };
  } catch (error) {
    const classified = classify(error);
    return { health: 'down', latencyMs: Math.max(0, clock.now() - started), error: { code: classified.code, message: classified.message } };
  }
}

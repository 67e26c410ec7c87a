import type { VirtualClock } from './virtual-clock.js';

/**
 * Waits until `check` holds, moving `clock` on by `stepMs` between looks and letting `realWaitMs`
 * of real time pass so real I/O (a database round trip, an HTTP request) can finish: the wait is
 * for work to be done, never for time itself, which only moves when this says so. Throws after
 * `maxSteps` looks.
 *
 * @example
 * ```ts
 * await eventually(clock, async () => (await engine.pipelines.get('default', id)).state === 'paused', 1000);
 * ```
 */
export async function eventually(clock: VirtualClock, check: () => boolean | Promise<boolean>, stepMs = 0, maxSteps = 500, realWaitMs = 2): Promise<void> {
  for (let i = 0; i < maxSteps; i++) {
    if (await check()) return;
    await clock.advance(stepMs);
    await new Promise((resolve) => setTimeout(resolve, realWaitMs));
  }
  throw new Error(`condition not met after ${maxSteps} steps of ${stepMs} ms`);
}

import { describe, expect, it } from 'vitest';
import type { Clock } from '../common/index.js';
import { ConnectorError } from './connector-error.js';
import { probeCheck } from './probe-check.js';

/** A clock that moves only when told: the probe's round trip is whatever the probe makes it. */
function steppedClock(): Clock & { step(ms: number): void } {
  let now = 1_000;
  return {
    now: () => now,
    step: (ms: number) => void (now += ms),
  } as Clock & { step(ms: number): void };
}

describe('probeCheck', () => {
  it('is healthy with the round trip when the probe resolves', async () => {
    const clock = steppedClock();
    expect(await probeCheck(clock, async () => clock.step(42), () => new ConnectorError('x', 'x', { retryable: true }))).toEqual({ health: 'healthy', latencyMs: 42 });
  });

  it('is down with the classified code and message when it throws, never the raw error', async () => {
    const clock = steppedClock();
    const result = await probeCheck(
      clock,
      async () => {
        clock.step(7);
        throw new Error('password=hunter2 refused');
      },
      () => new ConnectorError('auth_failed', 'The server refused the credentials.', { retryable: false }),
    );
    expect(result).toEqual({ health: 'down', latencyMs: 7, error: { code: 'auth_failed', message: 'The server refused the credentials.' } });
  });
});

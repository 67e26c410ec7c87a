import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Clock, Logger } from '../common/index.js';
import { openStorage, sqliteStorage, type FerryStorage } from '../storage/index.js';
import { FlowError } from './flow-error.js';
import { FlowHold } from './flow-hold.js';

/** A clock that moves only when told; FlowHold reads it and sets no timer. */
class StillClock implements Clock {
  constructor(public ms: number) {}
  now(): number {
    return this.ms;
  }
  setTimeout(): { cancel(): void } {
    throw new Error('not used');
  }
}

/** A logger that keeps what it is told, level and message. */
function keptLogger(lines: string[]): Logger {
  const keep = (level: string) => (_obj: object | string, msg?: string) => void lines.push(`${level} ${msg ?? ''}`);
  const logger: Logger = { trace: keep('trace'), debug: keep('debug'), info: keep('info'), warn: keep('warn'), error: keep('error'), fatal: keep('fatal'), child: () => logger };
  return logger;
}

describe('FlowHold', () => {
  let storage: FerryStorage;
  const T0 = Date.parse('2026-11-28T10:00:00.000Z');
  const down = new FlowError('destination', 'destination_unavailable', 'HTTP 503', true);

  beforeEach(async () => {
    storage = await openStorage(sqliteStorage({ filename: ':memory:' }));
  });
  afterEach(async () => {
    await storage.close();
  });

  it('records what a held flow waits on, warns when it starts and at most every 10 minutes, and clears it once recovered', async () => {
    const clock = new StillClock(T0);
    const lines: string[] = [];
    const hold = new FlowHold({ clock, logger: keptLogger(lines), storage }, 'pip_1');
    const stored = async () => (await storage.repos.pipelineHolds.forPipelines('ws_a', ['pip_1'])).get('pip_1');

    for (let attempt = 1; attempt <= 12; attempt++) {
      await hold.failed('ws_a', down, attempt, 60_000, 500);
      clock.ms += 60_000;
    }
    expect(await stored()).toMatchObject({ since: new Date(T0).toISOString(), attempts: 12, error_code: 'destination_unavailable', error_message: 'HTTP 503', next_attempt_at: new Date(T0 + 12 * 60_000).toISOString(), events_waiting: 500 });
    // 12 attempts over 12 minutes: the first, then one summary 10 minutes later.
    expect(lines).toEqual(['warn pipeline flow held: its batch is retried with backoff', 'warn pipeline flow still held']);

    await hold.release(true);
    expect(await stored()).toBeUndefined();
    expect(lines.at(-1)).toBe('info pipeline flow recovered');
    // A new streak starts a new hold, from its own first failure.
    await hold.failed('ws_a', down, 1, 1_000, 0);
    expect((await stored())?.since).toBe(new Date(clock.ms).toISOString());
    await hold.release(false);
    expect(lines.at(-1)).toBe('warn pipeline flow held: its batch is retried with backoff');
  });

  it('logs only, before the pipeline is known, and never fails for storage', async () => {
    const lines: string[] = [];
    const hold = new FlowHold({ clock: new StillClock(T0), logger: keptLogger(lines), storage }, 'pip_2');
    await hold.failed(undefined, down, 1, 1_000, 0);
    expect(lines).toHaveLength(1);
    await storage.close();
    await expect(hold.failed('ws_a', down, 2, 1_000, 0)).resolves.toBeUndefined();
    await expect(hold.release(true)).resolves.toBeUndefined();
  });
});

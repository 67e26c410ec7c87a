import { systemClock, type Clock } from '../common/index.js';

/**
 * How a SQLite connection waits for a write lock another process holds.
 *
 * better-sqlite3's own wait (`busy_timeout`) sleeps inside the synchronous call, which freezes
 * the whole event loop: `/healthz`, reads and every pipeline stall for as long as the other
 * process keeps the lock. The engine's connections therefore run with `busy_timeout = 0`, so a
 * locked database answers `SQLITE_BUSY` at once, and the statement (or the `BEGIN IMMEDIATE` of a
 * transaction) is tried again on a timer, with the pooled connection given back in between, so
 * reads (which WAL serves without the write lock) go on meanwhile.
 */
export interface SqliteLockWait {
  /** How long one write waits for the lock in total before it fails with `SQLITE_BUSY`, in ms. */
  readonly timeoutMs: number;
  /** The clock the waits are measured and scheduled on. */
  readonly clock: Clock;
}

/** Real time with timers that keep the process alive: a script waiting for a write must not exit mid-wait. */
export const realTimers: Clock = {
  now: () => systemClock.now(),
  setTimeout(fn, ms) {
    const handle = setTimeout(fn, Math.max(0, ms));
    return { cancel: () => clearTimeout(handle) };
  },
};

/** Longest pause between two attempts: about the step SQLite's own busy handler ends with. */
const MAX_PAUSE_MS = 50;

/** True for SQLite's "another connection holds the lock" answers (`SQLITE_BUSY` and its extended codes). */
export function isSqliteBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_'));
}

/**
 * Runs `attempt` until it does not fail with `SQLITE_BUSY`, pausing 1, 2, 4 ... up to 50 ms of
 * `wait.clock` in between, for at most `wait.timeoutMs` from the first attempt; past that the last
 * `SQLITE_BUSY` is thrown (the storage-unavailable error the API answers 503 with). Each attempt
 * must hold no connection when it fails, so others can use it during the pause.
 */
export async function retryWhileBusy<T>(wait: SqliteLockWait, attempt: () => Promise<T>): Promise<T> {
  const deadline = wait.clock.now() + wait.timeoutMs;
  for (let tries = 0; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      const left = deadline - wait.clock.now();
      if (!isSqliteBusy(error) || left <= 0) throw error;
      const pause = Math.min(2 ** Math.min(tries, 10), MAX_PAUSE_MS, left);
      await new Promise<void>((resolve) => wait.clock.setTimeout(resolve, pause));
    }
  }
}

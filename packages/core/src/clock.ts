/** A timer scheduled through a {@link Clock}; cancel it to stop it from firing. */
export interface ClockTimer {
  /** Stops the timer. Calling it after the timer fired is harmless. */
  cancel(): void;
}

/**
 * The engine's only source of time. Everything that reads the time or waits goes through it,
 * so tests can swap in a virtual clock (`@ferry/testing`) and move hours forward in milliseconds.
 */
export interface Clock {
  /** Current time in UTC milliseconds since the epoch. */
  now(): number;
  /** Calls `fn` once after `ms` milliseconds of this clock's time. */
  setTimeout(fn: () => void, ms: number): ClockTimer;
}

/** The wall clock: real time and real timers. The default outside tests. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const handle = setTimeout(fn, Math.max(0, ms));
    // A pending engine timer must never keep the host process alive on its own.
    handle.unref?.();
    return { cancel: () => clearTimeout(handle) };
  },
};

/**
 * Resolves after `ms` of the clock's time, or rejects with the signal's reason when aborted.
 */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      timer.cancel();
      reject(signal?.reason);
    };
    const timer = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The clock's current time as an ISO 8601 UTC string with milliseconds. */
export function isoNow(clock: Clock): string {
  return new Date(clock.now()).toISOString();
}

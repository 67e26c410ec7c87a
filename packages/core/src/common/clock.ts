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

/**
 * The longest delay Node's `setTimeout` honours (2^31-1 ms, about 24.8 days). Node runs a timer
 * with a longer delay after 1 ms instead, so {@link systemClock} waits longer delays in steps.
 */
export const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/**
 * The wall clock: real time and real timers. The default outside tests. Any delay is waited in
 * full, however long: a monthly or yearly schedule is months away, and Node would fire a single
 * timer of that length at once. A NaN or negative delay counts as 0; an infinite one never fires.
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const delay = Number.isNaN(ms) ? 0 : Math.max(0, ms);
    if (delay === Infinity) return { cancel: () => undefined };
    const due = Date.now() + delay;
    let handle: ReturnType<typeof setTimeout>;
    const arm = (): void => {
      const left = due - Date.now();
      // The remainder is measured against the wall clock at every step, so steps add no drift.
      handle = left > MAX_TIMER_DELAY_MS ? setTimeout(arm, MAX_TIMER_DELAY_MS) : setTimeout(fn, Math.max(0, left));
      // A pending engine timer must never keep the host process alive on its own.
      handle.unref?.();
    };
    arm();
    return { cancel: () => clearTimeout(handle) };
  },
};

/**
 * A clock whose timer callbacks cannot throw out of the timer: an error (or the rejection of a
 * callback that returns a promise) goes to `onError` instead. The engine runs every timer through
 * one of these, since an exception escaping a Node timer callback ends the whole process, and
 * with it every workspace's pipelines.
 */
export function guardedClock(clock: Clock, onError: (error: unknown) => void): Clock {
  return {
    now: () => clock.now(),
    setTimeout: (fn, ms) =>
      clock.setTimeout(() => {
        try {
          const result = (fn as () => unknown)();
          if (result instanceof Promise) result.catch(onError);
        } catch (error) {
          onError(error);
        }
      }, ms),
  };
}

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

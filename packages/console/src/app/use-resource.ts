import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { problemOf, type Problem } from './api.js';

/** What {@link useResource} gives a view. */
export interface Resource<T> {
  /** The last data loaded; kept while a reload runs, so nothing jumps. */
  data: T | undefined;
  /** The problem of the last load, if it failed. */
  problem: Problem | undefined;
  /** True until the first load ends. */
  loading: boolean;
  /** Loads again now. */
  reload: () => void;
}

/**
 * Loads data for a view, again whenever `deps` change, and every `refreshMs` while the tab is
 * visible (a console left open keeps showing the truth; a view shortens it while something it
 * shows is changing). An answer that arrives after the view
 * moved on is dropped.
 */
export function useResource<T>(load: () => Promise<T>, deps: unknown[], refreshMs?: number): Resource<T> {
  const [state, setState] = useState<{ data: T | undefined; problem: Problem | undefined; loading: boolean }>({ data: undefined, problem: undefined, loading: true });
  const generation = useRef(0);
  const inFlight = useRef(false);
  const loadRef = useRef(load);
  loadRef.current = load;

  const run = useCallback((fresh: boolean) => {
    const mine = ++generation.current;
    inFlight.current = true;
    if (fresh) setState({ data: undefined, problem: undefined, loading: true });
    const settle = () => {
      if (mine === generation.current) inFlight.current = false;
      return mine === generation.current;
    };
    loadRef.current().then(
      (data) => settle() && setState({ data, problem: undefined, loading: false }),
      (error: unknown) => settle() && setState((s) => ({ data: s.data, problem: problemOf(error), loading: false })),
    );
  }, []);

  useEffect(() => {
    run(true);
    // Leaving the view (or its deps changing): a late answer is dropped.
    return () => void ++generation.current;
  }, deps);

  useEffect(() => {
    if (!refreshMs) return;
    const timer = setInterval(() => {
      // A slow API: the next poll waits for the last one instead of replacing it, so answers
      // slower than the interval still arrive.
      if (document.visibilityState === 'visible' && !inFlight.current) run(false);
    }, refreshMs);
    return () => clearInterval(timer);
  }, [refreshMs, ...deps]);

  return { ...state, reload: () => run(false) };
}

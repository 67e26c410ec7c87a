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
  /** When the data shown was read (the browser's clock, ms), or undefined before the first answer. */
  updatedAt: number | undefined;
  /** True while a read runs (the first, a poll or a {@link reload}). */
  reading: boolean;
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
  // `key` names the deps the state was read for: in the render where the deps have just changed
  // (a new page's cursor in the URL), the state of the old ones is not handed out as theirs.
  const key = JSON.stringify(deps);
  const keyRef = useRef(key);
  keyRef.current = key;
  const [state, setState] = useState<{ key: string; data: T | undefined; problem: Problem | undefined; loading: boolean; updatedAt: number | undefined }>({ key, data: undefined, problem: undefined, loading: true, updatedAt: undefined });
  const [reading, setReading] = useState(true);
  const generation = useRef(0);
  const inFlight = useRef(false);
  const loadRef = useRef(load);
  loadRef.current = load;

  const run = useCallback((fresh: boolean) => {
    const mine = ++generation.current;
    const readFor = keyRef.current;
    inFlight.current = true;
    setReading(true);
    if (fresh) setState({ key: readFor, data: undefined, problem: undefined, loading: true, updatedAt: undefined });
    const settle = () => {
      if (mine !== generation.current) return false;
      inFlight.current = false;
      setReading(false);
      return true;
    };
    loadRef.current().then(
      (data) => settle() && setState({ key: readFor, data, problem: undefined, loading: false, updatedAt: Date.now() }),
      (error: unknown) => settle() && setState((s) => ({ key: readFor, data: s.data, problem: problemOf(error), loading: false, updatedAt: s.updatedAt })),
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

  const reload = () => run(false);
  if (state.key !== key) return { data: undefined, problem: undefined, loading: true, updatedAt: undefined, reading: true, reload };
  return { data: state.data, problem: state.problem, loading: state.loading, updatedAt: state.updatedAt, reading, reload };
}

import { useState } from 'preact/hooks';
import { problemOf, type Problem } from './api.js';

/** What {@link useAction} gives a view: run an action, and its outcome to show. */
export interface Action {
  busy: boolean;
  problem: Problem | undefined;
  message: string | undefined;
  /** Runs `act`; what it resolves to is the message shown, a throw the problem shown. */
  run: (act: () => Promise<string>) => Promise<boolean>;
  clear: () => void;
}

/** One button's action at a time: busy while it runs, then its message or its problem. */
export function useAction(): Action {
  const [state, setState] = useState<{ busy: boolean; problem: Problem | undefined; message: string | undefined }>({ busy: false, problem: undefined, message: undefined });
  return {
    ...state,
    run: async (act) => {
      setState({ busy: true, problem: undefined, message: undefined });
      try {
        const message = await act();
        setState({ busy: false, problem: undefined, message });
        return true;
      } catch (error) {
        setState({ busy: false, problem: problemOf(error), message: undefined });
        return false;
      }
    },
    clear: () => setState({ busy: false, problem: undefined, message: undefined }),
  };
}

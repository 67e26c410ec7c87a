import type { JSX } from 'preact';
import type { Action } from '../use-action.js';
import { ProblemBox } from './problem-box.js';

/** Where an action's outcome appears: a polite live region, so a screen reader hears it. */
export function ActionOutcome({ action, context }: { action: Action; context?: string }): JSX.Element {
  return (
    <div class="outcome" aria-live="polite">
      {action.problem ? <ProblemBox problem={action.problem} context={context} /> : action.message ? <p class="notice">{action.message}</p> : null}
    </div>
  );
}

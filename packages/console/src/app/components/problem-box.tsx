import type { JSX } from 'preact';
import type { Problem } from '../api.js';

/**
 * An API error as the API gave it: its `code` (what a client branches on), its `detail`, the
 * field problems and the request id to quote in a support request. `role="alert"` reads it out.
 */
export function ProblemBox({ problem, context }: { problem: Problem; context?: string }): JSX.Element {
  return (
    <div class="problem" role="alert">
      <p class="problem-title">
        {context ? `${context}: ` : ''}
        <code class="problem-code">{problem.code}</code>
        {problem.status ? <span class="problem-status"> (HTTP {problem.status})</span> : null}
      </p>
      {problem.detail ? <p class="problem-detail">{problem.detail}</p> : problem.title ? <p class="problem-detail">{problem.title}</p> : null}
      {problem.current_status ? <p>Current status: <code>{problem.current_status}</code></p> : null}
      {problem.errors && problem.errors.length > 0 ? (
        <ul class="problem-fields">
          {problem.errors.map((e) => (
            <li key={`${e.pointer}-${e.code}`}>
              <code>{e.pointer || '/'}</code> <code>{e.code}</code>
              {e.detail ? ` ${e.detail}` : ''}
            </li>
          ))}
        </ul>
      ) : null}
      {problem.request_id ? <p class="problem-request">Request id <code>{problem.request_id}</code></p> : null}
    </div>
  );
}

import type { JSX } from 'preact';
import { api } from '../api.js';
import type { Pipeline, Run } from '../records.js';
import type { Action } from '../use-action.js';

/**
 * A pipeline's state actions, as the API allows them: activate a draft or paused one, pause an
 * active one, run an active scheduled one now. Buttons name their pipeline for screen readers.
 */
export function PipelineActions({ pipeline, action, onDone }: { pipeline: Pipeline; action: Action; onDone: () => void }): JSX.Element {
  const id = encodeURIComponent(pipeline.id);
  const act = (what: () => Promise<string>) => void action.run(what).then(onDone);
  return (
    <div class="actions">
      {pipeline.state === 'draft' || pipeline.state === 'paused' ? (
        <button type="button" class="button" disabled={action.busy} aria-label={`Activate ${pipeline.name}`} onClick={() => act(async () => (await api('POST', `/v2/pipelines/${id}/activate`), `${pipeline.name} is active.`))}>
          Activate
        </button>
      ) : null}
      {pipeline.state === 'active' ? (
        <button type="button" class="button" disabled={action.busy} aria-label={`Pause ${pipeline.name}`} onClick={() => act(async () => (await api('POST', `/v2/pipelines/${id}/pause`), `${pipeline.name} is paused.`))}>
          Pause
        </button>
      ) : null}
      {pipeline.state === 'active' && pipeline.schedule ? (
        <button
          type="button"
          class="button"
          disabled={action.busy}
          aria-label={`Run ${pipeline.name} now`}
          onClick={() => act(async () => `Run ${(await api<Run>('POST', `/v2/pipelines/${id}/runs`)).id} of ${pipeline.name} is queued.`)}
        >
          Run now
        </button>
      ) : null}
    </div>
  );
}

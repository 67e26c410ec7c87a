import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError } from '../api.js';
import { ActionOutcome } from '../components/action-outcome.js';
import { Badge } from '../components/badge.js';
import { EventBody } from '../components/event-body.js';
import { Layout, type Shell } from '../components/layout.js';
import { ProblemBox } from '../components/problem-box.js';
import { Wrapping } from '../components/text.js';
import { utc } from '../format.js';
import type { EventRecord, Pipeline } from '../records.js';
import { href, Link } from '../router.js';
import { useAction } from '../use-action.js';
import { useResource } from '../use-resource.js';

interface Loaded {
  event: EventRecord;
  /** Its pipeline, or undefined when it cannot be read (deleted meanwhile). */
  pipeline: Pipeline | undefined;
}

/**
 * One event of any pipeline of the workspace, by its id (`/events/:id`, `GET /v2/events/{id}`):
 * what the search box of the header opens. Its facts, its error and payload, its pipeline, and
 * the replay of a dead letter; read again often while it is being replayed.
 */
export function EventView({ id, shell }: { id: string; shell: Shell }): JSX.Element {
  const action = useAction();
  // While it is being replayed, the event is read again often, so its outcome shows soon.
  const [changing, setChanging] = useState(false);
  const resource = useResource<Loaded>(
    async () => {
      const event = await api<EventRecord>('GET', `/v2/events/${encodeURIComponent(id)}`);
      const pipeline = await api<Pipeline>('GET', `/v2/pipelines/${encodeURIComponent(event.pipeline_id)}`).catch((error: unknown) => {
        if (error instanceof ApiError && error.problem.status === 404) return undefined;
        throw error;
      });
      return { event, pipeline };
    },
    [id],
    changing ? 1500 : 15_000,
  );
  const event = resource.data?.event;
  const replaying = event?.status === 'replaying';
  useEffect(() => setChanging(replaying), [replaying]);
  const pipelineHref = event ? href(`/pipelines/${encodeURIComponent(event.pipeline_id)}`) : '';
  const replay = () =>
    void action
      .run(async () => {
        await api<EventRecord>('POST', `/v2/events/${encodeURIComponent(id)}/replay`);
        return `Event ${id} is being replayed.`;
      })
      .then(resource.reload);
  const notFound = resource.problem?.code === 'not_found';
  return (
    <Layout
      {...shell}
      title={event ? `Event ${event.type}` : 'Event'}
      heading={
        event ? (
          <>
            Event <Wrapping text={event.type} class="event-type" />
          </>
        ) : undefined
      }
    >
      <ActionOutcome action={action} />
      {resource.problem ? <ProblemBox problem={resource.problem} context={`Event ${id} could not be loaded`} /> : null}
      {notFound && id.startsWith('evt_') ? (
        <p class="notice">
          No event of a pipeline of this workspace has this id. The ids an ingest answers name the records it stored, not the events a pipeline made of them: find those in the
          pipeline's events, by type and time.
        </p>
      ) : null}
      <dl class="facts">
        <div class="fact-wide">
          <dt>Id</dt>
          <dd class="mono">{id}</dd>
        </div>
        <div>
          <dt>Pipeline</dt>
          <dd>{event ? <Link to={pipelineHref}>{resource.data?.pipeline?.name ?? event.pipeline_id}</Link> : notFound ? '–' : '…'}</dd>
        </div>
        <div>
          <dt>Status</dt>
          <dd>{event ? <Badge value={event.status} /> : notFound ? '–' : '…'}</dd>
        </div>
        <div>
          <dt>Occurred</dt>
          <dd>{event ? utc(event.occurred_at) : notFound ? '–' : '…'}</dd>
        </div>
        <div>
          <dt>Attempts</dt>
          <dd>{event ? event.attempts : notFound ? '–' : '…'}</dd>
        </div>
      </dl>
      {event ? (
        <section class="panel" aria-label="Error and payload">
          <EventBody event={event} action={action} onReplay={replay} />
        </section>
      ) : null}
    </Layout>
  );
}

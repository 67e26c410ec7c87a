import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, type Page, type Problem } from '../api.js';
import { ActionOutcome } from '../components/action-outcome.js';
import { Badge } from '../components/badge.js';
import { ConfirmDialog } from '../components/confirm-dialog.js';
import { DataTable } from '../components/data-table.js';
import { EmptyState } from '../components/empty-state.js';
import { HeldNotice } from '../components/held-notice.js';
import { Layout, type Shell } from '../components/layout.js';
import { MinuteChart } from '../components/minute-chart.js';
import { Pager } from '../components/pager.js';
import { ProblemBox } from '../components/problem-box.js';
import { connectorsById, figures, pipelineStats } from '../data.js';
import { ago, count, inputFromIso, isoFromInput, runDuration, utc } from '../format.js';
import type { Connector, EventRecord, Pipeline, PipelineStats, Run } from '../records.js';
import { href, Link, navigate, type Location } from '../router.js';
import { useAction, type Action } from '../use-action.js';
import { useResource } from '../use-resource.js';
import { PipelineActions } from './pipeline-actions.js';
import { ConnectorCell } from './pipelines.js';

const EVENT_STATUSES = ['', 'delivered', 'filtered', 'dead_lettered', 'replaying'];

interface Loaded {
  pipeline: Pipeline;
  connectors: Map<string, Connector>;
  stats: PipelineStats | undefined;
  /** Why the figures could not be read, when they could not. */
  statsProblem: Problem | undefined;
}

/** The events listing's filters, as the URL holds them. */
interface EventFilters {
  type: string;
  status: string;
  since: string;
  until: string;
}

function filtersOf(query: URLSearchParams): EventFilters {
  return { type: query.get('type') ?? '', status: query.get('status') ?? '', since: query.get('since') ?? '', until: query.get('until') ?? '' };
}

/**
 * One pipeline: what it is, its last hour, its dead letters with bulk replay, then its events
 * (`/pipelines/:id`, filtered and paged by the URL) or its runs (`/pipelines/:id/runs`).
 */
export function PipelineView({ id, tab, location, shell }: { id: string; tab: 'events' | 'runs'; location: Location; shell: Shell }): JSX.Element {
  const action = useAction();
  const resource = useResource<Loaded>(
    async () => {
      const pipeline = await api<Pipeline>('GET', `/v2/pipelines/${encodeURIComponent(id)}`);
      const [connectors, answer] = await Promise.all([connectorsById([pipeline.source_connector_id, pipeline.destination_connector_id]), pipelineStats(pipeline.id)]);
      const stats = figures(answer);
      return { pipeline, connectors, stats, statsProblem: stats ? undefined : (answer as Problem) };
    },
    [id],
    15_000,
  );
  const data = resource.data;
  const base = `/pipelines/${encodeURIComponent(id)}`;
  return (
    <Layout {...shell} title={data?.pipeline.name ?? 'Pipeline'} actions={data ? <PipelineActions pipeline={data.pipeline} action={action} onDone={resource.reload} /> : undefined}>
      <ActionOutcome action={action} />
      {resource.problem ? <ProblemBox problem={resource.problem} context="The pipeline could not be loaded" /> : null}
      {data?.pipeline.held ? <HeldNotice held={data.pipeline.held} /> : null}
      <section class="summary" aria-label="Summary">
        <dl class="facts">
          <div>
            <dt>State</dt>
            <dd>{data ? <Badge value={data.pipeline.state} /> : '…'}</dd>
          </div>
          <div>
            <dt>Schedule</dt>
            <dd>{data ? data.pipeline.schedule ? <code>{data.pipeline.schedule}</code> : 'Streaming' : '…'}</dd>
          </div>
          <div>
            <dt>Source</dt>
            <dd>{data ? <ConnectorCell id={data.pipeline.source_connector_id} connectors={data.connectors} /> : '…'}</dd>
          </div>
          <div>
            <dt>Destination</dt>
            <dd>{data ? <ConnectorCell id={data.pipeline.destination_connector_id} connectors={data.connectors} /> : '…'}</dd>
          </div>
          <div>
            <dt>Steps</dt>
            <dd>{data ? (data.pipeline.transforms.length ? data.pipeline.transforms.map((t) => t.type).join(' → ') : 'none') : '…'}</dd>
          </div>
          <div>
            <dt>Last run</dt>
            <dd>{data?.pipeline.last_run ? <><Badge value={data.pipeline.last_run.status} /> {ago(data.pipeline.last_run.started_at ?? data.pipeline.last_run.created_at)}</> : data ? 'never' : '…'}</dd>
          </div>
          <div>
            <dt>Dead-lettered</dt>
            <dd>{data ? (data.stats ? count(data.stats.dead_lettered) : '–') : '…'}</dd>
          </div>
        </dl>
        <div class="chart-panel">
          <h2 class="panel-title">Events per minute, last hour</h2>
          {data?.statsProblem ? (
            <div class="chart-missing">
              <ProblemBox problem={data.statsProblem} context="The figures could not be read" />
            </div>
          ) : (
            <MinuteChart minutes={data?.stats?.per_minute} />
          )}
        </div>
      </section>
      <nav class="tabs" aria-label="Pipeline">
        <Link to={href(base)} aria-current={tab === 'events' ? 'page' : undefined}>
          Events
        </Link>
        <Link to={href(`${base}/runs`)} aria-current={tab === 'runs' ? 'page' : undefined}>
          Runs
        </Link>
      </nav>
      {tab === 'events' ? <EventsPanel pipelineId={id} base={base} location={location} deadLettered={data?.stats?.dead_lettered} onChanged={resource.reload} /> : <RunsPanel pipelineId={id} base={base} location={location} />}
    </Layout>
  );
}

function EventsPanel({ pipelineId, base, location, deadLettered, onChanged }: { pipelineId: string; base: string; location: Location; deadLettered: number | undefined; onChanged: () => void }): JSX.Element {
  const filters = filtersOf(location.query);
  const cursor = location.query.get('cursor') ?? '';
  const [open, setOpen] = useState<Set<string>>(new Set());
  const [confirming, setConfirming] = useState(false);
  // While an event is being replayed, the list is read again often, so its outcome shows soon.
  const [changing, setChanging] = useState(false);
  const action = useAction();
  const resource = useResource<Page<EventRecord>>(
    () => api<Page<EventRecord>>('GET', `/v2/pipelines/${encodeURIComponent(pipelineId)}/events`, { query: { limit: 50, order: 'desc', ...filters, cursor } }),
    [pipelineId, location.query.toString()],
    changing ? 1500 : 15_000,
  );
  const events = resource.data?.data;
  const replaying = events?.some((e) => e.status === 'replaying') ?? false;
  useEffect(() => setChanging(replaying), [replaying]);

  const apply = (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    navigate(href(base, { type: String(form.get('type') ?? '').trim(), status: String(form.get('status') ?? ''), since: isoFromInput(String(form.get('since') ?? '')), until: isoFromInput(String(form.get('until') ?? '')) }));
  };
  const replayOne = (e: EventRecord) =>
    void action
      .run(async () => {
        await api<EventRecord>('POST', `/v2/events/${encodeURIComponent(e.id)}/replay`);
        return `Event ${e.id} is being replayed.`;
      })
      .then(() => {
        resource.reload();
        onChanged();
      });
  const replayAll = () =>
    void action
      .run(async () => {
        const body: Record<string, string> = {};
        if (filters.type) body.type = filters.type;
        if (filters.since) body.since = filters.since;
        if (filters.until) body.until = filters.until;
        const answer = await api<{ count: number }>('POST', `/v2/pipelines/${encodeURIComponent(pipelineId)}/events/replay`, { body });
        return `${count(answer.count)} dead-lettered event${answer.count === 1 ? ' is' : 's are'} being replayed.`;
      })
      .then((ok) => {
        if (ok) setConfirming(false);
        resource.reload();
        onChanged();
      });
  const scope = [filters.type && `of type ${filters.type}`, filters.since && `since ${utc(filters.since)}`, filters.until && `until ${utc(filters.until)}`].filter(Boolean).join(', ');

  return (
    <section aria-labelledby="events-title">
      <h2 id="events-title" class="visually-hidden">
        Events
      </h2>
      <form class="filter-form" onSubmit={apply} key={location.query.toString()}>
        <div class="field">
          <label for="filter-type">Type</label>
          <input id="filter-type" name="type" defaultValue={filters.type} placeholder="order.created" />
        </div>
        <div class="field">
          <label for="filter-status">Status</label>
          <select id="filter-status" name="status" defaultValue={filters.status}>
            {EVENT_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s === '' ? 'Any' : s.replace('_', ' ')}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="filter-since">Since (UTC)</label>
          <input id="filter-since" name="since" type="datetime-local" step={1} defaultValue={inputFromIso(filters.since)} />
        </div>
        <div class="field">
          <label for="filter-until">Until (UTC)</label>
          <input id="filter-until" name="until" type="datetime-local" step={1} defaultValue={inputFromIso(filters.until)} />
        </div>
        <div class="field field-buttons">
          <button type="submit" class="button button-primary">
            Apply
          </button>
          <Link to={href(base)} class="button">
            Clear
          </Link>
        </div>
      </form>
      <p class="muted small">Newest first, in the order the pipeline recorded them; Since and Until narrow it to when events happened.</p>
      <div class="bulk">
        <button type="button" class="button button-danger" disabled={action.busy || deadLettered === 0} onClick={() => setConfirming(true)}>
          Replay dead-lettered…
        </button>
        <span class="muted">{deadLettered === undefined ? '' : `${count(deadLettered)} dead-lettered in all`}</span>
      </div>
      <ConfirmDialog open={confirming} title="Replay dead-lettered events" confirmLabel="Replay" busy={action.busy} onConfirm={replayAll} onCancel={() => setConfirming(false)}>
        <p>
          Every dead-lettered event of this pipeline{scope ? ` ${scope}` : ''} runs again from the stage where it failed. Events that fail again are dead-lettered again.
        </p>
        {action.problem ? <ProblemBox problem={action.problem} context="The replay failed" /> : null}
      </ConfirmDialog>
      <ActionOutcome action={action} />
      {resource.problem ? <ProblemBox problem={resource.problem} context="The events could not be loaded" /> : null}
      {events && events.length === 0 ? (
        <EmptyState title="No events match.">
          <p>{filters.type || filters.status || filters.since || filters.until ? 'Clear the filters to see every event.' : 'Events appear here once the pipeline has run and committed a batch.'}</p>
        </EmptyState>
      ) : (
        <DataTable
          caption="Events"
          columns={['Occurred', 'Type', 'Status', 'Attempts', 'Error', { label: 'Details', hidden: true }]}
          busy={resource.loading}
          rows={events
            ? events.flatMap((e) => {
                const expanded = open.has(e.id);
                const rows = [
                  <tr key={e.id} data-event-id={e.id}>
                    <td title={e.occurred_at}>
                      {utc(e.occurred_at)}
                      <div class="muted mono">{e.id}</div>
                    </td>
                    <td>
                      <code>{e.type}</code>
                    </td>
                    <td>
                      <Badge value={e.status} />
                    </td>
                    <td class="number">{e.attempts}</td>
                    <td>{e.error ? <span class="error-text">{[e.error.stage, e.error.code].filter(Boolean).join(' · ')}</span> : null}</td>
                    <td>
                      <button
                        type="button"
                        class="button button-quiet"
                        aria-expanded={expanded}
                        aria-controls={`event-${e.id}`}
                        onClick={() =>
                          setOpen((s) => {
                            const next = new Set(s);
                            if (next.has(e.id)) next.delete(e.id);
                            else next.add(e.id);
                            return next;
                          })
                        }
                      >
                        {expanded ? 'Hide' : 'Show'}
                        <span class="visually-hidden"> event {e.id}</span>
                      </button>
                    </td>
                  </tr>,
                ];
                if (expanded) rows.push(<EventDetail key={`${e.id}-detail`} event={e} action={action} onReplay={() => replayOne(e)} />);
                return rows;
              }) : undefined}
        />
      )}
      {resource.data ? <Pager first={href(base, { ...filters })} next={resource.data.next_cursor && resource.data.has_more ? href(base, { ...filters, cursor: resource.data.next_cursor }) : null} onFirstPage={!cursor} /> : null}
    </section>
  );
}

function EventDetail({ event, action, onReplay }: { event: EventRecord; action: Action; onReplay: () => void }): JSX.Element {
  return (
    <tr class="detail-row" id={`event-${event.id}`}>
      <td colSpan={6}>
        <div class="detail">
          {event.error ? (
            <div class="detail-error">
              <h3>Error</h3>
              <p>
                Stage <code>{event.error.stage}</code>, code <code>{event.error.code}</code>
                {event.dead_lettered_at ? `, dead-lettered ${utc(event.dead_lettered_at)}` : ''}
              </p>
              {event.error.message ? <p class="error-text">{event.error.message}</p> : null}
            </div>
          ) : null}
          <h3>Payload</h3>
          {event.payload === null ? (
            <p>Not kept: this pipeline keeps the payloads of failed events only.</p>
          ) : (
            <pre class="json" tabIndex={0} aria-label={`Payload of event ${event.id}`}>
              {JSON.stringify(event.payload, null, 2)}
            </pre>
          )}
          {event.status === 'dead_lettered' ? (
            <button type="button" class="button button-primary" disabled={action.busy} onClick={onReplay}>
              Replay this event
            </button>
          ) : null}
        </div>
      </td>
    </tr>
  );
}

function RunsPanel({ pipelineId, base, location }: { pipelineId: string; base: string; location: Location }): JSX.Element {
  const cursor = location.query.get('cursor') ?? '';
  const resource = useResource<Page<Run>>(() => api<Page<Run>>('GET', `/v2/pipelines/${encodeURIComponent(pipelineId)}/runs`, { query: { limit: 50, order: 'desc', cursor } }), [pipelineId, cursor], 15_000);
  const runs = resource.data?.data;
  return (
    <section aria-labelledby="runs-title">
      <h2 id="runs-title" class="visually-hidden">
        Runs
      </h2>
      <p class="muted small">Newest first; the last run is also in the summary above.</p>
      {resource.problem ? <ProblemBox problem={resource.problem} context="The runs could not be loaded" /> : null}
      {runs && runs.length === 0 ? (
        <EmptyState title="No runs yet.">
          <p>A run starts at the pipeline's next scheduled time, when it starts streaming, or with Run now.</p>
        </EmptyState>
      ) : (
        <DataTable
          caption="Runs"
          columns={['Run', 'Trigger', 'Status', 'Started', 'Duration', 'Read', 'Written', 'Filtered', 'Dead-lettered', 'Error']}
          busy={resource.loading}
          rows={runs
            ? runs.map((r) => (
                <tr key={r.id}>
                  <td class="mono">{r.id}</td>
                  <td>{r.trigger}</td>
                  <td>
                    <Badge value={r.status} />
                  </td>
                  <td title={r.started_at ?? ''}>{utc(r.started_at ?? r.scheduled_for ?? r.created_at)}</td>
                  <td>{runDuration(r)}</td>
                  <td class="number">{count(r.events_read)}</td>
                  <td class="number">{count(r.events_written)}</td>
                  <td class="number">{count(r.events_filtered)}</td>
                  <td class="number">{count(r.events_dead_lettered)}</td>
                  <td>{r.error ? <code class="error-text">{r.error}</code> : null}</td>
                </tr>
              )) : undefined}
        />
      )}
      {resource.data ? <Pager first={href(`${base}/runs`)} next={resource.data.next_cursor ? href(`${base}/runs`, { cursor: resource.data.next_cursor }) : null} onFirstPage={!cursor} /> : null}
    </section>
  );
}

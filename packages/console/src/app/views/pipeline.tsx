import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, type Page, type Problem } from '../api.js';
import { ActionOutcome } from '../components/action-outcome.js';
import { Badge } from '../components/badge.js';
import { ConfirmDialog } from '../components/confirm-dialog.js';
import { DataTable } from '../components/data-table.js';
import { EmptyState } from '../components/empty-state.js';
import { EventBody } from '../components/event-body.js';
import { ListBar } from '../components/freshness.js';
import { HeldNotice } from '../components/held-notice.js';
import { Layout, type Shell } from '../components/layout.js';
import { MinuteChart } from '../components/minute-chart.js';
import { Pager } from '../components/pager.js';
import { ProblemBox } from '../components/problem-box.js';
import { Chip } from '../components/text.js';
import { connectorsById, figures, pipelineStats } from '../data.js';
import { ago, count, inputFromIso, isoFromInput, runDuration, utc } from '../format.js';
import type { Connector, EventRecord, Pipeline, PipelineStats, Run } from '../records.js';
import { href, Link, navigate, type Location } from '../router.js';
import { useAction } from '../use-action.js';
import { useResource } from '../use-resource.js';
import { BackfillsPanel } from './pipeline-backfills.js';
import { PipelineActions } from './pipeline-actions.js';
import { ConnectorCell } from './pipelines.js';

const EVENT_STATUSES = ['', 'delivered', 'filtered', 'dead_lettered', 'replaying'];

/** Events and runs per page. */
const PAGE_SIZE = 50;

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

/** The filters as the form's fields hold them: times as datetime-local values, in UTC. */
function fieldsOf(filters: EventFilters): EventFilters {
  return { ...filters, since: inputFromIso(filters.since), until: inputFromIso(filters.until) };
}

/** The filters set, in words (`status dead lettered, of type order.created`), or '' when none is. */
function describeFilters(filters: EventFilters): string {
  return [
    filters.status && `status ${filters.status.replace(/_/g, ' ')}`,
    filters.type && `of type ${filters.type}`,
    filters.since && `since ${utc(filters.since)}`,
    filters.until && `until ${utc(filters.until)}`,
  ]
    .filter(Boolean)
    .join(', ');
}

/**
 * One pipeline: what it is, its last hour, its dead letters with bulk replay, then its events
 * (`/pipelines/:id`, filtered and paged by the URL), its runs (`/pipelines/:id/runs`) or its
 * backfills (`/pipelines/:id/backfills`).
 */
export function PipelineView({ id, tab, location, shell }: { id: string; tab: 'events' | 'runs' | 'backfills'; location: Location; shell: Shell }): JSX.Element {
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
            <dd>
              {data ? (data.stats ? count(data.stats.dead_lettered) : '–') : '…'}
              {data?.stats && data.stats.replaying > 0 ? <span class="muted"> ({count(data.stats.replaying)} being replayed)</span> : null}
            </dd>
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
          <p class="muted small chart-note">Counted by minute of commit. A replayed event counts as written in the minute it was delivered, not as read: a minute may show more written than read. A run counts its batches only.</p>
        </div>
      </section>
      <nav class="tabs" aria-label="Pipeline">
        <Link to={href(base)} aria-current={tab === 'events' ? 'page' : undefined}>
          Events
        </Link>
        <Link to={href(`${base}/runs`)} aria-current={tab === 'runs' ? 'page' : undefined}>
          Runs
        </Link>
        <Link to={href(`${base}/backfills`)} aria-current={tab === 'backfills' ? 'page' : undefined}>
          Backfills
        </Link>
      </nav>
      {tab === 'events' ? (
        <EventsPanel pipelineId={id} base={base} location={location} deadLettered={data?.stats?.dead_lettered} onChanged={resource.reload} />
      ) : tab === 'runs' ? (
        <RunsPanel pipelineId={id} base={base} location={location} onRefresh={resource.reload} />
      ) : (
        <BackfillsPanel pipelineId={id} base={base} location={location} source={data?.connectors.get(data.pipeline.source_connector_id)} onRefresh={resource.reload} />
      )}
    </Layout>
  );
}

function EventsPanel({ pipelineId, base, location, deadLettered, onChanged }: { pipelineId: string; base: string; location: Location; deadLettered: number | undefined; onChanged: () => void }): JSX.Element {
  const query = location.query.toString();
  const filters = filtersOf(location.query);
  const cursor = location.query.get('cursor') ?? '';
  // The form's fields, controlled: they show the filters of the URL (a link, Back, Clear), and
  // what the user types until Apply puts it in the URL.
  const [fields, setFields] = useState<EventFilters>(() => fieldsOf(filters));
  useEffect(() => setFields(fieldsOf(filtersOf(new URLSearchParams(query)))), [query]);
  const setField = (name: keyof EventFilters) => (event: Event) => {
    const value = (event.currentTarget as HTMLInputElement | HTMLSelectElement).value;
    setFields((f) => ({ ...f, [name]: value }));
  };
  const [open, setOpen] = useState<Set<string>>(new Set());
  const [confirming, setConfirming] = useState(false);
  // While an event is being replayed, the list is read again often, so its outcome shows soon.
  const [changing, setChanging] = useState(false);
  const action = useAction();
  const resource = useResource<Page<EventRecord>>(
    () => api<Page<EventRecord>>('GET', `/v2/pipelines/${encodeURIComponent(pipelineId)}/events`, { query: { limit: PAGE_SIZE, order: 'desc', ...filters, cursor } }),
    [pipelineId, query],
    changing ? 1500 : 15_000,
  );
  const events = resource.data?.data;
  const replaying = events?.some((e) => e.status === 'replaying') ?? false;
  useEffect(() => setChanging(replaying), [replaying]);

  const apply = (event: Event) => {
    event.preventDefault();
    navigate(href(base, { type: fields.type.trim(), status: fields.status, since: isoFromInput(fields.since), until: isoFromInput(fields.until) }));
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
  const filtered = describeFilters(filters);

  return (
    <section aria-labelledby="events-title">
      <h2 id="events-title" class="visually-hidden">
        Events
      </h2>
      <form class="filter-form" onSubmit={apply}>
        <div class="field">
          <label for="filter-type">Type</label>
          <input id="filter-type" name="type" value={fields.type} onInput={setField('type')} placeholder="order.created" />
        </div>
        <div class="field">
          <label for="filter-status">Status</label>
          <select id="filter-status" name="status" value={fields.status} onChange={setField('status')}>
            {EVENT_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s === '' ? 'Any' : s.replace('_', ' ')}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="filter-since">Since (UTC)</label>
          <input id="filter-since" name="since" type="datetime-local" step={1} value={fields.since} onInput={setField('since')} />
        </div>
        <div class="field">
          <label for="filter-until">Until (UTC)</label>
          <input id="filter-until" name="until" type="datetime-local" step={1} value={fields.until} onInput={setField('until')} />
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
      <p class="muted small filter-state">
        {filtered ? (
          <>
            Showing events with {filtered}, newest first. <Link to={href(base)}>Clear the filters</Link>
          </>
        ) : (
          'Every event, newest first in the order the pipeline recorded them; Since and Until narrow it to when events happened.'
        )}
      </p>
      <ListBar updatedAt={resource.updatedAt} reading={resource.reading} onRefresh={() => (resource.reload(), onChanged())} label="events">
        <div class="bulk">
          <button type="button" class="button button-danger" disabled={action.busy || deadLettered === 0} onClick={() => setConfirming(true)}>
            Replay dead-lettered…
          </button>
          <span class="muted">{deadLettered === undefined ? '' : `${count(deadLettered)} dead-lettered in all`}</span>
        </div>
      </ListBar>
      <ConfirmDialog open={confirming} title="Replay dead-lettered events" confirmLabel="Replay" busy={action.busy} onConfirm={replayAll} onCancel={() => setConfirming(false)}>
        <p>
          Every dead-lettered event of this pipeline{scope ? ` ${scope}` : ''} runs again from the stage where it failed. Events that fail again are dead-lettered again.
        </p>
        {action.problem ? <ProblemBox problem={action.problem} context="The replay failed" /> : null}
      </ConfirmDialog>
      <ActionOutcome action={action} />
      {resource.problem ? <ProblemBox problem={resource.problem} context="The events could not be loaded" /> : null}
      {events && events.length === 0 ? (
        filtered ? (
          <EmptyState title="No events match the filters.">
            <p>
              None with {filtered}{cursor ? ' on this page' : ''}. <Link to={href(base)}>Clear the filters</Link> to see every event.
            </p>
          </EmptyState>
        ) : (
          <EmptyState title={cursor ? 'No older events.' : 'No events yet.'}>
            <p>{cursor ? 'This page is past the oldest event.' : 'Events appear here once the pipeline has run and committed a batch.'}</p>
          </EmptyState>
        )
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
                    <th scope="row" title={e.occurred_at} class="row-time">
                      {utc(e.occurred_at)}
                      <div class="mono small">
                        <Link to={href(`/events/${encodeURIComponent(e.id)}`)} class="quiet-link">
                          {e.id}
                        </Link>
                      </div>
                    </th>
                    <td data-label="Type">
                      <Chip text={e.type} />
                    </td>
                    <td data-label="Status">
                      <Badge value={e.status} />
                    </td>
                    <td class="number" data-label="Attempts">
                      {e.attempts}
                    </td>
                    <td data-label="Error">{e.error ? <span class="error-text">{[e.error.stage, e.error.code].filter(Boolean).join(' · ')}</span> : null}</td>
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
                if (expanded)
                  rows.push(
                    <tr key={`${e.id}-detail`} class="detail-row" id={`event-${e.id}`}>
                      <td colSpan={6}>
                        <EventBody event={e} action={action} onReplay={() => replayOne(e)} />
                      </td>
                    </tr>,
                  );
                return rows;
              }) : undefined}
        />
      )}
      {resource.data ? <Pager cursor={cursor} next={resource.data.has_more ? resource.data.next_cursor : null} to={(c) => href(base, { ...filters, cursor: c })} order="desc" /> : null}
    </section>
  );
}

function RunsPanel({ pipelineId, base, location, onRefresh }: { pipelineId: string; base: string; location: Location; onRefresh: () => void }): JSX.Element {
  const cursor = location.query.get('cursor') ?? '';
  const resource = useResource<Page<Run>>(() => api<Page<Run>>('GET', `/v2/pipelines/${encodeURIComponent(pipelineId)}/runs`, { query: { limit: PAGE_SIZE, order: 'desc', cursor } }), [pipelineId, cursor], 15_000);
  const runs = resource.data?.data;
  return (
    <section aria-labelledby="runs-title">
      <h2 id="runs-title" class="visually-hidden">
        Runs
      </h2>
      <ListBar updatedAt={resource.updatedAt} reading={resource.reading} onRefresh={() => (resource.reload(), onRefresh())} label="runs">
        <p class="muted small">Newest first; the last run is also in the summary above. Replays of dead letters belong to no run.</p>
      </ListBar>
      {resource.problem ? <ProblemBox problem={resource.problem} context="The runs could not be loaded" /> : null}
      {runs && runs.length === 0 ? (
        <EmptyState title={cursor ? 'No older runs.' : 'No runs yet.'}>
          <p>{cursor ? 'This page is past the oldest run.' : "A run starts at the pipeline's next scheduled time, when it starts streaming, or with Run now."}</p>
        </EmptyState>
      ) : (
        <DataTable
          caption="Runs"
          columns={['Run', 'Trigger', 'Status', 'Started', 'Duration', 'Read', 'Written', 'Filtered', 'Dead-lettered', 'Error']}
          busy={resource.loading}
          rows={runs
            ? runs.map((r) => (
                <tr key={r.id}>
                  <th scope="row" class="mono small">
                    {r.id}
                  </th>
                  <td data-label="Trigger">{r.trigger}</td>
                  <td data-label="Status">
                    <Badge value={r.status} />
                    {r.held ? (
                      <>
                        {' '}
                        <Badge value="held" label={`held, ${r.held.attempts} attempts`} />
                      </>
                    ) : null}
                  </td>
                  <td title={r.started_at ?? ''} data-label="Started">
                    {utc(r.started_at ?? r.scheduled_for ?? r.created_at)}
                  </td>
                  <td data-label="Duration">{runDuration(r)}</td>
                  <td class="number" data-label="Read">
                    {count(r.events_read)}
                  </td>
                  <td class="number" data-label="Written">
                    {count(r.events_written)}
                  </td>
                  <td class="number" data-label="Filtered">
                    {count(r.events_filtered)}
                  </td>
                  <td class="number" data-label="Dead-lettered">
                    {count(r.events_dead_lettered)}
                  </td>
                  <td data-label="Error">{r.error ? <code class="error-text">{r.error}</code> : r.held ? <code class="error-text" title={r.held.error.message}>{r.held.error.code}</code> : null}</td>
                </tr>
              )) : undefined}
        />
      )}
      {resource.data ? <Pager cursor={cursor} next={resource.data.has_more ? resource.data.next_cursor : null} to={(c) => href(`${base}/runs`, { cursor: c })} order="desc" /> : null}
    </section>
  );
}

import type { JSX } from 'preact';
import { api, type Page, type Problem } from '../api.js';
import { ActionOutcome } from '../components/action-outcome.js';
import { Badge } from '../components/badge.js';
import { DataTable } from '../components/data-table.js';
import { EmptyState } from '../components/empty-state.js';
import { ListBar } from '../components/freshness.js';
import { Layout, type Shell } from '../components/layout.js';
import { MinuteChart } from '../components/minute-chart.js';
import { Pager } from '../components/pager.js';
import { ProblemBox } from '../components/problem-box.js';
import { connectorsById, figures, pipelineStats } from '../data.js';
import { ago, count, utc } from '../format.js';
import type { Connector, Pipeline, PipelineStats } from '../records.js';
import { href, Link, type Location } from '../router.js';
import { useAction } from '../use-action.js';
import { useResource } from '../use-resource.js';
import { PipelineActions } from './pipeline-actions.js';

const STATES = ['', 'active', 'paused', 'draft', 'deleting'] as const;

interface Loaded {
  page: Page<Pipeline>;
  connectors: Map<string, Connector>;
  stats: Map<string, PipelineStats | Problem>;
}

/** A connector's name and health, in a table cell. */
export function ConnectorCell({ id, connectors }: { id: string; connectors: Map<string, Connector> }): JSX.Element {
  const c = connectors.get(id);
  if (!c) return <code>{id}</code>;
  return (
    <span class="connector-cell">
      <span class="connector-name">{c.name}</span> <span class="muted">{c.type}</span> <Badge value={c.health} />
    </span>
  );
}

/** The pipelines of the workspace: state, schedule, connectors' health, last run, the last hour, dead letters; and their actions. */
export function PipelinesView({ location, shell }: { location: Location; shell: Shell }): JSX.Element {
  const state = location.query.get('state') ?? '';
  const cursor = location.query.get('cursor') ?? '';
  const action = useAction();
  const resource = useResource<Loaded>(
    async () => {
      const page = await api<Page<Pipeline>>('GET', '/v2/pipelines', { query: { limit: 25, state, cursor } });
      const [connectors, stats] = await Promise.all([
        connectorsById(page.data.flatMap((p) => [p.source_connector_id, p.destination_connector_id])),
        Promise.all(page.data.map(async (p) => [p.id, await pipelineStats(p.id)] as const)).then((entries) => new Map(entries)),
      ]);
      return { page, connectors, stats };
    },
    [state, cursor],
    15_000,
  );
  const data = resource.data;
  return (
    <Layout {...shell} title="Pipelines">
      <ListBar updatedAt={resource.updatedAt} reading={resource.reading} onRefresh={resource.reload} label="pipelines">
        <nav class="filters" aria-label="Filter by state">
          {STATES.map((s) => (
            <Link key={s} to={href('/pipelines', { state: s })} class="filter" aria-current={s === state ? 'true' : undefined}>
              {s === '' ? 'All' : s[0]!.toUpperCase() + s.slice(1)}
            </Link>
          ))}
        </nav>
      </ListBar>
      <ActionOutcome action={action} />
      {resource.problem ? <ProblemBox problem={resource.problem} context="The pipelines could not be loaded" /> : null}
      {data && data.page.data.length === 0 ? (
        <EmptyState title={state ? `No ${state} pipelines.` : 'No pipelines yet.'}>
          <p>
            A pipeline reads from a source connector and writes to a destination. Create connectors, then a pipeline, with <code>POST /v2/connectors</code> and{' '}
            <code>POST /v2/pipelines</code>; it shows up here.
          </p>
        </EmptyState>
      ) : (
        <DataTable
          caption="Pipelines"
          columns={['Name', 'State', 'Source → destination', 'Last run', 'Last hour', 'Dead-lettered', 'Actions']}
          busy={resource.loading}
          rows={data
            ? data.page.data.map((p) => {
                const answer = data.stats.get(p.id);
                const stats = figures(answer);
                return (
                  <tr key={p.id}>
                    <th scope="row">
                      <Link to={href(`/pipelines/${encodeURIComponent(p.id)}`)}>{p.name}</Link>
                      <div class="muted mono small">{p.id}</div>
                    </th>
                    <td data-label="State">
                      <div class="badges">
                        <Badge value={p.state} />
                        {p.held ? <Badge value="held" label={`held, ${p.held.attempts} attempts`} /> : null}
                      </div>
                      <div class="schedule">{p.schedule ? <code title="Schedule (cron, UTC)">{p.schedule}</code> : <span class="muted">streaming</span>}</div>
                    </td>
                    <td data-label="Source → destination">
                      <div class="connector-line">
                        <ConnectorCell id={p.source_connector_id} connectors={data.connectors} />
                      </div>
                      <div class="connector-line">
                        <span aria-hidden="true">→ </span>
                        <span class="visually-hidden">to </span>
                        <ConnectorCell id={p.destination_connector_id} connectors={data.connectors} />
                      </div>
                    </td>
                    <td data-label="Last run">
                      {p.last_run ? (
                        <>
                          <Badge value={p.last_run.status} /> <span title={utc(p.last_run.started_at ?? p.last_run.created_at)}>{ago(p.last_run.finished_at ?? p.last_run.started_at ?? p.last_run.created_at)}</span>
                          {p.last_run.error ? (
                            <div>
                              <code class="error-text small">{p.last_run.error}</code>
                            </div>
                          ) : null}
                        </>
                      ) : (
                        <span class="muted">never</span>
                      )}
                    </td>
                    <td data-label="Last hour">
                      <MinuteChart minutes={stats?.per_minute} compact />
                      <div class="muted small" title="Written in the last hour, replayed events included.">
                        {stats ? `${count(stats.per_minute.reduce((n, m) => n + m.events_written, 0))} written` : '\u00a0'}
                      </div>
                    </td>
                    <td class="number" data-label="Dead-lettered">
                      {stats ? (
                        stats.dead_lettered > 0 ? (
                          <Link to={href(`/pipelines/${encodeURIComponent(p.id)}`, { status: 'dead_lettered' })} class="error-text">
                            {count(stats.dead_lettered)}
                          </Link>
                        ) : (
                          '0'
                        )
                      ) : (
                        <span class="muted" title={answer && 'code' in answer ? `${answer.code}: ${answer.detail ?? ''}` : undefined}>
                          –
                        </span>
                      )}
                    </td>
                    <td data-label="Actions">
                      <PipelineActions pipeline={p} action={action} onDone={resource.reload} />
                    </td>
                  </tr>
                );
              }) : undefined}
        />
      )}
      {data ? <Pager cursor={cursor} next={data.page.has_more ? data.page.next_cursor : null} to={(c) => href('/pipelines', { state, cursor: c })} order="asc" /> : null}
    </Layout>
  );
}

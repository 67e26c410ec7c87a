import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, type Page } from '../api.js';
import { ActionOutcome } from '../components/action-outcome.js';
import { Badge } from '../components/badge.js';
import { ConfirmDialog } from '../components/confirm-dialog.js';
import { DataTable } from '../components/data-table.js';
import { EmptyState } from '../components/empty-state.js';
import { ListBar } from '../components/freshness.js';
import { Layout, type Shell } from '../components/layout.js';
import { Pager } from '../components/pager.js';
import { ProblemBox } from '../components/problem-box.js';
import { ago, count, utc } from '../format.js';
import type { ApiConnector, Connector, ConnectorCheck, ConnectorRotation } from '../records.js';
import { named } from '../data.js';
import { href, type Location } from '../router.js';
import { useAction } from '../use-action.js';
import { useResource } from '../use-resource.js';

/** How the API shows a stored secret. */
const REDACTED = '********';

/** The config fields the API shows redacted: the ones a rotation may replace. */
function secretFields(connector: Connector): string[] {
  return Object.entries(connector.config)
    .filter(([, v]) => v === REDACTED)
    .map(([k]) => k);
}

/** A check's answer, in one sentence. */
function describeCheck(name: string, result: ConnectorCheck): string {
  const error = result.error ? `: ${result.error.code}, ${result.error.message}` : '';
  return `Check of ${name}: ${result.health} in ${count(result.latency_ms)} ms${error}`;
}

/**
 * A connector's last error, in its cell. While the connector is `healthy` again the error is
 * history: the runtime and a check turn a connector `degraded` or `down` when they record an
 * error, and `healthy` only at a later success, so it has recovered since. The API gives the
 * error's time but not the recovery's, so the page says "recovered since" and shows it greyed.
 */
export function LastError({ connector }: { connector: Connector }): JSX.Element | null {
  const error = connector.last_error;
  if (!error) return null;
  const recovered = connector.health === 'healthy';
  return (
    <span class={recovered ? 'last-error recovered' : 'last-error error-text'} title={recovered ? `${utc(error.at)}; healthy again since` : utc(error.at)}>
      {recovered ? (
        <>
          <Badge value="recovered" />{' '}
        </>
      ) : null}
      <code>{error.code}</code> {error.message} <span class="muted">({ago(error.at)}{recovered ? ', healthy again since' : ''})</span>
    </span>
  );
}

/**
 * The connectors of the workspace: type, direction, health, how many pipelines use each, the
 * last error; a live check, and credential rotation. Config is shown as the API answers it,
 * secrets as `********`.
 */
export function ConnectorsView({ location, shell }: { location: Location; shell: Shell }): JSX.Element {
  const cursor = location.query.get('cursor') ?? '';
  const action = useAction();
  const [rotating, setRotating] = useState<Connector | undefined>();
  const [generated, setGenerated] = useState<{ name: string; secret: string } | undefined>();
  const [open, setOpen] = useState<string | undefined>();
  const resource = useResource<Page<Connector>>(
    async () => {
      const page = await api<Page<ApiConnector>>('GET', '/v2/connectors', { query: { limit: 50, cursor } });
      return { ...page, data: page.data.map(named) };
    },
    [cursor],
    15_000,
  );
  const connectors = resource.data?.data;

  const check = (c: Connector) =>
    void action.run(async () => describeCheck(c.name, await api<ConnectorCheck>('POST', `/v2/connectors/${encodeURIComponent(c.id)}/check`))).then(resource.reload);

  const rotate = (form: HTMLFormElement) => {
    const c = rotating;
    if (!c) return;
    const values: Record<string, string> = {};
    for (const [k, v] of new FormData(form)) if (typeof v === 'string' && v !== '') values[k.replace(/^secret-/, '')] = v;
    void action
      .run(async () => {
        const answer = await api<ConnectorRotation>('POST', `/v2/connectors/${encodeURIComponent(c.id)}/rotate`, Object.keys(values).length ? { body: { config: values } } : {});
        const secret = answer.connector.config.signing_secret;
        setGenerated(typeof secret === 'string' && secret !== REDACTED ? { name: c.name, secret } : undefined);
        const paused = answer.rotation.paused_pipeline_ids.length;
        return `${c.name}: credentials rotated${paused ? `; ${paused} pipeline${paused === 1 ? ' was' : 's were'} paused and resumed` : ''}.`;
      })
      .then((ok) => {
        // A failed rotation keeps the dialog, its fields and its problem on screen.
        if (ok) setRotating(undefined);
        resource.reload();
      });
  };

  return (
    <Layout {...shell} title="Connectors">
      <ActionOutcome action={action} />
      {generated ? (
        <div class="notice" role="status">
          <p>
            New signing secret of {generated.name}, shown this once: give it to the senders.
          </p>
          <pre class="json" tabIndex={0}>
            {generated.secret}
          </pre>
          <button type="button" class="button" onClick={() => setGenerated(undefined)}>
            Done
          </button>
        </div>
      ) : null}
      <ListBar updatedAt={resource.updatedAt} reading={resource.reading} onRefresh={resource.reload} label="connectors" />
      {resource.problem ? <ProblemBox problem={resource.problem} context="The connectors could not be loaded" /> : null}
      {connectors && connectors.length === 0 ? (
        <EmptyState title="No connectors yet.">
          <p>
            A connector is one system Ferry reads from or writes to. Create one with <code>POST /v2/connectors</code>; its type's README lists its config.
          </p>
        </EmptyState>
      ) : (
        <DataTable
          caption="Connectors"
          columns={['Name', 'Type', 'Direction', 'Health', 'Pipelines', 'Last error', 'Actions']}
          busy={resource.loading}
          rows={connectors
            ? connectors.flatMap((c) => {
                const rows = [
                  <tr key={c.id}>
                    <th scope="row">
                      {c.name}
                      <div class="muted mono small">{c.id}</div>
                    </th>
                    <td data-label="Type">{c.type}</td>
                    <td data-label="Direction">{c.direction}</td>
                    <td data-label="Health">
                      <Badge value={c.health} />
                      {c.rotation_status === 'rotating' ? <> <Badge value="running" label="rotating" /></> : null}
                    </td>
                    <td class="number" data-label="Pipelines">
                      {count(c.pipeline_count)}
                    </td>
                    <td data-label="Last error">
                      <LastError connector={c} />
                    </td>
                    <td data-label="Actions">
                      <div class="actions actions-inline">
                        <button type="button" class="button" disabled={action.busy} aria-label={`Check ${c.name}`} onClick={() => check(c)}>
                          Check
                        </button>
                        <button type="button" class="button" disabled={action.busy} aria-label={`Rotate the credentials of ${c.name}`} onClick={() => (action.clear(), setRotating(c))}>
                          Rotate…
                        </button>
                        <button type="button" class="button button-quiet" aria-expanded={open === c.id} aria-controls={`config-${c.id}`} onClick={() => setOpen(open === c.id ? undefined : c.id)}>
                          Config<span class="visually-hidden"> of {c.name}</span>
                        </button>
                      </div>
                    </td>
                  </tr>,
                ];
                if (open === c.id)
                  rows.push(
                    <tr key={`${c.id}-config`} class="detail-row" id={`config-${c.id}`}>
                      <td colSpan={7}>
                        <pre class="json" tabIndex={0} aria-label={`Config of ${c.name}`}>
                          {JSON.stringify(c.config, null, 2)}
                        </pre>
                      </td>
                    </tr>,
                  );
                return rows;
              }) : undefined}
        />
      )}
      {resource.data ? <Pager cursor={cursor} next={resource.data.has_more ? resource.data.next_cursor : null} to={(c) => href('/connectors', { cursor: c })} order="asc" /> : null}
      <ConfirmDialog open={rotating !== undefined} title={`Rotate the credentials of ${rotating?.name ?? ''}`} confirmLabel="Rotate" busy={action.busy} onConfirm={rotate} onCancel={() => setRotating(undefined)}>
        <p>
          Pipelines using this connector pause after their batch in flight, the new credentials are checked, and the pipelines resume. A failed check puts the old credentials back.
        </p>
        {rotating && secretFields(rotating).length > 0 ? (
          <>
            <p>Enter new values, or leave every field empty to let the connector type generate them where it can.</p>
            {secretFields(rotating).map((field) => (
              <div class="field" key={field}>
                <label for={`secret-${field}`}>{field}</label>
                <input id={`secret-${field}`} name={`secret-${field}`} type="password" autoComplete="off" spellcheck={false} />
              </div>
            ))}
          </>
        ) : (
          <p>The connector type generates the new credentials.</p>
        )}
        {action.problem ? <ProblemBox problem={action.problem} context="The rotation failed" /> : null}
      </ConfirmDialog>
    </Layout>
  );
}

import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, type Page } from '../api.js';
import { ActionOutcome } from '../components/action-outcome.js';
import { Badge } from '../components/badge.js';
import { ConfirmDialog } from '../components/confirm-dialog.js';
import { DataTable } from '../components/data-table.js';
import { EmptyState } from '../components/empty-state.js';
import { ListBar } from '../components/freshness.js';
import { Pager } from '../components/pager.js';
import { ProblemBox } from '../components/problem-box.js';
import { count, duration, utc } from '../format.js';
import type { Backfill, Connector } from '../records.js';
import { href, type Location } from '../router.js';
import { useAction } from '../use-action.js';
import { useResource } from '../use-resource.js';

/** Backfills per page. */
const PAGE_SIZE = 25;

/** How far a backfill has come: rows read of estimated, its rate so far, and the time left at that rate. */
function backfillProgress(b: Backfill, now = Date.now()): { share: number | undefined; rate: number | undefined; left: number | undefined; estimated: number | undefined } {
  const known = b.tables.every((t) => t.rows_estimated !== null);
  const estimated = known ? b.tables.reduce((sum, t) => sum + Math.max(t.rows_estimated ?? 0, t.rows_read), 0) : undefined;
  const done = b.state === 'succeeded';
  const share = done ? 1 : estimated ? Math.min(1, b.rows_read / estimated) : undefined;
  const elapsed = b.started_at ? ((b.finished_at ? Date.parse(b.finished_at) : now) - Date.parse(b.started_at)) / 1000 : 0;
  const rate = elapsed > 0 && b.rows_read > 0 ? b.rows_read / elapsed : undefined;
  const left = b.state === 'running' && rate && estimated !== undefined ? Math.max(0, (estimated - b.rows_read) / rate) * 1000 : undefined;
  return { share, rate, left, estimated };
}

/**
 * A pipeline's backfills (`/pipelines/:id/backfills`): each with a progress bar (rows read of the
 * source's estimate, the rate so far, the time left at that rate), a dialog that starts one
 * (tables, a filter per table, a chunk size), and cancel. Read again every few seconds while one
 * runs.
 */
export function BackfillsPanel({ pipelineId, base, location, source, onRefresh }: { pipelineId: string; base: string; location: Location; source: Connector | undefined; onRefresh: () => void }): JSX.Element {
  const cursor = location.query.get('cursor') ?? '';
  const [busy, setBusy] = useState(false);
  const resource = useResource<Page<Backfill>>(
    () => api<Page<Backfill>>('GET', `/v2/pipelines/${encodeURIComponent(pipelineId)}/backfills`, { query: { limit: PAGE_SIZE, order: 'desc', cursor } }),
    [pipelineId, cursor],
    busy ? 3000 : 15_000,
  );
  const backfills = resource.data?.data;
  // While one runs or waits, read again often: its progress moves.
  const moving = backfills?.some((b) => b.state === 'running' || b.state === 'queued') ?? false;
  useEffect(() => setBusy(moving), [moving]);
  const action = useAction();
  const [starting, setStarting] = useState(false);
  const [cancelling, setCancelling] = useState<Backfill | undefined>();
  // The tables the source captures, as its config names them: the dialog offers them.
  const captured = Array.isArray(source?.config.tables) ? (source.config.tables as unknown[]).filter((t): t is string => typeof t === 'string') : [];

  const start = (form: HTMLFormElement) => {
    const data = new FormData(form);
    const tables = data.getAll('table').map(String);
    const where: Record<string, string> = {};
    for (const table of tables) {
      const filter = String(data.get(`where:${table}`) ?? '').trim();
      if (filter) where[table] = filter;
    }
    const chunk = String(data.get('chunk_size') ?? '').trim();
    const body: Record<string, unknown> = {};
    if (tables.length > 0) body.tables = tables;
    if (Object.keys(where).length > 0) body.where = where;
    if (chunk) body.chunk_size = Number(chunk);
    void action
      .run(async () => {
        const created = await api<Backfill>('POST', `/v2/pipelines/${encodeURIComponent(pipelineId)}/backfills`, { body });
        return `Backfill ${created.id} is queued: ${created.tables.map((t) => t.table).join(', ')}.`;
      })
      .then((ok) => {
        if (ok) setStarting(false);
        resource.reload();
        onRefresh();
      });
  };
  const cancel = (b: Backfill) =>
    void action
      .run(async () => {
        await api<Backfill>('POST', `/v2/backfills/${encodeURIComponent(b.id)}/cancel`);
        return `Backfill ${b.id} is cancelled; the rows it read stay written.`;
      })
      .then((ok) => {
        if (ok) setCancelling(undefined);
        resource.reload();
      });

  return (
    <section aria-labelledby="backfills-title">
      <h2 id="backfills-title" class="visually-hidden">
        Backfills
      </h2>
      <ListBar updatedAt={resource.updatedAt} reading={resource.reading} onRefresh={() => (resource.reload(), onRefresh())} label="backfills">
        <div class="bulk">
          <button type="button" class="button button-primary" disabled={action.busy} onClick={() => setStarting(true)}>
            Start a backfill…
          </button>
          <span class="muted small">Newest first. A backfill reads tables again in short chunks while changes keep streaming.</span>
        </div>
      </ListBar>
      <ConfirmDialog open={starting} title="Start a backfill" confirmLabel="Start" busy={action.busy} onConfirm={start} onCancel={() => setStarting(false)}>
        <p>The tables are read again in key order, a chunk at a time, while their changes keep streaming. Each row arrives as a <code>.read</code> event; none is held in a long transaction.</p>
        {captured.length > 0 ? (
          <fieldset class="backfill-tables">
            <legend>Tables (none checked: all of them)</legend>
            {captured.map((table) => (
              <div class="backfill-table" key={table}>
                <label>
                  <input type="checkbox" name="table" value={table} /> <code>{table}</code>
                </label>
                <label class="visually-hidden" for={`where-${table}`}>
                  Filter of {table}
                </label>
                <input id={`where-${table}`} name={`where:${table}`} placeholder="Filter, e.g. region = 'eu'" autocomplete="off" spellcheck={false} />
              </div>
            ))}
          </fieldset>
        ) : (
          <p class="muted">This source names no tables: the backfill reads all it captures.</p>
        )}
        <div class="field">
          <label for="backfill-chunk">Rows per chunk</label>
          <input id="backfill-chunk" name="chunk_size" type="number" min={1} max={100000} placeholder="the source's batch size" />
        </div>
        <p class="muted small">A filter is a condition on the table's columns (comparisons, AND, OR, NOT, IN, BETWEEN, LIKE, IS NULL); it applies only to a checked table.</p>
        {action.problem ? <ProblemBox problem={action.problem} context="The backfill could not start" /> : null}
      </ConfirmDialog>
      <ConfirmDialog open={cancelling !== undefined} title="Cancel the backfill" confirmLabel="Cancel the backfill" danger busy={action.busy} onConfirm={() => cancelling && cancel(cancelling)} onCancel={() => setCancelling(undefined)}>
        <p>
          Backfill <code>{cancelling?.id}</code> stops at its next batch, for good. The {count(cancelling?.rows_read)} rows it read stay written.
        </p>
        {action.problem ? <ProblemBox problem={action.problem} context="The backfill could not be cancelled" /> : null}
      </ConfirmDialog>
      <ActionOutcome action={action} />
      {resource.problem ? <ProblemBox problem={resource.problem} context="The backfills could not be loaded" /> : null}
      {backfills && backfills.length === 0 ? (
        <EmptyState title={cursor ? 'No older backfills.' : 'No backfills yet.'}>
          <p>{cursor ? 'This page is past the oldest backfill.' : 'A change-capture pipeline reads the rows present as its first backfill; start another to read tables again.'}</p>
        </EmptyState>
      ) : (
        <DataTable
          caption="Backfills"
          columns={['Backfill', 'State', 'Tables', 'Progress', 'Rate', 'Time left', 'Started', { label: 'Actions', hidden: true }]}
          busy={resource.loading}
          rows={backfills
            ? backfills.map((b) => {
                const p = backfillProgress(b);
                return (
                  <tr key={b.id} data-backfill-id={b.id}>
                    <th scope="row" class="mono small">
                      {b.id}
                    </th>
                    <td data-label="State">
                      <Badge value={b.state} />
                      {b.error ? (
                        <div class="error-text small" title={b.error.message}>
                          {b.error.code}
                        </div>
                      ) : null}
                    </td>
                    <td data-label="Tables">
                      {b.tables.map((t) => (
                        <div key={t.table} class="small">
                          <code>{t.table}</code> {t.state === 'done' ? '✓' : t.state === 'running' ? '…' : ''}
                          {b.where?.[t.table] ? <div class="muted mono">where {b.where[t.table]}</div> : null}
                        </div>
                      ))}
                    </td>
                    <td data-label="Progress">
                      <progress class="backfill-progress" max={1} value={p.share} aria-label={`Backfill ${b.id} progress`} />
                      <div class="small">
                        {count(b.rows_read)}
                        {p.estimated !== undefined ? ` of ~${count(p.estimated)}` : ''} rows
                      </div>
                    </td>
                    <td class="number" data-label="Rate">
                      {p.rate ? `${count(Math.round(p.rate))}/s` : ''}
                    </td>
                    <td data-label="Time left">{p.left !== undefined ? duration(p.left) : b.state === 'paused' ? 'paused with its pipeline' : ''}</td>
                    <td title={b.started_at ?? ''} data-label="Started">
                      {utc(b.started_at ?? b.created_at)}
                    </td>
                    <td>
                      {b.state === 'queued' || b.state === 'running' || b.state === 'paused' ? (
                        <button type="button" class="button button-quiet" disabled={action.busy} onClick={() => setCancelling(b)}>
                          Cancel<span class="visually-hidden"> backfill {b.id}</span>
                        </button>
                      ) : null}
                    </td>
                  </tr>
                );
              }) : undefined}
        />
      )}
      {resource.data ? <Pager cursor={cursor} next={resource.data.has_more ? resource.data.next_cursor : null} to={(c) => href(`${base}/backfills`, { cursor: c })} order="desc" /> : null}
    </section>
  );
}

import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
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
import { Chip, WrappingUrl } from '../components/text.js';
import { ago, count, duration, inputFromIso, isoFromInput, utc } from '../format.js';
import type { Delivery, DeliveryWithAttempts, WebhookSubscription } from '../records.js';
import { href, Link, navigate, type Location } from '../router.js';
import { useAction, type Action } from '../use-action.js';
import { useResource } from '../use-resource.js';

const STATUSES = ['', 'failed', 'retrying', 'pending', 'delivered'];

/**
 * One subscription: its deliveries by status (`?status=failed`), each with its attempts and the
 * last answer; redeliver one, or recover every failed one of a time range.
 */
export function WebhookView({ id, location, shell }: { id: string; location: Location; shell: Shell }): JSX.Element {
  const status = location.query.get('status') ?? '';
  const since = location.query.get('since') ?? '';
  const cursor = location.query.get('cursor') ?? '';
  const base = `/webhooks/${encodeURIComponent(id)}`;
  const action = useAction();
  const [open, setOpen] = useState<string | undefined>();
  const [recovering, setRecovering] = useState(false);
  const [disabling, setDisabling] = useState(false);
  // The Created since field, controlled: it shows the URL's filter (a link, Back) and what the
  // user types until Apply puts it in the URL.
  const [sinceField, setSinceField] = useState(() => inputFromIso(since));
  useEffect(() => setSinceField(inputFromIso(since)), [since]);
  const subscription = useResource<WebhookSubscription>(() => api<WebhookSubscription>('GET', `/v2/webhooks/${encodeURIComponent(id)}`), [id], 30_000);
  // A delivery `pending` is about to be attempted: the list is read again often until it is not.
  const [soon, setSoon] = useState(false);
  const deliveries = useResource<Page<Delivery>>(
    () => api<Page<Delivery>>('GET', `/v2/webhooks/${encodeURIComponent(id)}/deliveries`, { query: { limit: 50, order: 'desc', status, since, cursor } }),
    [id, status, since, cursor],
    soon ? 1500 : 10_000,
  );
  const s = subscription.data;
  const rows = deliveries.data?.data;
  const pending = rows?.some((d) => d.status === 'pending') ?? false;
  useEffect(() => setSoon(pending), [pending]);

  const redeliver = (d: Delivery) =>
    void action.run(async () => {
      const answer = await api<Delivery>('POST', `/v2/webhooks/${encodeURIComponent(id)}/deliveries/${encodeURIComponent(d.id)}/redeliver`);
      return `Delivery ${d.id} of ${d.event_type} is ${answer.status} again: a new 24-hour cycle of attempts has started.`;
    }).then(deliveries.reload);

  const recover = (form: HTMLFormElement) => {
    const data = new FormData(form);
    const since = isoFromInput(String(data.get('since') ?? ''));
    const until = isoFromInput(String(data.get('until') ?? ''));
    void action
      .run(async () => {
        const answer = await api<{ count: number }>('POST', `/v2/webhooks/${encodeURIComponent(id)}/recover`, { body: until ? { since, until } : { since } });
        return `${count(answer.count)} failed deliver${answer.count === 1 ? 'y is' : 'ies are'} being sent again, oldest first.`;
      })
      .then((ok) => {
        if (ok) setRecovering(false);
        deliveries.reload();
      });
  };

  const setEnabled = (enabled: boolean) =>
    void action
      .run(async () => {
        await api<WebhookSubscription>('PATCH', `/v2/webhooks/${encodeURIComponent(id)}`, { body: { enabled } });
        return enabled ? 'The subscription is enabled: new events are delivered again. Redeliver or recover what failed meanwhile.' : 'The subscription is disabled: it gets no new deliveries.';
      })
      .then(subscription.reload);

  const actions = (
    <div class="actions">
      {s ? (
        <button type="button" class="button" disabled={action.busy} onClick={() => (s.enabled ? setDisabling(true) : setEnabled(true))}>
          {s.enabled ? 'Disable' : 'Enable'}
        </button>
      ) : null}
      <button type="button" class="button" onClick={() => (action.clear(), setRecovering(true))}>
        Recover failed…
      </button>
    </div>
  );

  return (
    <Layout {...shell} title={s ? `Webhook ${s.description || s.id}` : 'Webhook'} actions={actions}>
      {subscription.problem ? <ProblemBox problem={subscription.problem} context="The subscription could not be loaded" /> : null}
      <dl class="facts">
        <div class="fact-wide">
          <dt>URL</dt>
          <dd>{s ? <WrappingUrl url={s.url} /> : '…'}</dd>
        </div>
        <div>
          <dt>Status</dt>
          <dd>{s ? s.enabled ? <Badge value="enabled" /> : <><Badge value="disabled" /> {s.disabled_reason?.replace(/_/g, ' ')}</> : '…'}</dd>
        </div>
        <div>
          <dt>Events</dt>
          <dd>
            {s ? (
              <div class="chips">
                {s.events.map((e) => (
                  <Chip key={e} text={e} />
                ))}
              </div>
            ) : (
              '…'
            )}
          </dd>
        </div>
        <div>
          <dt>Created</dt>
          <dd>{s ? utc(s.created_at) : '…'}</dd>
        </div>
      </dl>
      {s && !s.enabled ? <p class="notice">Redelivered and recovered deliveries fail at once while the subscription is disabled: enable it first.</p> : null}
      <nav class="filters" aria-label="Filter deliveries by status">
        {STATUSES.map((st) => (
          <Link key={st} to={href(base, { status: st, since })} class="filter" aria-current={st === status ? 'true' : undefined}>
            {st === '' ? 'All' : st[0]!.toUpperCase() + st.slice(1)}
          </Link>
        ))}
      </nav>
      <form
        class="filter-form"
        onSubmit={(event) => {
          event.preventDefault();
          navigate(href(base, { status, since: isoFromInput(sinceField) }));
        }}
      >
        <div class="field">
          <label for="deliveries-since">Created since (UTC)</label>
          <input id="deliveries-since" name="since" type="datetime-local" step={1} value={sinceField} onInput={(e) => setSinceField(e.currentTarget.value)} />
        </div>
        <div class="field field-buttons">
          <button type="submit" class="button button-primary">
            Apply
          </button>
          {since ? (
            <Link to={href(base, { status })} class="button">
              Clear
            </Link>
          ) : null}
        </div>
      </form>
      <ListBar updatedAt={deliveries.updatedAt} reading={deliveries.reading} onRefresh={() => (deliveries.reload(), subscription.reload())} label="deliveries">
        <p class="muted small">Newest first, by when each delivery was made.</p>
      </ListBar>
      <ActionOutcome action={action} />
      {deliveries.problem ? <ProblemBox problem={deliveries.problem} context="The deliveries could not be loaded" /> : null}
      {rows && rows.length === 0 ? (
        <EmptyState title={status || since ? `No ${status ? `${status} ` : ''}deliveries${since ? ` since ${utc(since)}` : ''}.` : cursor ? 'No older deliveries.' : 'No deliveries yet.'}>
          <p>
            {status || since ? (
              <>
                <Link to={href(base)}>See every delivery</Link>.
              </>
            ) : (
              'A delivery is made for every platform event this subscription names, when it happens.'
            )}
          </p>
        </EmptyState>
      ) : (
        <DataTable
          caption="Deliveries"
          columns={['Created', 'Event', 'Status', 'Attempts', 'Last answer', 'Next attempt', 'Actions']}
          busy={deliveries.loading}
          rows={rows
            ? rows.flatMap((d) => {
                const out = [
                  <tr key={d.id} data-delivery-id={d.id}>
                    <th scope="row" class="row-time">
                      {utc(d.created_at)}
                      <div class="muted mono small">{d.id}</div>
                    </th>
                    <td data-label="Event">
                      <Chip text={d.event_type} />
                      <div class="muted mono small">{d.event_id}</div>
                    </td>
                    <td data-label="Status">
                      <Badge value={d.status} />
                    </td>
                    <td class="number" data-label="Attempts">
                      {d.attempts}
                    </td>
                    <td data-label="Last answer">
                      {d.last_response_status ? <code>HTTP {d.last_response_status}</code> : null}
                      {d.last_error && d.last_error !== `HTTP ${d.last_response_status}.` ? <div class="error-text">{d.last_error}</div> : null}
                    </td>
                    <td data-label="Next attempt">{d.next_attempt_at ? <span title={utc(d.next_attempt_at)}>{ago(d.next_attempt_at)}</span> : ''}</td>
                    <td data-label="Actions">
                      <div class="actions">
                        {d.status === 'failed' || d.status === 'delivered' ? (
                          <button type="button" class="button" disabled={action.busy} aria-label={`Redeliver ${d.event_type} delivery ${d.id}`} onClick={() => redeliver(d)}>
                            Redeliver
                          </button>
                        ) : null}
                        <button type="button" class="button button-quiet" aria-expanded={open === d.id} aria-controls={`delivery-${d.id}`} onClick={() => setOpen(open === d.id ? undefined : d.id)}>
                          Attempts<span class="visually-hidden"> of delivery {d.id}</span>
                        </button>
                      </div>
                    </td>
                  </tr>,
                ];
                if (open === d.id) out.push(<AttemptsRow key={`${d.id}-attempts`} subscriptionId={id} delivery={d} action={action} />);
                return out;
              }) : undefined}
        />
      )}
      {deliveries.data ? <Pager cursor={cursor} next={deliveries.data.has_more ? deliveries.data.next_cursor : null} to={(c) => href(base, { status, since, cursor: c })} order="desc" /> : null}
      <ConfirmDialog
        open={disabling}
        title="Disable the subscription"
        confirmLabel="Disable"
        danger
        busy={action.busy}
        onConfirm={() => {
          setDisabling(false);
          setEnabled(false);
        }}
        onCancel={() => setDisabling(false)}
      >
        <p>It gets no new deliveries, and its pending and retrying deliveries end as failed. Enable it again and recover them to send them later.</p>
      </ConfirmDialog>
      <ConfirmDialog open={recovering} title="Recover failed deliveries" confirmLabel="Recover" busy={action.busy} onConfirm={recover} onCancel={() => setRecovering(false)}>
        <p>Every failed delivery of this subscription created in the range is sent again, oldest first, each with a new 24-hour cycle of attempts.</p>
        <div class="field">
          <label for="recover-since">Since (UTC)</label>
          <input id="recover-since" name="since" type="datetime-local" step={1} required />
        </div>
        <div class="field">
          <label for="recover-until">Until (UTC, optional)</label>
          <input id="recover-until" name="until" type="datetime-local" step={1} />
        </div>
        {action.problem ? <ProblemBox problem={action.problem} context="Recover failed" /> : null}
      </ConfirmDialog>
    </Layout>
  );
}

/** A delivery's attempts, oldest first, read when the row is opened. */
function AttemptsRow({ subscriptionId, delivery }: { subscriptionId: string; delivery: Delivery; action: Action }): JSX.Element {
  const resource = useResource<DeliveryWithAttempts>(() => api<DeliveryWithAttempts>('GET', `/v2/webhooks/${encodeURIComponent(subscriptionId)}/deliveries/${encodeURIComponent(delivery.id)}`), [delivery.id, delivery.attempts, delivery.status]);
  const history = resource.data?.attempt_history;
  return (
    <tr class="detail-row" id={`delivery-${delivery.id}`}>
      <td colSpan={7}>
        {resource.problem ? <ProblemBox problem={resource.problem} context="The attempts could not be loaded" /> : null}
        {history && history.length === 0 ? <p class="muted">No attempt yet.</p> : null}
        {history && history.length > 0 ? (
          <div class="inner-wrap">
            <p class="inner-title" aria-hidden="true">
              Attempts of <span class="mono small">{delivery.id}</span>
            </p>
            <table class="inner">
              <caption class="visually-hidden">Attempts of {delivery.id}</caption>
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Answer</th>
                  <th scope="col">Took</th>
                  <th scope="col">Error</th>
                  <th scope="col">Body (first 1 KiB)</th>
                </tr>
              </thead>
              <tbody>
                {history.map((a) => (
                  <tr key={a.id}>
                    <td>{utc(a.attempted_at)}</td>
                    <td>{a.response_status ? <code>HTTP {a.response_status}</code> : '—'}</td>
                    <td>{duration(a.duration_ms)}</td>
                    <td>{a.error ? <span class="error-text">{a.error}</span> : null}</td>
                    <td>{a.response_body ? <pre class="json small">{a.response_body}</pre> : null}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : null}
        {!history && !resource.problem ? <p class="muted">Loading attempts…</p> : null}
      </td>
    </tr>
  );
}

import type { JSX } from 'preact';
import { api, type Page } from '../api.js';
import { Badge } from '../components/badge.js';
import { DataTable } from '../components/data-table.js';
import { EmptyState } from '../components/empty-state.js';
import { Layout, type Shell } from '../components/layout.js';
import { Pager } from '../components/pager.js';
import { ProblemBox } from '../components/problem-box.js';
import type { WebhookSubscription } from '../records.js';
import { href, Link, type Location } from '../router.js';
import { useResource } from '../use-resource.js';

/** The webhook subscriptions of the workspace, each a link to its deliveries. */
export function WebhooksView({ location, shell }: { location: Location; shell: Shell }): JSX.Element {
  const cursor = location.query.get('cursor') ?? '';
  const resource = useResource<Page<WebhookSubscription>>(() => api<Page<WebhookSubscription>>('GET', '/v2/webhooks', { query: { limit: 50, cursor } }), [cursor], 30_000);
  const subscriptions = resource.data?.data;
  return (
    <Layout {...shell} title="Webhooks">
      {resource.problem ? <ProblemBox problem={resource.problem} context="The subscriptions could not be loaded" /> : null}
      {subscriptions && subscriptions.length === 0 ? (
        <EmptyState title="No webhook subscriptions yet.">
          <p>
            Subscribe a URL to platform events (<code>pipeline.failed</code>, <code>connector.error</code>, …) with <code>POST /v2/webhooks</code>; its deliveries show up here.
          </p>
        </EmptyState>
      ) : (
        <DataTable
          caption="Webhook subscriptions"
          columns={['URL', 'Events', 'Status', 'Description']}
          busy={resource.loading}
          rows={subscriptions
            ? subscriptions.map((s) => (
                <tr key={s.id}>
                  <th scope="row">
                    <Link to={href(`/webhooks/${encodeURIComponent(s.id)}`)} class="break">
                      {s.url}
                    </Link>
                    <div class="muted mono">{s.id}</div>
                  </th>
                  <td>{s.events.map((e) => <code key={e} class="tag">{e}</code>)}</td>
                  <td>
                    {s.enabled ? <Badge value="enabled" /> : <Badge value="disabled" />}
                    {s.disabled_reason ? <div class="error-text">{s.disabled_reason.replace(/_/g, ' ')}</div> : null}
                  </td>
                  <td>{s.description ?? ''}</td>
                </tr>
              )) : undefined}
        />
      )}
      {resource.data ? <Pager first={href('/webhooks')} next={resource.data.next_cursor ? href('/webhooks', { cursor: resource.data.next_cursor }) : null} onFirstPage={!cursor} /> : null}
    </Layout>
  );
}

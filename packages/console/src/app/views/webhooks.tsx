import type { JSX } from 'preact';
import { api, type Page } from '../api.js';
import { Badge } from '../components/badge.js';
import { DataTable } from '../components/data-table.js';
import { EmptyState } from '../components/empty-state.js';
import { ListBar } from '../components/freshness.js';
import { Layout, type Shell } from '../components/layout.js';
import { Pager } from '../components/pager.js';
import { ProblemBox } from '../components/problem-box.js';
import { Chip, WrappingUrl } from '../components/text.js';
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
      <ListBar updatedAt={resource.updatedAt} reading={resource.reading} onRefresh={resource.reload} label="subscriptions" />
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
                    <Link to={href(`/webhooks/${encodeURIComponent(s.id)}`)}>
                      <WrappingUrl url={s.url} />
                    </Link>
                    <div class="muted mono small">{s.id}</div>
                  </th>
                  <td data-label="Events">
                    <div class="chips">
                      {s.events.map((e) => (
                        <Chip key={e} text={e} />
                      ))}
                    </div>
                  </td>
                  <td data-label="Status">
                    {s.enabled ? <Badge value="enabled" /> : <Badge value="disabled" />}
                    {s.disabled_reason ? <div class="error-text">{s.disabled_reason.replace(/_/g, ' ')}</div> : null}
                  </td>
                  <td data-label="Description">{s.description ?? ''}</td>
                </tr>
              )) : undefined}
        />
      )}
      {resource.data ? <Pager cursor={cursor} next={resource.data.has_more ? resource.data.next_cursor : null} to={(c) => href('/webhooks', { cursor: c })} order="asc" /> : null}
    </Layout>
  );
}

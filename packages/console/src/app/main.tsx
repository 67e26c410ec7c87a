import 'uplot/dist/uPlot.min.css';
import './style.css';
import type { JSX } from 'preact';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { onUnauthenticated } from './api.js';
import { EmptyState } from './components/empty-state.js';
import { Layout, type Shell } from './components/layout.js';
import { href, Link, match, navigate, useLocation } from './router.js';
import { forgetApiKey, storedApiKey } from './session.js';
import { ConnectorsView } from './views/connectors.js';
import { EventView } from './views/event.js';
import { PipelineView } from './views/pipeline.js';
import { PipelinesView } from './views/pipelines.js';
import { SignIn } from './views/sign-in.js';
import { WebhookView } from './views/webhook.js';
import { WebhooksView } from './views/webhooks.js';

/**
 * The console: sign-in until this tab holds an API key, then the view the URL names. A 401
 * from any call (a key revoked meanwhile) forgets the key and asks for one again, on the same
 * URL, so the user lands back where they were.
 */
function App(): JSX.Element {
  const location = useLocation();
  const [signedIn, setSignedIn] = useState(() => storedApiKey() !== null);
  const [reason, setReason] = useState<string | undefined>();

  useEffect(
    () =>
      onUnauthenticated(() => {
        forgetApiKey();
        setReason('The API no longer accepts the key of this tab (revoked or expired): sign in again.');
        setSignedIn(false);
      }),
    [],
  );
  useEffect(() => {
    if (location.path === '/' || location.path === '') navigate(href('/pipelines'), { replace: true });
  }, [location.path]);

  if (!signedIn) {
    document.title = 'Sign in · Ferry Console';
    return <SignIn reason={reason} onSignedIn={() => (setReason(undefined), setSignedIn(true))} />;
  }
  const shell: Shell = {
    path: location.path,
    onSignOut: () => {
      forgetApiKey();
      setReason(undefined);
      setSignedIn(false);
    },
  };
  const path = location.path;
  let params: Record<string, string> | null;
  if (match('/pipelines', path)) return <PipelinesView location={location} shell={shell} />;
  if ((params = match('/pipelines/:id', path))) return <PipelineView key={params.id} id={params.id!} tab="events" location={location} shell={shell} />;
  if ((params = match('/pipelines/:id/runs', path))) return <PipelineView key={params.id} id={params.id!} tab="runs" location={location} shell={shell} />;
  if ((params = match('/pipelines/:id/backfills', path))) return <PipelineView key={params.id} id={params.id!} tab="backfills" location={location} shell={shell} />;
  if ((params = match('/events/:id', path))) return <EventView key={params.id} id={params.id!} shell={shell} />;
  if (match('/connectors', path)) return <ConnectorsView location={location} shell={shell} />;
  if (match('/webhooks', path)) return <WebhooksView location={location} shell={shell} />;
  if ((params = match('/webhooks/:id', path))) return <WebhookView key={params.id} id={params.id!} location={location} shell={shell} />;
  return (
    <Layout {...shell} title="Not found">
      <EmptyState title="No view at this address.">
        <p>
          Go to the <Link to={href('/pipelines')}>pipelines</Link>.
        </p>
      </EmptyState>
    </Layout>
  );
}

render(<App />, document.getElementById('app')!);

import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, problemOf, type Problem } from '../api.js';
import { ProblemBox } from '../components/problem-box.js';
import { storeApiKey } from '../session.js';

/**
 * Sign-in: the user pastes an API key, which is tried on the API before it is kept. A key the
 * API refuses shows the API's own problem (`unauthenticated`); a valid key without the
 * pipelines scope is kept, and each view then says which scope it lacks.
 */
export function SignIn({ onSignedIn, reason }: { onSignedIn: () => void; reason?: string }): JSX.Element {
  const [key, setKey] = useState('');
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<Problem | undefined>();
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setProblem(undefined);
    try {
      await api('GET', '/v2/pipelines', { query: { limit: 1 }, key: key.trim() });
      storeApiKey(key.trim());
      onSignedIn();
    } catch (error) {
      const p = problemOf(error);
      if (p.code === 'forbidden') {
        storeApiKey(key.trim());
        onSignedIn();
        return;
      }
      setProblem(p);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main id="main" class="sign-in">
      <h1>Ferry Console</h1>
      <p class="lead">Watch and repair pipelines, connectors and webhook deliveries.</p>
      {reason ? <p class="notice">{reason}</p> : null}
      <form onSubmit={submit} class="card">
        <label for="api-key">API key</label>
        <input id="api-key" name="api-key" type="password" autoComplete="off" spellcheck={false} required value={key} onInput={(e) => setKey(e.currentTarget.value)} aria-describedby="api-key-help" />
        <p id="api-key-help" class="help">
          Create one on the server with <code>ferry keys create --name console</code>, or <code>npm run -s ferry -- keys create --name console</code> from a clone of the
          repository; the key is the last line it prints. It is kept in this tab only and sent to this server's API alone.
        </p>
        <button type="submit" class="button button-primary" disabled={busy || key.trim() === ''}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      <div aria-live="polite">{problem ? <ProblemBox problem={problem} context="Sign-in failed" /> : null}</div>
    </main>
  );
}

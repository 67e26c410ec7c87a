import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError } from '../api.js';
import type { Delivery } from '../records.js';
import { href, Link, navigate, takeFocusRequest } from '../router.js';

const SECTIONS = [
  { path: '/pipelines', label: 'Pipelines' },
  { path: '/connectors', label: 'Connectors' },
  { path: '/webhooks', label: 'Webhooks' },
];

/** The ids the search box opens, by prefix (the API's id prefixes), and where. */
const FINDABLE: Array<{ prefix: string; path: (id: string) => string }> = [
  { prefix: 'evt_', path: (id) => `/events/${encodeURIComponent(id)}` },
  { prefix: 'pip_', path: (id) => `/pipelines/${encodeURIComponent(id)}` },
  { prefix: 'whk_', path: (id) => `/webhooks/${encodeURIComponent(id)}` },
];

/**
 * The header's search box: an event's id opens the event (`GET /v2/events/{id}`, whatever its
 * pipeline), a pipeline's or a subscription's its page, and a delivery's id its subscription's
 * deliveries (`GET /v2/deliveries/{id}` says which). Anything else is answered in words.
 */
function FindById({ onHint }: { onHint: (hint: string | undefined) => void }): JSX.Element {
  const [value, setValue] = useState('');
  const submit = (event: Event) => {
    event.preventDefault();
    const id = value.trim();
    const found = FINDABLE.find((f) => id.startsWith(f.prefix) && id.length > f.prefix.length);
    if (found) {
      onHint(undefined);
      setValue('');
      navigate(href(found.path(id)));
    } else if (id.startsWith('dlv_') && id.length > 4) {
      api<Delivery>('GET', `/v2/deliveries/${encodeURIComponent(id)}`).then(
        (delivery) => {
          onHint(undefined);
          setValue('');
          navigate(href(`/webhooks/${encodeURIComponent(delivery.subscription_id)}`));
        },
        (error: unknown) => onHint(error instanceof ApiError && error.problem.code === 'not_found' ? `No delivery of this workspace has the id ${id}.` : `The delivery could not be read: ${error instanceof Error ? error.message : String(error)}`),
      );
    } else {
      onHint('Find takes the id of an event (evt_…), a pipeline (pip_…), a webhook subscription (whk_…) or a delivery (dlv_…).');
    }
  };
  return (
    <form class="find" role="search" onSubmit={submit}>
      <label for="find-id" class="visually-hidden">
        Find an event by id
      </label>
      <input id="find-id" type="search" placeholder="evt_… id" autoComplete="off" spellcheck={false} value={value} onInput={(e) => setValue(e.currentTarget.value)} />
      <button type="submit" class="button">
        Find
      </button>
    </form>
  );
}

/** What every signed-in view passes on to its {@link Layout}: where it is, and how to sign out. */
export interface Shell {
  path: string;
  onSignOut: () => void;
}

/**
 * The frame of every signed-in view: a skip link, the navigation (the current section marked
 * with `aria-current`), sign-out, and the view's heading, which takes focus when the view
 * changes so keyboard and screen-reader users start at the top of what they opened. `title`
 * names the tab; `heading`, when given, is the same words marked up (where they may wrap).
 */
export function Layout(props: Shell & { title: string; heading?: ComponentChildren; actions?: ComponentChildren; children: ComponentChildren }): JSX.Element {
  const heading = useRef<HTMLHeadingElement>(null);
  const [hint, setHint] = useState<string | undefined>();
  useEffect(() => setHint(undefined), [props.path]);
  useEffect(() => {
    // Titles stay in the browser's history: views never put a URL or a secret in them.
    document.title = `${props.title} · Ferry Console`;
  }, [props.title]);
  useEffect(() => {
    // Not on the first load: focus then stays where the browser put it.
    if (takeFocusRequest()) heading.current?.focus();
  }, [props.path]);
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <Link to={href('/pipelines')} class="brand">
          Ferry Console
        </Link>
        <nav aria-label="Sections">
          <ul class="sections">
            {SECTIONS.map((s) => (
              <li key={s.path}>
                <Link to={href(s.path)} aria-current={props.path.startsWith(s.path) ? 'page' : undefined}>
                  {s.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <FindById onHint={setHint} />
        <button type="button" class="button button-quiet sign-out" onClick={props.onSignOut}>
          Sign out
        </button>
      </header>
      <main id="main">
        <div class="outcome" aria-live="polite">
          {hint ? <p class="notice">{hint}</p> : null}
        </div>
        <div class="view-head">
          <h1 ref={heading} tabIndex={-1}>
            {props.heading ?? props.title}
          </h1>
          {props.actions ? <div class="view-actions">{props.actions}</div> : null}
        </div>
        {props.children}
      </main>
    </>
  );
}

import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import { href, Link, takeFocusRequest } from '../router.js';

const SECTIONS = [
  { path: '/pipelines', label: 'Pipelines' },
  { path: '/connectors', label: 'Connectors' },
  { path: '/webhooks', label: 'Webhooks' },
];

/** What every signed-in view passes on to its {@link Layout}: where it is, and how to sign out. */
export interface Shell {
  path: string;
  onSignOut: () => void;
}

/**
 * The frame of every signed-in view: a skip link, the navigation (the current section marked
 * with `aria-current`), sign-out, and the view's heading, which takes focus when the view
 * changes so keyboard and screen-reader users start at the top of what they opened.
 */
export function Layout(props: Shell & { title: string; actions?: ComponentChildren; children: ComponentChildren }): JSX.Element {
  const heading = useRef<HTMLHeadingElement>(null);
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
        <button type="button" class="button button-quiet" onClick={props.onSignOut}>
          Sign out
        </button>
      </header>
      <main id="main">
        <div class="view-head">
          <h1 ref={heading} tabIndex={-1}>
            {props.title}
          </h1>
          {props.actions ? <div class="view-actions">{props.actions}</div> : null}
        </div>
        {props.children}
      </main>
    </>
  );
}

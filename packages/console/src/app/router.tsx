import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { CONSOLE_BASE } from './config.js';

/**
 * The console's routing: every view is a URL under the mount point (`/console/pipelines/pip_1`),
 * its filters and page in the query string, so a link opens the same view for whoever follows
 * it. The History API moves between views without reloading; the server answers the page for
 * every such URL.
 */

/** Where the browser is, relative to the mount point. */
export interface Location {
  /** `/pipelines/pip_1`; `/` at the mount point. */
  path: string;
  query: URLSearchParams;
}

const listeners = new Set<() => void>();

/** Set by a move between views, taken by the next view's heading (see {@link takeFocusRequest}). */
let focusRequested = false;

/**
 * Whether the view just shown was reached by a move inside the console (a link, the back
 * button), which moves focus to its heading: the link that was clicked is gone with the old view.
 */
export function takeFocusRequest(): boolean {
  const requested = focusRequested;
  focusRequested = false;
  return requested;
}

function current(): Location {
  const { pathname, search } = window.location;
  const path = pathname.startsWith(CONSOLE_BASE) ? pathname.slice(CONSOLE_BASE.length) : pathname;
  return { path: path === '' ? '/' : path, query: new URLSearchParams(search) };
}

window.addEventListener('popstate', () => {
  focusRequested = true;
  listeners.forEach((l) => l());
});

/** The full URL of a view: `href('/pipelines', { state: 'active' })`. */
export function href(path: string, query: Record<string, string | undefined | null> = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') params.set(k, v);
  const search = params.toString();
  return `${CONSOLE_BASE}${path}${search ? `?${search}` : ''}`;
}

/** Goes to a view (a URL from {@link href}); `replace` keeps the history entry. */
export function navigate(url: string, options: { replace?: boolean } = {}): void {
  if (options.replace) history.replaceState(null, '', url);
  else {
    history.pushState(null, '', url);
    focusRequested = true;
  }
  listeners.forEach((l) => l());
}

/** The current {@link Location}, re-rendering on every move. */
export function useLocation(): Location {
  const [location, setLocation] = useState(current);
  useEffect(() => {
    const update = () => setLocation(current());
    listeners.add(update);
    return () => void listeners.delete(update);
  }, []);
  return location;
}

/** Matches `path` against a pattern such as `/pipelines/:id`; the parameters, or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const want = pattern.split('/');
  const got = path.replace(/\/+$/, '').split('/');
  if (want.length !== got.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i] as string;
    const g = got[i] as string;
    if (w.startsWith(':')) {
      if (g === '') return null;
      try {
        params[w.slice(1)] = decodeURIComponent(g);
      } catch {
        return null;
      }
    } else if (w !== g) return null;
  }
  return params;
}

/**
 * A link to a view: a real `<a href>` (open in a new tab, copy the address), followed in place
 * on a plain click.
 */
export function Link(props: { to: string; children: ComponentChildren; class?: string; rel?: string; 'aria-current'?: 'page' | 'true' | undefined; 'aria-label'?: string }): JSX.Element {
  const { to, children, ...rest } = props;
  const onClick = (event: MouseEvent) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(to);
  };
  return (
    <a {...rest} href={to} onClick={onClick}>
      {children}
    </a>
  );
}

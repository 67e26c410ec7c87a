import type { JSX } from 'preact';
import { useEffect } from 'preact/hooks';
import { Link } from '../router.js';

/**
 * The way back through a listing. The API's cursors only go one way (`next_cursor`), so the page
 * remembers, for each cursor it was given, the cursor of the page that gave it and that page's
 * number: a page reached by Older (or Next) knows its way back, after a reload too. Kept in the
 * tab's sessionStorage with the key; cursors hold positions, never data, and last 72 hours.
 */
const TRAIL_KEY = 'ferry.console.cursor-trail';
const TRAIL_SIZE = 200;

interface Step {
  /** The cursor of the page before (`''` for the first page). */
  previous: string;
  /** The number of the page this cursor opens, 2 or more; unknown past a page opened from a link. */
  page: number | null;
}

function trail(): Array<[string, Step]> {
  try {
    const stored = JSON.parse(sessionStorage.getItem(TRAIL_KEY) ?? '[]') as unknown;
    return Array.isArray(stored) ? (stored as Array<[string, Step]>) : [];
  } catch {
    return [];
  }
}

function stepOf(cursor: string): Step | undefined {
  return trail().find(([c]) => c === cursor)?.[1];
}

function remember(next: string, step: Step): void {
  const kept = trail().filter(([c]) => c !== next);
  kept.push([next, step]);
  try {
    sessionStorage.setItem(TRAIL_KEY, JSON.stringify(kept.slice(-TRAIL_SIZE)));
  } catch {
    // A full or refused storage: the pager still offers the first page.
  }
}

/**
 * Cursor paging: back to the page before, on to the next one, with the cursor in the URL so a
 * page can be linked. `order` names the buttons: a listing newest first goes Newer and Older,
 * one oldest first Previous and Next. A page opened from a link, whose way back this tab never
 * saw, offers the first page instead of the one before. A listing of one page shows none.
 */
export function Pager({ cursor, next, to, order }: { cursor: string; next: string | null; to: (cursor: string) => string; order: 'asc' | 'desc' }): JSX.Element | null {
  const step = cursor ? stepOf(cursor) : undefined;
  const page = cursor ? (step?.page ?? null) : 1;
  useEffect(() => {
    if (next) remember(next, { previous: cursor, page: page === null ? null : page + 1 });
  }, [next, cursor, page]);
  const [back, forward, first] = order === 'desc' ? ['Newer', 'Older', 'Newest'] : ['Previous', 'Next', 'First page'];
  // A listing that fits one page has nowhere to go.
  if (!cursor && !next) return null;
  return (
    <nav class="pager" aria-label="Pages">
      {!cursor ? (
        <button type="button" class="button" disabled>
          <span aria-hidden="true">← </span>
          {back}
        </button>
      ) : step ? (
        <Link to={to(step.previous)} class="button" rel="prev">
          <span aria-hidden="true">← </span>
          {back}
        </Link>
      ) : (
        <Link to={to('')} class="button">
          <span aria-hidden="true">← </span>
          {first}
        </Link>
      )}
      <span class="pager-page muted">{page === null ? '' : `Page ${page}`}</span>
      {next ? (
        <Link to={to(next)} class="button" rel="next">
          {forward}
          <span aria-hidden="true"> →</span>
        </Link>
      ) : (
        <button type="button" class="button" disabled>
          {forward}
          <span aria-hidden="true"> →</span>
        </button>
      )}
    </nav>
  );
}

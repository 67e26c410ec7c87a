import type { JSX } from 'preact';
import { Link } from '../router.js';

/**
 * Cursor paging: the first page, and the next one when there is more. The cursor is in the URL,
 * so a page can be linked; the API's cursors last 72 hours.
 */
export function Pager({ first, next, onFirstPage }: { first: string; next: string | null; onFirstPage: boolean }): JSX.Element {
  return (
    <nav class="pager" aria-label="Pages">
      {onFirstPage ? <span class="pager-current">First page</span> : <Link to={first}>First page</Link>}
      {next ? (
        <Link to={next} rel="next">
          Next page
        </Link>
      ) : (
        <span class="pager-end">No more</span>
      )}
    </nav>
  );
}

import type { ComponentChildren, JSX } from 'preact';
import { timeOfDay } from '../format.js';

/**
 * The bar above a listing: what the view offers on the left (filters, bulk actions), and on the
 * right when its data was read and a button to read it again now, besides the view's own
 * polling. The line holds its place while a read runs (the time only dims), so nothing moves
 * when it ends.
 */
export function ListBar({ updatedAt, reading, onRefresh, label, children }: { updatedAt: number | undefined; reading: boolean; onRefresh: () => void; label: string; children?: ComponentChildren }): JSX.Element {
  return (
    <div class="list-bar">
      <div class="list-bar-start">{children}</div>
      <div class="freshness">
        <span class={reading ? 'muted small reading' : 'muted small'}>{updatedAt === undefined ? 'Reading…' : `Updated at ${timeOfDay(updatedAt)}`}</span>
        <button type="button" class="button" aria-busy={reading} aria-label={`Refresh the ${label}`} onClick={onRefresh}>
          Refresh
        </button>
      </div>
    </div>
  );
}

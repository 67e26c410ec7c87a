import type { ComponentChildren, JSX } from 'preact';

/** What a list shows when it has nothing yet: what it is for, and what to do. */
export function EmptyState({ title, children }: { title: string; children: ComponentChildren }): JSX.Element {
  return (
    <div class="empty">
      <p class="empty-title">{title}</p>
      <div class="empty-body">{children}</div>
    </div>
  );
}

import type { ComponentChildren, JSX } from 'preact';

/** A column heading; `hidden` ones are read out but not shown (a column of buttons). */
export type Column = string | { label: string; hidden: true };

/**
 * A view's table: in its own scrolling box (a wide table never widens the page), captioned for
 * screen readers, with its headings. On a narrow screen its rows become cards (style.css): a
 * view gives each cell the name of its column in `data-label`, shown beside the value, and the
 * row's heading cell (`<th scope="row">`) none. `rows` undefined means loading: three
 * placeholder rows of the height of real ones hold the place, so nothing moves when the data
 * arrives.
 */
export function DataTable({ caption, columns, busy, rows }: { caption: string; columns: Column[]; busy: boolean; rows: ComponentChildren | undefined }): JSX.Element {
  return (
    <div class="table-wrap" aria-busy={busy}>
      <table class="data-table">
        <caption class="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            {columns.map((c) =>
              typeof c === 'string' ? (
                <th scope="col" key={c}>
                  {c}
                </th>
              ) : (
                <th scope="col" key={c.label}>
                  <span class="visually-hidden">{c.label}</span>
                </th>
              ),
            )}
          </tr>
        </thead>
        <tbody>
          {rows ??
            [0, 1, 2].map((i) => (
              <tr key={i} class="placeholder-row">
                <td colSpan={columns.length}>Loading…</td>
              </tr>
            ))}
        </tbody>
      </table>
    </div>
  );
}

import type { JSX } from 'preact';
import { utc } from '../format.js';

/**
 * A short token on one line (an event type, a platform event name): never broken, cut with an
 * ellipsis when it does not fit, whole in its tooltip.
 */
export function Chip({ text }: { text: string }): JSX.Element {
  return (
    <code class="chip" title={text}>
      {text}
    </code>
  );
}

/** Where a URL or a dotted name may wrap: after these characters, or before a query and a fragment. */
const AFTER = new Set(['/', '.', '&', '=', '-', '_', ':', ',', ';', '~']);
const BEFORE = new Set(['?', '#']);

/**
 * Text that wraps at its separators (after a `/`, a `.`, a `_`, before a `?`), never inside a
 * word nor between the two slashes of `https://`: `<wbr>`s where it may break. A part longer
 * than its line still breaks, as the last resort, rather than widening the page.
 */
export function Wrapping({ text, class: className }: { text: string; class: string }): JSX.Element {
  const parts: Array<string | JSX.Element> = [];
  let run = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    const next = text[i + 1];
    if (BEFORE.has(c) && run !== '') {
      parts.push(run, <wbr key={i} />);
      run = '';
    }
    run += c;
    if (AFTER.has(c) && next !== undefined && next !== c && !AFTER.has(next)) {
      parts.push(run, <wbr key={`${i}+`} />);
      run = '';
    }
  }
  if (run !== '') parts.push(run);
  return <span class={className}>{parts}</span>;
}

/** A URL, wrapping at its separators (see {@link Wrapping}). */
export function WrappingUrl({ url }: { url: string }): JSX.Element {
  return <Wrapping text={url} class="url" />;
}

/** A time in running text, `2026-11-26 19:04:05 UTC`, kept on one line. */
export function Time({ iso }: { iso: string }): JSX.Element {
  return (
    <time class="nowrap" dateTime={iso}>
      {utc(iso)}
    </time>
  );
}

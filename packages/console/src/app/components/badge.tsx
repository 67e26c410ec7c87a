import type { JSX } from 'preact';

const TONES: Record<string, string> = {
  active: 'good', healthy: 'good', delivered: 'good', succeeded: 'good', enabled: 'good',
  running: 'info', queued: 'info', replaying: 'info', pending: 'info', streaming: 'info',
  paused: 'warn', degraded: 'warn', retrying: 'warn', draft: 'muted', filtered: 'muted', deleting: 'muted', recovered: 'muted',
  down: 'bad', failed: 'bad', dead_lettered: 'bad', disabled: 'bad', held: 'bad',
};

/** A status word with its colour; the word itself carries the meaning, the colour only repeats it. */
export function Badge({ value, label }: { value: string; label?: string }): JSX.Element {
  return <span class={`badge badge-${TONES[value] ?? 'muted'}`}>{label ?? value.replace(/_/g, ' ')}</span>;
}

import type { JSX } from 'preact';
import { count } from '../format.js';
import type { Pipeline } from '../records.js';
import { Time } from './text.js';

/**
 * What a held pipeline waits on, at the top of its page: its flow retries a batch that a source,
 * destination or storage keeps failing, and nothing moves on until it succeeds. Said in words;
 * the next attempt is when the engine will try again, not a promise that it will work.
 */
export function HeldNotice({ held }: { held: NonNullable<Pipeline['held']> }): JSX.Element {
  const waiting = held.events_waiting === 1 ? '1 event waits' : `${count(held.events_waiting)} events wait`;
  const attempts = held.attempts === 1 ? '1 failed attempt' : `${count(held.attempts)} failed attempts`;
  return (
    <div class="notice notice-held" role="status" aria-label="Held">
      <p>
        <strong>Held since <Time iso={held.since} /></strong>: {held.events_waiting > 0 ? waiting : 'the source cannot be read'}; {attempts}, the last{' '}
        <code>{held.error.code}</code>.
      </p>
      <p class="error-text">{held.error.message}</p>
      <p class="muted">Next attempt <Time iso={held.next_attempt_at} />. A change to the pipeline or its connectors is tried at once.</p>
    </div>
  );
}

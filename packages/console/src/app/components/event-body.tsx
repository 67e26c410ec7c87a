import type { JSX } from 'preact';
import type { EventRecord } from '../records.js';
import type { Action } from '../use-action.js';
import { Time } from './text.js';

/**
 * What an event holds beyond its row: its error (stage, code, message), its payload, and the
 * replay of a dead letter. Shown in the events listing under an opened row, and on the event's
 * own page.
 */
export function EventBody({ event, action, onReplay }: { event: EventRecord; action: Action; onReplay: () => void }): JSX.Element {
  return (
    <div class="detail">
      {event.error ? (
        <div class="detail-error">
          <h3>Error</h3>
          <p>
            Stage <code>{event.error.stage}</code>, code <code>{event.error.code}</code>
            {event.dead_lettered_at ? (
              <>
                , dead-lettered <Time iso={event.dead_lettered_at} />
              </>
            ) : null}
          </p>
          {event.error.message ? <p class="error-text">{event.error.message}</p> : null}
        </div>
      ) : null}
      <h3>Payload</h3>
      {event.payload === null ? (
        <p>Not kept: this pipeline keeps the payloads of failed events only.</p>
      ) : (
        <pre class="json" tabIndex={0} aria-label={`Payload of event ${event.id}`}>
          {JSON.stringify(event.payload, null, 2)}
        </pre>
      )}
      {event.status === 'dead_lettered' ? (
        <button type="button" class="button button-primary" disabled={action.busy} onClick={onReplay}>
          Replay this event
        </button>
      ) : null}
    </div>
  );
}

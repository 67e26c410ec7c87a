import type { DestinationEvent } from './types.js';

/** Where an event keeps its payload's JSON once made: the payload it was made of, and the text. */
const MADE_OF = Symbol('ferry.payloadJsonOf');
const TEXT = Symbol('ferry.payloadJson');

interface Made {
  [MADE_OF]?: unknown;
  [TEXT]?: string;
}

/**
 * An event's payload as JSON text (`JSON.stringify(event.payload)`), made once per event: a
 * destination that writes payloads as JSON (a jsonb column, an NDJSON line) asks for it here, and
 * the engine's event log uses the same text instead of serializing the payload a second time.
 * The text is kept on the event object, tied to its payload object: an event given a new payload
 * gets new text. Do not change a payload in place after asking.
 *
 * @example
 * ```ts
 * const lines = events.map((event) => payloadJson(event)).join('\n');
 * ```
 */
export function payloadJson(event: DestinationEvent): string {
  const made = event as DestinationEvent & Made;
  if (made[MADE_OF] === event.payload && made[TEXT] !== undefined) return made[TEXT];
  const text = JSON.stringify(event.payload);
  made[MADE_OF] = event.payload;
  made[TEXT] = text;
  return text;
}

/** The payload's JSON text if {@link payloadJson} made it for this event and this payload; never makes it. */
export function madePayloadJson(event: Pick<DestinationEvent, 'payload'>): string | undefined {
  const made = event as DestinationEvent & Made;
  return made[MADE_OF] === event.payload ? made[TEXT] : undefined;
}

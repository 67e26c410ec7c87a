/**
 * The event log: its listing, live feed, replay of dead letters, event ids, and the signed inbox
 * of webhook sources.
 */
export { commitReplay, deadLetteredNotice, deadLetterRow, recordResults, replayItem, requestReplay } from './dead-letters.js';
export { deriveEventId } from './event-id.js';
export { type DeadLettered, type ItemResult, type WorkItem } from './event-outcome.js';
export { eventRows, type PayloadsKept } from './event-rows.js';
export { EventLogFeed, eventsStream, type EventsStreamOptions } from './event-log-feed.js';
export { EventsService } from './events-service.js';
export { IngestService, MAX_INGEST_EVENTS, type IngestResult } from './ingest-service.js';

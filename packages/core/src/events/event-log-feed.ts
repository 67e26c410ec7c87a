import { Observable, Subject } from 'rxjs';
import type { EventRecord, ListEventsParams, Page } from '../common/index.js';
import type { ItemResult } from '../pipelines/index.js';
import { eventRows } from './event-rows.js';
import { presentEvent } from './events-service.js';

/** Event-log entries one commit of this engine recorded, for one pipeline. */
export interface CommittedEvents {
  workspaceId: string;
  pipelineId: string;
  records: readonly EventRecord[];
}

/**
 * The event-log entries this engine commits (new events, and replayed ones with their new
 * outcome), published after each commit. Nothing is built while nobody listens: the runtime
 * calls {@link publish} on every batch, and it returns at once then.
 */
export class EventLogFeed {
  private readonly committed = new Subject<CommittedEvents>();

  /** Every commit's entries, as they are committed. */
  readonly committed$: Observable<CommittedEvents> = this.committed.asObservable();

  /** Publishes a committed batch's outcomes (`now` is the commit's time). */
  publish(workspaceId: string, pipelineId: string, results: readonly ItemResult[], now: string): void {
    if (!this.committed.observed || results.length === 0) return;
    const records = eventRows(workspaceId, pipelineId, results, now).map(presentEvent);
    this.committed.next({ workspaceId, pipelineId, records });
  }
}

/** Options of `engine.events$`: only events that occurred at or after `since`, or of one `type`. */
export type EventsStreamOptions = Pick<ListEventsParams, 'since' | 'type'>;

/** Events per page while the log is replayed. */
const REPLAY_PAGE = 100;

/**
 * A pipeline's event log as a stream: every recorded event in the listing's order (`occurred_at`,
 * then id), then, live, each event as this engine records it (a new one, or a replayed one with
 * its new outcome). The live part listens from the start, so nothing committed during the
 * replay is missed; an event both read and heard during it comes once, as read. Errors of the
 * listing (`not_found`, `unavailable`, an invalid `since`) end the stream with that error.
 */
export function eventsStream(
  list: (params: ListEventsParams) => Promise<Page<EventRecord>>,
  feed: EventLogFeed,
  workspaceId: string,
  pipelineId: string,
  options: EventsStreamOptions = {},
): Observable<EventRecord> {
  return new Observable<EventRecord>((subscriber) => {
    const since = options.since === undefined ? undefined : Date.parse(options.since);
    const wanted = (r: EventRecord) => (options.type === undefined || r.type === options.type) && (since === undefined || Date.parse(r.occurred_at) >= since);
    // Heard while replaying: emitted after the replay unless the replay read them.
    let heard: Map<string, EventRecord> | undefined = new Map();
    const live = feed.committed$.subscribe((batch) => {
      if (batch.workspaceId !== workspaceId || batch.pipelineId !== pipelineId) return;
      for (const record of batch.records) {
        if (!wanted(record)) continue;
        if (heard) heard.set(record.id, record);
        else subscriber.next(record);
      }
    });
    void (async () => {
      let cursor: string | undefined;
      for (;;) {
        const page = await list({ limit: REPLAY_PAGE, since: options.since, type: options.type, ...(cursor === undefined ? {} : { cursor }) });
        for (const record of page.data) {
          if (subscriber.closed) return;
          // The latest word on an event heard meanwhile is the one heard, which comes after.
          if (heard!.has(record.id)) continue;
          subscriber.next(record);
        }
        if (!page.has_more || page.next_cursor === null) break;
        cursor = page.next_cursor;
      }
      const meanwhile = heard!;
      heard = undefined;
      for (const record of meanwhile.values()) subscriber.next(record);
    })().catch((error: unknown) => subscriber.error(error));
    return () => live.unsubscribe();
  });
}

import { Observable, Subject } from 'rxjs';
import type { EventRecord, ListEventsParams, Page } from '../common/index.js';
import type { EventLogRecorder } from '../context/index.js';
import type { ItemResult } from './event-outcome.js';
import { eventRows, type PayloadsKept } from './event-rows.js';
import { presentEvent } from './events-service.js';

/** A commit of event-log entries for one pipeline, from its start until it commits or fails. */
interface LogCommit {
  readonly workspaceId: string;
  readonly pipelineId: string;
  readonly results: readonly ItemResult[];
}

/** What the feed tells a stream: a commit began, ended without committing, or committed these entries. */
type FeedChange =
  | { readonly kind: 'begun' | 'abandoned'; readonly commit: LogCommit }
  | { readonly kind: 'committed'; readonly commit: LogCommit; readonly records: readonly EventRecord[] };

/**
 * The event-log entries this engine commits (new events, and replayed ones with their new
 * outcome), told to the streams of {@link eventsStream}. A stream replaying the log must also
 * know the commits in flight: a commit's rows can be read before its outcome is published
 * (a SQLite writer thread commits, and a read on the engine's connection sees the rows before
 * the event loop hears back), and without that an event would come twice, once read and once
 * heard. Nothing is built while nobody listens but the set of commits in flight.
 */
export class EventLogFeed implements EventLogRecorder {
  private readonly changes = new Subject<FeedChange>();
  private readonly inFlight = new Set<LogCommit>();

  /** @internal Every change, as it happens. */
  readonly changes$: Observable<FeedChange> = this.changes.asObservable();

  /** @internal The commits in flight now, for a stream that starts meanwhile. */
  commitsInFlight(): Iterable<LogCommit> {
    return this.inFlight;
  }

  /**
   * Runs `commit`, which commits `results` in the event log, and publishes their entries once it
   * has (`now` is the commit's time; `payloads` what the pipeline's log keeps of them, see
   * `eventRows`). A failed commit is told too, and its error rethrown.
   */
  async record(workspaceId: string, pipelineId: string, results: readonly ItemResult[], now: string, commit: () => Promise<void>, payloads: PayloadsKept = 'all'): Promise<void> {
    if (results.length === 0) return commit();
    const entry: LogCommit = { workspaceId, pipelineId, results };
    this.inFlight.add(entry);
    if (this.changes.observed) this.changes.next({ kind: 'begun', commit: entry });
    try {
      await commit();
    } catch (error) {
      this.inFlight.delete(entry);
      if (this.changes.observed) this.changes.next({ kind: 'abandoned', commit: entry });
      throw error;
    }
    this.inFlight.delete(entry);
    if (!this.changes.observed) return;
    const records = eventRows(workspaceId, pipelineId, results, now, payloads).map(presentEvent);
    this.changes.next({ kind: 'committed', commit: entry, records });
  }
}

/** Options of `engine.events$`: only events that occurred at or after `since`, or of one `type`. */
export type EventsStreamOptions = Pick<ListEventsParams, 'since' | 'type'>;

/** Events per page while the log is replayed. */
const REPLAY_PAGE = 100;

/** A stream's state while it replays the log (see {@link eventsStream}). */
interface Replay {
  /** Ids of this pipeline's commits in flight, with how many touch each. */
  readonly pending: Map<string, number>;
  /** Entries read while a commit of theirs was in flight: the read may be that commit's or older. */
  readonly held: Map<string, EventRecord>;
  /** Entries heard: the latest word on each, emitted after the replay. */
  readonly heard: Map<string, EventRecord>;
  /** Whether every page was read. */
  read: boolean;
}

/**
 * A pipeline's event log as a stream: every recorded event in the listing's order (log order:
 * the order the pipeline recorded them), then, live, each event as this engine records it (a new one, or a replayed one with
 * its new outcome). The live part listens from the start, so nothing committed during the replay
 * is missed, and each event comes once, in its latest state:
 * - an entry heard before it is read is emitted as heard, after the replay;
 * - an entry read while a commit of it is in flight is held until that commit ends: replaced by
 *   what the commit wrote, or emitted as read if the commit failed. The replay ends once no read
 *   entry is held.
 * Errors of the listing (`not_found`, `unavailable`, an invalid `since`) end the stream with that error.
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
    const ours = (c: LogCommit) => c.workspaceId === workspaceId && c.pipelineId === pipelineId;
    let replay: Replay | undefined = { pending: new Map(), held: new Map(), heard: new Map(), read: false };

    const begin = (state: Replay, commit: LogCommit) => {
      for (const r of commit.results) state.pending.set(r.event.id, (state.pending.get(r.event.id) ?? 0) + 1);
    };
    const settle = (state: Replay, commit: LogCommit) => {
      for (const r of commit.results) {
        const left = (state.pending.get(r.event.id) ?? 1) - 1;
        if (left > 0) state.pending.set(r.event.id, left);
        else state.pending.delete(r.event.id);
      }
    };
    const finishIfDone = () => {
      if (!replay?.read || replay.held.size > 0) return;
      const heard = replay.heard;
      replay = undefined;
      for (const record of heard.values()) subscriber.next(record);
    };

    const live = feed.changes$.subscribe((change) => {
      if (!ours(change.commit)) return;
      if (!replay) {
        if (change.kind === 'committed') for (const record of change.records) if (wanted(record)) subscriber.next(record);
        return;
      }
      if (change.kind === 'begun') {
        begin(replay, change.commit);
        return;
      }
      settle(replay, change.commit);
      if (change.kind === 'committed') {
        for (const record of change.records) {
          replay.held.delete(record.id);
          if (wanted(record)) replay.heard.set(record.id, record);
        }
      } else {
        // Not committed: what was read is the latest word, unless another commit of it is in flight.
        for (const r of change.commit.results) {
          const held = replay.held.get(r.event.id);
          if (held === undefined || replay.pending.has(r.event.id)) continue;
          replay.held.delete(r.event.id);
          replay.heard.set(r.event.id, held);
        }
      }
      finishIfDone();
    });
    for (const commit of feed.commitsInFlight()) if (ours(commit)) begin(replay, commit);

    void (async () => {
      let cursor: string | undefined;
      for (;;) {
        const page = await list({ limit: REPLAY_PAGE, since: options.since, type: options.type, ...(cursor === undefined ? {} : { cursor }) });
        const state = replay!;
        for (const record of page.data) {
          if (subscriber.closed) return;
          if (state.heard.has(record.id)) continue;
          if (state.pending.has(record.id)) state.held.set(record.id, record);
          else subscriber.next(record);
        }
        if (!page.has_more || page.next_cursor === null) break;
        cursor = page.next_cursor;
      }
      replay!.read = true;
      finishIfDone();
    })().catch((error: unknown) => subscriber.error(error));
    return () => live.unsubscribe();
  });
}

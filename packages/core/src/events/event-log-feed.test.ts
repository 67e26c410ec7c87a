import { describe, expect, it } from 'vitest';
import type { EventRecord, ListEventsParams, Page } from '../common/index.js';
import type { ItemResult } from './event-outcome.js';
import { EventLogFeed, eventsStream } from './event-log-feed.js';
import { eventRows } from './event-rows.js';
import { presentEvent } from './events-service.js';

const WS = 'ws';
const PIPE = 'pip_1';
const NOW = '2026-01-01T00:00:00.000Z';

/** A promise and the function that resolves it. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

function result(id: string, status: 'delivered' | 'dead_lettered' = 'delivered'): ItemResult {
  const event = { id, type: 't', occurredAt: NOW, payload: { id } };
  return status === 'delivered' ? { status, event, attempts: 1 } : { status, event, attempts: 1, stage: 'destination', code: 'record_rejected', message: 'no' };
}

/** The listing's record of `r`, as the log stores it. */
function record(r: ItemResult): EventRecord {
  return presentEvent(eventRows(WS, PIPE, [r], NOW)[0]!);
}

/**
 * A log the stream reads through `list`, which waits for `readGate` when one is set: the test
 * decides whether a read comes before or after a commit's rows are visible.
 */
function fakeLog() {
  const rows = new Map<string, EventRecord>();
  const state: { readGate?: Promise<void> } = {};
  const list = async (_params: ListEventsParams): Promise<Page<EventRecord>> => {
    if (state.readGate) await state.readGate;
    return { data: [...rows.values()], has_more: false, next_cursor: null } as Page<EventRecord>;
  };
  return { rows, state, list };
}

describe('eventsStream', () => {
  it('emits an event once when its rows are read before its commit is published', async () => {
    const feed = new EventLogFeed();
    const log = fakeLog();
    log.rows.set('e1', record(result('e1')));
    const readGate = gate();
    log.state.readGate = readGate.promise;
    const seen: EventRecord[] = [];
    eventsStream(log.list, feed, WS, PIPE).subscribe((e) => seen.push(e));

    // The commit's rows become visible, the replay reads them, and only then is the commit heard.
    const committed = gate();
    const recording = feed.record(WS, PIPE, [result('e2')], NOW, async () => {
      log.rows.set('e2', record(result('e2')));
      await committed.promise;
    });
    readGate.open();
    await flush();
    expect(seen.map((e) => e.id)).toEqual(['e1']);
    committed.open();
    await recording;
    await flush();
    expect(seen.map((e) => e.id)).toEqual(['e1', 'e2']);

    // Live after the replay.
    await feed.record(WS, PIPE, [result('e3')], NOW, async () => {});
    expect(seen.map((e) => e.id)).toEqual(['e1', 'e2', 'e3']);
  });

  it('knows the commits in flight when it starts during one', async () => {
    const feed = new EventLogFeed();
    const log = fakeLog();
    const committed = gate();
    const recording = feed.record(WS, PIPE, [result('e1')], NOW, async () => {
      log.rows.set('e1', record(result('e1')));
      await committed.promise;
    });
    const seen: EventRecord[] = [];
    eventsStream(log.list, feed, WS, PIPE).subscribe((e) => seen.push(e));
    await flush();
    expect(seen).toEqual([]);
    committed.open();
    await recording;
    expect(seen.map((e) => e.id)).toEqual(['e1']);
  });

  it('emits what it read when the commit in flight fails, and the newest state when it commits', async () => {
    const feed = new EventLogFeed();
    const log = fakeLog();
    log.rows.set('dead', record(result('dead', 'dead_lettered')));
    log.rows.set('fixed', record(result('fixed', 'dead_lettered')));
    const failing = gate();
    const fixing = gate();
    const refused = feed.record(WS, PIPE, [result('dead')], NOW, () => failing.promise.then(() => Promise.reject(new Error('refused'))));
    const replayed = feed.record(WS, PIPE, [result('fixed')], NOW, () => fixing.promise);
    const seen: EventRecord[] = [];
    eventsStream(log.list, feed, WS, PIPE).subscribe((e) => seen.push(e));
    await flush();
    expect(seen).toEqual([]);
    failing.open();
    await expect(refused).rejects.toThrow('refused');
    expect(seen).toEqual([]);
    fixing.open();
    await replayed;
    expect(seen.map((e) => [e.id, e.status])).toEqual([
      ['dead', 'dead_lettered'],
      ['fixed', 'delivered'],
    ]);
  });

  it('emits an event heard before it is read once, as heard', async () => {
    const feed = new EventLogFeed();
    const log = fakeLog();
    const readGate = gate();
    log.state.readGate = readGate.promise;
    const seen: EventRecord[] = [];
    eventsStream(log.list, feed, WS, PIPE).subscribe((e) => seen.push(e));
    // The stored row differs from what was heard only to tell which one the stream emits.
    await feed.record(WS, PIPE, [result('e1')], NOW, async () => {
      log.rows.set('e1', record(result('e1', 'dead_lettered')));
    });
    readGate.open();
    await flush();
    expect(seen.map((e) => [e.id, e.status])).toEqual([['e1', 'delivered']]);
  });

  it('ignores other pipelines\u2019 commits', async () => {
    const feed = new EventLogFeed();
    const log = fakeLog();
    const seen: EventRecord[] = [];
    eventsStream(log.list, feed, WS, PIPE).subscribe((e) => seen.push(e));
    await flush();
    await feed.record(WS, 'pip_2', [result('other')], NOW, async () => {});
    await feed.record('ws_2', PIPE, [result('elsewhere')], NOW, async () => {});
    expect(seen).toEqual([]);
  });
});

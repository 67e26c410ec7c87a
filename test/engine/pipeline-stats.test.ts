/**
 * `engine.pipelines.stats` over a running pipeline (docs/api.md, Pipeline statistics): the
 * events its batches commit, counted per minute of commit on a virtual clock across two minutes,
 * the dense window, the dead-lettered count and what a replay changes of it (written, in its
 * minute), and workspace
 * isolation. On a SQLite file (clean batches commit on the writer thread, a batch with a dead
 * letter on the engine's connection), in-memory SQLite and Postgres (the knex transaction).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, generateSecretKey, isFerryError, postgresStorage, sqliteStorage, type Engine, type StorageConfig } from '@ferry/core';
import { eventually, MemoryHub, memoryConnector, VirtualClock } from '@ferry/testing';
import { getSharedTestPostgres } from '@ferry/test-servers';

const WS = 'default';
/** 30 s before a minute ends: the first batch commits in 19:03, the test then moves into 19:04. */
const START = Date.parse('2026-11-26T19:03:30.000Z');

const STORAGES: Array<{ name: string; config: () => Promise<StorageConfig> }> = [
  { name: 'sqlite file', config: async () => sqliteStorage({ filename: join(mkdtempSync(join(tmpdir(), 'ferry-stats-')), 'ferry.db') }) },
  { name: 'sqlite memory', config: async () => sqliteStorage({ filename: ':memory:' }) },
  { name: 'postgres', config: async () => postgresStorage({ connectionString: await (await getSharedTestPostgres()).createDatabase('stats') }) },
];

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.stop()));
});

const zero = (minute: string) => ({ minute, events_read: 0, events_written: 0, events_filtered: 0, events_dead_lettered: 0 });

describe.each(STORAGES)('pipeline stats [$name]', ({ config }) => {
  async function start() {
    const clock = new VirtualClock(START, { settleRealMs: 1 });
    const hub = new MemoryHub({ clock });
    const engine = await createEngine({ storage: await config(), clock, secretKey: generateSecretKey(), plugins: [memoryConnector(hub)] });
    await engine.start();
    engines.push(engine);
    const source = await engine.connectors.create(WS, { type: 'memory', direction: 'source', config: { name: 'in' } });
    const destination = await engine.connectors.create(WS, { type: 'memory', direction: 'destination', config: { name: 'out' } });
    const pipeline = await engine.pipelines.create(WS, {
      name: 'counted',
      source_connector_id: source.id,
      destination_connector_id: destination.id,
      // `noise` events are filtered out; one attempt per event, so a rejection dead-letters at once.
      transforms: [{ type: 'filter', path: 'kind', op: 'neq', value: 'noise' }],
      activate: true,
      batch_size: 100,
      // A poll a second: moving a minute on fires 60 of its timers, not 6,000.
      flush_interval_ms: 1000,
      max_attempts: 1,
    });
    return { engine, clock, hub, pipelineId: pipeline.id };
  }

  it('counts committed events per minute of commit, dense, with the dead letters now', async () => {
    const { engine, clock, hub, pipelineId } = await start();
    const logged = async (n: number) => (await engine.events.list(WS, pipelineId, { limit: 100 })).data.length === n;

    // 19:03: five events, one filtered out, one refused by the destination.
    hub.sink('out').reject((e) => e.payload.n === 3);
    hub.stream('in').push(...[0, 1, 2, 3].map((n) => ({ type: 'order', payload: { n, kind: 'order' } })), { type: 'order', payload: { n: 4, kind: 'noise' } });
    // Steps of a quarter second: the commit runs on the SQLite writer thread in real time, and
    // steps of a second let a loaded machine's clock reach the next minute first (seen in CI).
    await eventually(clock, () => logged(5), 250);
    expect(clock.now()).toBeLessThan(Date.parse('2026-11-26T19:04:00.000Z'));

    // 19:04: three more, all delivered.
    await clock.advanceTo(Date.parse('2026-11-26T19:04:10.000Z'));
    hub.stream('in').push(...[5, 6, 7].map((n) => ({ type: 'order', payload: { n, kind: 'order' } })));
    await eventually(clock, () => logged(8), 1000);

    const stats = await engine.pipelines.stats(WS, pipelineId, { minutes: 3 });
    expect(stats).toEqual({
      pipeline_id: pipelineId,
      minutes: 3,
      since: '2026-11-26T19:02:00.000Z',
      until: '2026-11-26T19:05:00.000Z',
      dead_lettered: 1,
      replaying: 0,
      per_minute: [
        zero('2026-11-26T19:02:00.000Z'),
        { minute: '2026-11-26T19:03:00.000Z', events_read: 5, events_written: 3, events_filtered: 1, events_dead_lettered: 1 },
        { minute: '2026-11-26T19:04:00.000Z', events_read: 3, events_written: 3, events_filtered: 0, events_dead_lettered: 0 },
      ],
    });

    // By default the last hour: 60 minutes, oldest first, ending with the current one.
    const hour = await engine.pipelines.stats(WS, pipelineId);
    expect(hour.minutes).toBe(60);
    expect(hour.per_minute).toHaveLength(60);
    expect(hour.since).toBe('2026-11-26T18:05:00.000Z');
    expect(hour.per_minute[0]).toEqual(zero('2026-11-26T18:05:00.000Z'));
    expect(hour.per_minute.slice(-2)).toEqual(stats.per_minute.slice(-2));

    // The replay of the dead letter changes the count now, and counts as written in the minute
    // it committed in (never as a read: the event was read once, by its batch).
    hub.sink('out').acceptAll();
    const dead = (await engine.events.list(WS, pipelineId, { status: 'dead_lettered' })).data[0]!;
    expect((await engine.events.replay(WS, dead.id)).status).toBe('replaying');
    await eventually(clock, async () => (await engine.events.get(WS, dead.id)).status === 'delivered', 250);
    const after = await engine.pipelines.stats(WS, pipelineId, { minutes: 3 });
    expect(after).toMatchObject({ dead_lettered: 0, replaying: 0 });
    expect(clock.now()).toBeLessThan(Date.parse('2026-11-26T19:05:00.000Z'));
    expect(after.per_minute).toEqual([stats.per_minute[0], stats.per_minute[1], { ...stats.per_minute[2]!, events_written: stats.per_minute[2]!.events_written + 1 }]);

    // A minute later the window has moved on: 19:03 and 19:04 are the first two of three.
    await clock.advanceTo(Date.parse('2026-11-26T19:05:00.000Z'));
    expect((await engine.pipelines.stats(WS, pipelineId, { minutes: 3 })).per_minute).toEqual([...after.per_minute.slice(1), zero('2026-11-26T19:05:00.000Z')]);
  });

  it('is workspace-isolated like `get`, and checks `minutes`', async () => {
    const { engine, pipelineId } = await start();
    const failure = async (promise: Promise<unknown>) => promise.then(() => undefined, (error: unknown) => error);
    const stranger = await failure(engine.pipelines.stats('other', pipelineId));
    expect(isFerryError(stranger, 'not_found')).toBe(true);
    expect(stranger).toEqual(await failure(engine.pipelines.get('other', pipelineId)));
    for (const [minutes, code] of [[0, 'out_of_range'], [1441, 'out_of_range'], [1.5, 'type']] as const) {
      const error = await failure(engine.pipelines.stats(WS, pipelineId, { minutes }));
      expect(isFerryError(error, 'validation_failed'), String(minutes)).toBe(true);
      expect((error as { errors: unknown[] }).errors).toEqual([expect.objectContaining({ pointer: '/minutes', code })]);
    }
    expect((await engine.pipelines.stats(WS, pipelineId, { minutes: 1440 })).per_minute).toHaveLength(1440);
    expect((await engine.pipelines.stats(WS, pipelineId, { minutes: 1 })).per_minute).toEqual([zero('2026-11-26T19:03:00.000Z')]);
  });
});

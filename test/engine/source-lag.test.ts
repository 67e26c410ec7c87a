import { afterEach, expect, it } from 'vitest';
import { Type } from '@sinclair/typebox';
import { createEngine, defineConnector, sqliteStorage, type BackfillReport, type Engine, type PlatformEvent } from '@ferry/core';
import { createMetrics } from '@ferry/server';
import { MemoryHub, eventually, memoryConnector, VirtualClock } from '@ferry/testing';

const WS = 'default';
const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.stop()));
});

/** A source that has nothing to read and holds back `held` bytes, as a replication slot would, while re-reading its tables. */
const B1 = 'bfl_01JD0000000000000000000001';
const B2 = 'bfl_01JD0000000000000000000002';
const B3 = 'bfl_01JD0000000000000000000003';
const report = (id: string, state: BackfillReport['state'], rows: [number, number]): BackfillReport => ({
  id,
  state,
  tables: [
    { table: 'public.items', rowsRead: rows[0], rowsEstimated: 2000, state: state === 'running' ? 'running' : 'done' },
    { table: 'public.orders', rowsRead: rows[1], rowsEstimated: null, state: state === 'running' ? 'pending' : 'done' },
  ],
});
const held = { bytes: 4096, backfill: report(B1, 'running', [1200, 0]), told: [] as unknown[] };
const laggingSource = defineConnector({
  type: 'lagging',
  version: '0.0.0',
  directions: ['source'],
  configSchema: Type.Object({}),
  source: (ctx) => {
    held.told.push(ctx.backfills);
    return {
      read: async (checkpoint) => {
        ctx.reportLag?.(held.bytes);
        ctx.reportBackfill?.(held.backfill);
        return { records: [], checkpoint };
      },
    };
  },
});

/** An engine on SQLite in memory streaming from a source of type `plugin` to a memory sink, on a virtual clock. */
async function streamingFrom(plugin: typeof laggingSource, flushIntervalMs: number) {
  const clock = new VirtualClock(undefined, { settleRealMs: 1 });
  const engine = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }), clock, plugins: [plugin, memoryConnector(new MemoryHub({ clock }))], webhookDelivery: false });
  await engine.start();
  engines.push(engine);
  const source = await engine.connectors.create(WS, { type: plugin.type, direction: 'source', config: {} });
  const sink = await engine.connectors.create(WS, { type: 'memory', direction: 'destination', config: { name: 'out' } });
  const pipeline = await engine.pipelines.create(WS, { name: plugin.type, source_connector_id: source.id, destination_connector_id: sink.id, activate: true, flush_interval_ms: flushIntervalMs });
  return { clock, engine, pipeline };
}

it('a source\'s reported lag and backfill progress are on the engine and /metrics while it is open, and its backfills recorded', async () => {
  const { clock, engine, pipeline } = await streamingFrom(laggingSource, 1000);
  const metrics = createMetrics(engine);
  const events: PlatformEvent[] = [];
  engine.on('*', (event) => void events.push(event));
  // The backfills' progress as an embedder streams it.
  const seen: Array<[string, string, number]> = [];
  const subscription = engine.backfills$(WS, pipeline.id).subscribe((b) => void seen.push([b.id, b.state, b.rows_read]));

  await eventually(clock, () => engine.sourceLag().get(pipeline.id) === 4096, 1000);
  expect(await metrics.render()).toContain(`ferry_source_lag_bytes{pipeline_id="${pipeline.id}"} 4096`);
  held.bytes = 8192;
  await eventually(clock, () => engine.sourceLag().get(pipeline.id) === 8192, 1000);
  // Its backfill's progress, until it reports none.
  expect(engine.backfillProgress().get(pipeline.id)).toEqual({ id: B1, table: 'public.items', rowsRead: 1200, tablesRemaining: 2 });
  const text = await metrics.render();
  expect(text).toContain(`ferry_backfill_rows_read{pipeline_id="${pipeline.id}",backfill_id="${B1}"} 1200`);
  expect(text).toContain(`ferry_backfill_tables_remaining{pipeline_id="${pipeline.id}",backfill_id="${B1}"} 2`);
  // A backfill the source started itself is recorded as it reports it, and its start is an event.
  await eventually(clock, async () => (await engine.backfills.list(WS, pipeline.id)).data.length === 1, 1000);
  expect(await engine.backfills.get(WS, B1)).toMatchObject({
    id: B1,
    pipeline_id: pipeline.id,
    state: 'running',
    rows_read: 1200,
    tables: [
      { table: 'public.items', rows_read: 1200, rows_estimated: 2000, state: 'running' },
      { table: 'public.orders', rows_read: 0, rows_estimated: null, state: 'pending' },
    ],
    finished_at: null,
  });
  held.backfill = report(B1, 'succeeded', [2000, 40]);
  await eventually(clock, () => !engine.backfillProgress().has(pipeline.id), 1000);
  expect(await metrics.render()).not.toContain('ferry_backfill_rows_read{');
  await eventually(clock, async () => (await engine.backfills.get(WS, B1)).state === 'succeeded', 1000);
  expect((await engine.backfills.get(WS, B1)).rows_read).toBe(2040);
  // An ended backfill stays ended, whatever a late report says; each change is one event.
  held.backfill = report(B1, 'running', [5, 0]);
  await eventually(clock, () => engine.backfillProgress().has(pipeline.id), 1000);
  expect((await engine.backfills.get(WS, B1)).state).toBe('succeeded');
  expect(events.filter((e) => e.type.startsWith('backfill.')).map((e) => [e.type, e.data])).toEqual([
    ['backfill.started', { pipeline_id: pipeline.id, backfill_id: B1, rows_read: 1200 }],
    ['backfill.completed', { pipeline_id: pipeline.id, backfill_id: B1, rows_read: 2040 }],
  ]);
  expect(seen).toEqual([
    [B1, 'running', 1200],
    [B1, 'succeeded', 2040],
  ]);
  subscription.unsubscribe();
  held.backfill = report(B2, 'running', [10, 0]);
  await eventually(clock, () => engine.backfillProgress().get(pipeline.id)?.id === B2, 1000);
  // An id the API could never name is not recorded (reports are recorded in order: B3's says the bad one was seen).
  held.backfill = report('bfl_nope', 'running', [1, 0]);
  await eventually(clock, () => engine.backfillProgress().get(pipeline.id)?.id === 'bfl_nope', 1000);
  held.backfill = report(B3, 'running', [5, 0]);
  await eventually(clock, async () => (await engine.backfills.list(WS, pipeline.id)).data.some((b) => b.id === B3), 1000);
  expect((await engine.backfills.list(WS, pipeline.id)).data.map((b) => b.id)).toEqual([B1, B2, B3]);
  // A type that cannot plan backfills is never told of any.
  expect(held.told.length).toBeGreaterThan(0);
  expect(held.told.every((t) => t === undefined)).toBe(true);

  // A paused pipeline's source is closed: its last figure would go stale, so it is gone.
  await engine.pipelines.pause(WS, pipeline.id);
  await eventually(clock, () => !engine.sourceLag().has(pipeline.id), 1000);
  expect(engine.backfillProgress().has(pipeline.id)).toBe(false);
  expect(await metrics.render()).not.toContain(`pipeline_id="${pipeline.id}"`);
});

it("a running backfill's progress is written at most once a second, the latest report each time, and its end at once", async () => {
  const B4 = 'bfl_01JD0000000000000000000004';
  let reported = 0;
  let ended = false;
  const busySource = defineConnector({
    type: 'busy',
    version: '0.0.0',
    directions: ['source'],
    configSchema: Type.Object({}),
    // Reports after every read, as a backfill does after every chunk.
    source: (ctx) => ({
      read: async (checkpoint) => {
        if (ended) ctx.reportBackfill?.(report(B4, 'succeeded', [reported, 0]));
        else ctx.reportBackfill?.(report(B4, 'running', [++reported, 0]));
        return { records: [], checkpoint };
      },
    }),
  });
  const { clock, engine, pipeline } = await streamingFrom(busySource, 100);
  const recorded: number[] = [];
  const subscription = engine.backfills$(WS, pipeline.id).subscribe((b) => void recorded.push(b.rows_read));
  // Ten reports a second for three seconds.
  await eventually(clock, () => reported >= 30, 100);
  const last = reported;
  ended = true;
  await eventually(clock, async () => (await engine.backfills.get(WS, B4)).state === 'succeeded', 100);
  subscription.unsubscribe();
  // The first report at once, then one a second (each the latest), then the end: not thirty writes.
  expect(recorded[0]).toBe(1);
  expect(recorded.length).toBeGreaterThanOrEqual(3);
  expect(recorded.length).toBeLessThanOrEqual(6);
  expect([...recorded].sort((a, b) => a - b)).toEqual(recorded);
  expect(recorded.at(-1)).toBe(last);
  expect((await engine.backfills.get(WS, B4)).rows_read).toBe(last);
});

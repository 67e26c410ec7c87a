import { afterEach, expect, it } from 'vitest';
import { Type } from '@sinclair/typebox';
import { createEngine, defineConnector, sqliteStorage, type Engine } from '@ferry/core';
import { createMetrics } from '@ferry/server';
import { MemoryHub, eventually, memoryConnector, VirtualClock } from '@ferry/testing';

const WS = 'default';
const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.stop()));
});

/** A source that has nothing to read and holds back `held` bytes, as a replication slot would, while re-reading its tables. */
const held = { bytes: 4096, backfill: { id: 'bfl_1', table: 'public.items', rowsRead: 1200, tablesRemaining: 2 } as { id: string; table: string; rowsRead: number; tablesRemaining: number } | null };
const laggingSource = defineConnector({
  type: 'lagging',
  version: '0.0.0',
  directions: ['source'],
  configSchema: Type.Object({}),
  source: (ctx) => ({
    read: async (checkpoint) => {
      ctx.reportLag?.(held.bytes);
      ctx.reportBackfill?.(held.backfill);
      return { records: [], checkpoint };
    },
  }),
});

it('a source\'s reported lag and backfill progress are on the engine and /metrics while it is open', async () => {
  const clock = new VirtualClock(undefined, { settleRealMs: 1 });
  const hub = new MemoryHub({ clock });
  const engine = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }), clock, plugins: [laggingSource, memoryConnector(hub)], webhookDelivery: false });
  await engine.start();
  engines.push(engine);
  const source = await engine.connectors.create(WS, { type: 'lagging', direction: 'source', config: {} });
  const sink = await engine.connectors.create(WS, { type: 'memory', direction: 'destination', config: { name: 'out' } });
  const pipeline = await engine.pipelines.create(WS, { name: 'lag', source_connector_id: source.id, destination_connector_id: sink.id, activate: true, flush_interval_ms: 1000 });
  const metrics = createMetrics(engine);

  await eventually(clock, () => engine.sourceLag().get(pipeline.id) === 4096, 1000);
  expect(await metrics.render()).toContain(`ferry_source_lag_bytes{pipeline_id="${pipeline.id}"} 4096`);
  held.bytes = 8192;
  await eventually(clock, () => engine.sourceLag().get(pipeline.id) === 8192, 1000);
  // Its backfill's progress, until it reports none.
  expect(engine.backfills().get(pipeline.id)).toEqual({ id: 'bfl_1', table: 'public.items', rowsRead: 1200, tablesRemaining: 2 });
  const text = await metrics.render();
  expect(text).toContain(`ferry_backfill_rows_read{pipeline_id="${pipeline.id}",backfill_id="bfl_1"} 1200`);
  expect(text).toContain(`ferry_backfill_tables_remaining{pipeline_id="${pipeline.id}",backfill_id="bfl_1"} 2`);
  held.backfill = null;
  await eventually(clock, () => !engine.backfills().has(pipeline.id), 1000);
  expect(await metrics.render()).not.toContain('ferry_backfill_rows_read{');
  held.backfill = { id: 'bfl_2', table: 'public.items', rowsRead: 10, tablesRemaining: 1 };
  await eventually(clock, () => engine.backfills().has(pipeline.id), 1000);

  // A paused pipeline's source is closed: its last figure would go stale, so it is gone.
  await engine.pipelines.pause(WS, pipeline.id);
  await eventually(clock, () => !engine.sourceLag().has(pipeline.id), 1000);
  expect(engine.backfills().has(pipeline.id)).toBe(false);
  expect(await metrics.render()).not.toContain(`pipeline_id="${pipeline.id}"`);
});

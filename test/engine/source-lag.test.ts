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

/** A source that has nothing to read and holds back `held` bytes, as a replication slot would. */
const held = { bytes: 4096 };
const laggingSource = defineConnector({
  type: 'lagging',
  version: '0.0.0',
  directions: ['source'],
  configSchema: Type.Object({}),
  source: (ctx) => ({
    read: async (checkpoint) => {
      ctx.reportLag?.(held.bytes);
      return { records: [], checkpoint };
    },
  }),
});

it('a source\'s reported lag is engine.sourceLag() and ferry_source_lag_bytes while it is open', async () => {
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

  // A paused pipeline's source is closed: its last figure would go stale, so it is gone.
  await engine.pipelines.pause(WS, pipeline.id);
  await eventually(clock, () => !engine.sourceLag().has(pipeline.id), 1000);
  expect(await metrics.render()).not.toContain(`pipeline_id="${pipeline.id}"`);
});

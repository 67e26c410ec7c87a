import { afterEach, expect, it } from 'vitest';
import { Type } from '@sinclair/typebox';
import { ConnectorError, createEngine, defineConnector, FerryError, sqliteStorage, type Engine } from '@ferry/core';
import { eventually, MemoryHub, memoryConnector, VirtualClock } from '@ferry/testing';

const WS = 'default';
const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.stop()));
});

/** A source that plans backfills and keeps something of the pipeline in the source system, which it cannot release now. */
let reachable = false;
const slotSource = defineConnector({
  type: 'slotted',
  version: '0.0.0',
  directions: ['source'],
  configSchema: Type.Object({}),
  planBackfill: async (_ctx, input) => ({ tables: (input.tables ?? ['public.items']).map((table) => ({ table, rowsEstimated: null })) }),
  releaseSource: async () => {
    if (!reachable) throw new ConnectorError('connection_refused', 'The source refused the connection.', { retryable: true });
  },
  source: () => ({ read: async (checkpoint) => ({ records: [], checkpoint }) }),
});

it('a backfill asked of a pipeline being deleted is refused with its state, and one asked before is gone with it', async () => {
  const clock = new VirtualClock(undefined, { settleRealMs: 1 });
  const engine = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }), clock, plugins: [slotSource, memoryConnector(new MemoryHub({ clock }))], webhookDelivery: false });
  await engine.start();
  engines.push(engine);
  const source = await engine.connectors.create(WS, { type: 'slotted', direction: 'source', config: {} });
  const sink = await engine.connectors.create(WS, { type: 'memory', direction: 'destination', config: { name: 'out' } });
  const pipeline = await engine.pipelines.create(WS, { name: 'slotted', source_connector_id: source.id, destination_connector_id: sink.id });
  const before = await engine.backfills.create(WS, pipeline.id, {});
  expect(before.state).toBe('queued');
  // Its slot cannot be dropped now: the pipeline stays `deleting` until it can.
  expect(await engine.pipelines.delete(WS, pipeline.id)).toMatchObject({ status: 'deleting' });
  const refused = await engine.backfills.create(WS, pipeline.id, { tables: ['public.items'] }).catch((error: unknown) => error);
  expect(refused).toBeInstanceOf(FerryError);
  expect(refused).toMatchObject({ code: 'invalid_state_transition', status: 409, currentStatus: 'deleting' });
  expect((await engine.backfills.list(WS, pipeline.id)).data.map((b) => b.id)).toEqual([before.id]);
  // Once the runtime's next try releases it, the pipeline is gone, and so are its backfills.
  reachable = true;
  await eventually(clock, async () => (await engine.pipelines.get(WS, pipeline.id).catch(() => null)) === null, 1000);
  await expect(engine.backfills.get(WS, before.id)).rejects.toMatchObject({ code: 'not_found' });
});

/**
 * A destination's `prepare` (docs/writing-a-connector.md): the engine hands it the next batch's
 * events while the batch before is being written, pull source (read ahead) and push source
 * (handed over ahead) alike, and then writes that very array, so the destination can use what it
 * made. With transform steps, nothing is prepared: the steps decide what is written when the batch
 * is processed. Every event arrives once, in order, either way.
 */
import { Type } from '@sinclair/typebox';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, defineConnector, generateSecretKey, sqliteStorage, type DestinationEvent, type Engine } from '@ferry/core';
import { eventually, MemoryHub, memoryConnector, VirtualClock } from '@ferry/testing';

const WS = 'default';
const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.stop()));
});

/** Turns of the event loop: a write that takes a while, as a real one does, without time passing. */
const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};

/** A destination that records what it was asked to prepare and, for each write, whether it had prepared that array. */
function recording() {
  const prepared = new WeakSet<readonly DestinationEvent[]>();
  const state = { prepares: 0, writes: [] as Array<{ prepared: boolean; ids: string[] }> };
  const plugin = defineConnector({
    type: 'recording',
    version: '0.0.0',
    directions: ['destination'],
    configSchema: Type.Object({}),
    destination: () => ({
      prepare(events) {
        state.prepares++;
        prepared.add(events);
      },
      async write(events) {
        await turns(3);
        state.writes.push({ prepared: prepared.has(events), ids: events.map((e) => e.id) });
        return events.map(() => ({ ok: true as const }));
      },
    }),
  });
  return { plugin, state };
}

async function run(source: Record<string, unknown>, transforms: Array<Record<string, unknown>>) {
  const clock = new VirtualClock(Date.parse('2026-11-29T00:00:00.000Z'), { settleRealMs: 1 });
  const hub = new MemoryHub({ clock });
  const { plugin, state } = recording();
  const engine = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }), clock, secretKey: generateSecretKey(), plugins: [memoryConnector(hub), plugin] });
  engines.push(engine);
  await engine.start();
  hub.stream('in').push(...Array.from({ length: 1000 }, (_, i) => ({ type: 'order.created', payload: { i } })));
  const src = await engine.connectors.create(WS, { type: 'memory', direction: 'source', config: { name: 'in', ...source } });
  const dst = await engine.connectors.create(WS, { type: 'recording', direction: 'destination', config: {} });
  const pipeline = await engine.pipelines.create(WS, { name: 'p', source_connector_id: src.id, destination_connector_id: dst.id, batch_size: 100, transforms: transforms as never, activate: true });
  await eventually(clock, () => state.writes.reduce((n, w) => n + w.ids.length, 0) >= 1000, 100);
  const logged = (await engine.events.list(WS, pipeline.id, { limit: 100, order: 'asc' })).data.map((e) => e.id);
  return { state, logged };
}

describe('a destination prepares the next batch while the one before is written', () => {
  it.each([
    // Read ahead, every batch after the first is there to prepare while the one before is written.
    ['a pull source, read ahead', {}, 9],
    // Handed over at most one ahead, and only once the batch before that committed: some batches
    // come after the write before them has returned, with nothing left to overlap.
    ['a push source, handing over ahead', { mode: 'push', push_batch_size: 100, push_ahead: true }, 1],
  ])('%s', async (_, source, least) => {
    const { state, logged } = await run(source, []);
    expect(state.writes).toHaveLength(10);
    expect(state.writes[0]!.prepared).toBe(false);
    // Written as the very array prepared: the destination finds what it made.
    expect(state.writes.filter((w) => w.prepared).length).toBeGreaterThanOrEqual(least);
    expect(state.prepares).toBeGreaterThanOrEqual(state.writes.filter((w) => w.prepared).length);
    // Once each, in order.
    const ids = state.writes.flatMap((w) => w.ids);
    expect(new Set(ids).size).toBe(1000);
    expect(ids.slice(0, 100)).toEqual(logged);
  });

  it('prepares nothing when transform steps decide what is written', async () => {
    const { state } = await run({}, [{ type: 'set', path: 'seen', value: true }]);
    expect(state.prepares).toBe(0);
    expect(state.writes.every((w) => !w.prepared)).toBe(true);
  });
});

import { afterEach, expect, it } from 'vitest';
import { type EventRecord } from '@ferry/core';
import { eventually } from '@ferry/testing';
import { startMemoryPipeline, stopMemoryEngines, WS } from '../support/memory-pipeline.js';

afterEach(stopMemoryEngines);

it('replays the event log in order, then tails each event this engine records, replayed ones with their new outcome', async () => {
  const { engine, clock, hub, pipeline } = await startMemoryPipeline({ name: 'streamed' });
  hub.sink('out').reject((e) => e.payload.n === 3);
  for (let n = 0; n < 5; n++) hub.stream('in').push({ type: n % 2 === 0 ? 'even' : 'odd', payload: { n } });
  await eventually(clock, async () => (await engine.events.list(WS, pipeline.id)).data.length === 5, 1000);

  const seen: EventRecord[] = [];
  const odd: EventRecord[] = [];
  const all = engine.events$(WS, pipeline.id).subscribe((e) => seen.push(e));
  const onlyOdd = engine.events$(WS, pipeline.id, { type: 'odd' }).subscribe((e) => odd.push(e));
  await eventually(clock, async () => seen.length === 5 && odd.length === 2, 1000);
  // The replay: what the listing answers, in its order.
  expect(seen).toEqual((await engine.events.list(WS, pipeline.id)).data);
  const dead = seen.find((e) => e.payload!.n === 3)!;
  expect(dead).toMatchObject({ status: 'dead_lettered', error: { stage: 'destination', code: 'record_rejected' } });

  // Live: new events once their batch commits.
  for (let n = 5; n < 8; n++) hub.stream('in').push({ type: n % 2 === 0 ? 'even' : 'odd', payload: { n } });
  await eventually(clock, async () => seen.length === 8 && odd.length === 4, 1000);
  expect(seen.slice(5).map((e) => [e.payload!.n, e.status])).toEqual([
    [5, 'delivered'],
    [6, 'delivered'],
    [7, 'delivered'],
  ]);
  // The replayed ones in the listing's order (time, then id); the live ones in commit order.
  expect(odd.slice(0, 2)).toEqual((await engine.events.list(WS, pipeline.id, { type: 'odd' })).data.slice(0, 2));
  expect(odd.slice(2).map((e) => e.payload!.n)).toEqual([5, 7]);

  // A replay fixed: the event again, with its new outcome.
  hub.sink('out').acceptAll();
  await engine.events.replay(WS, dead.id);
  await eventually(clock, async () => seen.length === 9, 1000);
  expect(seen[8]).toMatchObject({ id: dead.id, status: 'delivered', error: null, dead_lettered_at: null });
  expect(seen[8]).toEqual(await engine.events.get(WS, dead.id));
  all.unsubscribe();
  onlyOdd.unsubscribe();

  // Subscribed later, the same log: each event once, in its latest state.
  const again: EventRecord[] = [];
  const late = engine.events$(WS, pipeline.id).subscribe((e) => again.push(e));
  await eventually(clock, async () => again.length === 8, 1000);
  expect(new Set(again.map((e) => e.id)).size).toBe(8);
  expect(again.find((e) => e.id === dead.id)?.status).toBe('delivered');
  late.unsubscribe();
});

it('applies `since` to the replay and to what it hears live', async () => {
  const { engine, clock, hub, pipeline } = await startMemoryPipeline({ name: 'streamed' });
  hub.stream('in').push({ type: 't', payload: { n: 1 }, occurredAt: '2026-01-01T00:00:00.000Z' });
  hub.stream('in').push({ type: 't', payload: { n: 2 }, occurredAt: '2026-03-01T00:00:00.000Z' });
  await eventually(clock, async () => (await engine.events.list(WS, pipeline.id)).data.length === 2, 1000);
  const seen: number[] = [];
  const sub = engine.events$(WS, pipeline.id, { since: '2026-02-01T00:00:00Z' }).subscribe((e) => seen.push(e.payload!.n as number));
  await eventually(clock, async () => seen.length === 1, 1000);
  hub.stream('in').push({ type: 't', payload: { n: 3 }, occurredAt: '2026-01-15T00:00:00.000Z' });
  hub.stream('in').push({ type: 't', payload: { n: 4 }, occurredAt: '2026-04-01T00:00:00.000Z' });
  await eventually(clock, async () => (await engine.events.list(WS, pipeline.id)).data.length === 4 && seen.length === 2, 1000);
  expect(seen).toEqual([2, 4]);
  sub.unsubscribe();
});

it('ends with the listing\u2019s error: an unknown pipeline, an invalid since', async () => {
  const { engine, pipeline } = await startMemoryPipeline({ name: 'streamed' });
  const errorOf = (options: { since?: string } = {}, id = pipeline.id) =>
    new Promise<unknown>((resolve) => engine.events$(WS, id, options).subscribe({ error: resolve, complete: () => resolve('completed') }));
  expect(await errorOf({}, 'pip_00000000000000000000000000')).toMatchObject({ code: 'not_found' });
  expect(await errorOf({ since: 'yesterday' })).toMatchObject({ code: 'validation_failed' });
});

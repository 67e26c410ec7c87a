import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it, vi } from 'vitest';
import { createEngine, generateSecretKey, sqliteStorage, type Engine } from '@ferry/core';
import type { RetentionOptionsInput } from '@ferry/core/internal';
import { engineContext } from '@ferry/core/internal';
import { eventually, MemoryHub, memoryConnector, VirtualClock } from '@ferry/testing';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const WS = 'default';

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.stop()));
});

async function start(retention: RetentionOptionsInput, runtime: false | undefined = undefined) {
  const clock = new VirtualClock(undefined, { settleRealMs: 1 });
  const hub = new MemoryHub({ clock });
  const engine = await createEngine({
    storage: sqliteStorage({ filename: join(mkdtempSync(join(tmpdir(), 'ferry-retention-')), 'ferry.db') }),
    clock,
    secretKey: generateSecretKey(),
    plugins: [memoryConnector(hub)],
    retention,
    // Few timers per virtual day: the test moves days ahead.
    runtime: runtime ?? { leaseTtlMs: 3 * HOUR, pollIntervalMs: HOUR },
    webhookDelivery: { pollIntervalMs: HOUR, leaseTtlMs: 3 * HOUR },
  });
  await engine.start();
  engines.push(engine);
  return { engine, clock, hub };
}

async function listAll(engine: Engine, pipelineId: string) {
  return (await engine.events.list(WS, pipelineId, { limit: 100 })).data;
}

it('deletes batches of settled events past their retention on the clock, and keeps a batch holding a dead letter a replay needs', async () => {
  const { engine, clock, hub } = await start({ eventsMs: DAY, runsMs: DAY, platformEventsMs: DAY, intervalMs: HOUR });
  for (let n = 0; n < 10; n++) hub.stream('in').push({ type: 'order.created', payload: { n } });
  hub.sink('out').reject((e) => e.payload.n === 7);
  const source = await engine.connectors.create(WS, { type: 'memory', direction: 'source', config: { name: 'in' } });
  const destination = await engine.connectors.create(WS, { type: 'memory', direction: 'destination', config: { name: 'out' } });
  const pipeline = await engine.pipelines.create(WS, { name: 'kept', source_connector_id: source.id, destination_connector_id: destination.id, activate: true, batch_size: 100, flush_interval_ms: HOUR });
  await eventually(clock, async () => (await listAll(engine, pipeline.id)).length === 10, 1000);
  // A second batch, all delivered.
  for (let n = 10; n < 13; n++) hub.stream('in').push({ type: 'order.created', payload: { n } });
  await eventually(clock, async () => (await listAll(engine, pipeline.id)).length === 13, MINUTE);

  // Within the retention, a pass deletes nothing.
  await clock.advance(2 * HOUR);
  expect(await listAll(engine, pipeline.id)).toHaveLength(13);

  // A day later, the next pass deletes the settled batch; the batch holding the dead letter stays whole.
  await clock.advance(DAY);
  await eventually(clock, async () => (await listAll(engine, pipeline.id)).length === 10, MINUTE);
  const kept = await listAll(engine, pipeline.id);
  expect(kept.filter((e) => e.status === 'dead_lettered')).toMatchObject([{ status: 'dead_lettered', payload: { n: 7 } }]);
  // The stream's run is still running: it stays. Platform events fanned out a day ago are gone.
  expect((await engine.pipelines.listRuns(WS, pipeline.id)).data.map((r) => r.status)).toEqual(['running']);
  expect(await engineContext(engine).storage.repos.outbox.listForWorkspace(WS)).toEqual([]);

  // Replayed and delivered, the dead letter no longer holds its batch: the next pass deletes it.
  hub.sink('out').acceptAll();
  await engine.events.replay(WS, kept.find((e) => e.status === 'dead_lettered')!.id);
  await eventually(clock, async () => (await listAll(engine, pipeline.id)).length === 0, MINUTE);

  // What arrives later is kept for its own day.
  hub.stream('in').push({ type: 'order.created', payload: { n: 13 } });
  await eventually(clock, async () => (await listAll(engine, pipeline.id)).length === 1, MINUTE);
});

it('keeps everything but the per-minute counts by default, and everything in an engine that runs no pipelines', async () => {
  for (const [retention, runtime] of [[{}, undefined], [{ eventsMs: DAY, intervalMs: HOUR }, false]] as const) {
    const { engine, clock } = await start(retention, runtime);
    const repos = engineContext(engine).storage.repos;
    await repos.events.append([
      { id: 'evt_old', workspace_id: WS, pipeline_id: 'pip_x', type: 't', occurred_at: '2020-01-01T00:00:00.000Z', payload: {}, status: 'delivered', attempts: 1, error: null, dead_lettered_at: null, created_at: '2020-01-01T00:00:00.000Z', updated_at: '2020-01-01T00:00:00.000Z' },
    ]);
    await repos.pipelineMinutes.add({ pipeline_id: 'pip_x', workspace_id: WS, minute: '2020-01-01T00:00:00.000Z', events_read: 1, events_written: 1, events_filtered: 0, events_dead_lettered: 0 });
    await clock.advance(2 * DAY);
    expect(await repos.events.get(WS, 'evt_old')).not.toBeNull();
    expect(await repos.pipelineMinutes.oldest()).toBe(runtime === false ? '2020-01-01T00:00:00.000Z' : null);
  }
});

it('deletes the per-minute counts of a pipeline 7 days after their minute, by default, waking only when they are due', async () => {
  const { engine, clock, hub } = await start({});
  const passes = vi.spyOn(engineContext(engine).storage.repos.pipelineMinutes, 'deleteBefore');
  for (let n = 0; n < 3; n++) hub.stream('in').push({ type: 'order.created', payload: { n } });
  const source = await engine.connectors.create(WS, { type: 'memory', direction: 'source', config: { name: 'in' } });
  const destination = await engine.connectors.create(WS, { type: 'memory', direction: 'destination', config: { name: 'out' } });
  const pipeline = await engine.pipelines.create(WS, { name: 'counted', source_connector_id: source.id, destination_connector_id: destination.id, activate: true, batch_size: 100, flush_interval_ms: HOUR });
  await eventually(clock, async () => (await listAll(engine, pipeline.id)).length === 3, 1000);
  const committedAt = clock.now();
  const window = async () => (await engine.pipelines.stats(WS, pipeline.id, { minutes: 1440 })).per_minute.reduce((n, m) => n + m.events_read, 0);
  const stored = () => engineContext(engine).storage.repos.pipelineMinutes.oldest();
  expect(await window()).toBe(3);

  // Kept a week: gone from the day's window after a day, still stored until the week is out.
  // Meanwhile the job ran once (10 minutes in), then slept until that minute's week was out.
  await clock.advance(6 * DAY);
  expect(await window()).toBe(0);
  expect(await stored()).not.toBeNull();
  expect(passes).toHaveBeenCalledTimes(1);
  await clock.advanceTo(committedAt + 7 * DAY + 11 * MINUTE);
  await eventually(clock, async () => (await stored()) === null, MINUTE);
  expect(passes).toHaveBeenCalledTimes(2);
  // With nothing left to delete, the next pass is a week away.
  await clock.advance(6 * DAY);
  expect(passes).toHaveBeenCalledTimes(2);
  // The events themselves have no retention by default.
  expect(await listAll(engine, pipeline.id)).toHaveLength(3);
});

it('refuses a retention that is not a positive number of ms', async () => {
  await expect(start({ eventsMs: 0 })).rejects.toThrow(/retention.eventsMs/);
  await expect(start({ pipelineMinutesMs: -1 })).rejects.toThrow(/retention.pipelineMinutesMs/);
  await expect(start({ intervalMs: 10 })).rejects.toThrow(/retention.intervalMs/);
});

it("applies a pipeline's own event_log: payloads of failed events only, and a retention of its own", async () => {
  const { engine, clock, hub } = await start({});
  for (let n = 0; n < 4; n++) hub.stream('lean').push({ type: 'order.created', payload: { n } });
  for (let n = 0; n < 2; n++) hub.stream('full').push({ type: 'order.created', payload: { n } });
  hub.sink('out').reject((e) => e.payload.n === 3);
  const destination = await engine.connectors.create(WS, { type: 'memory', direction: 'destination', config: { name: 'out' } });
  const pipeline = async (name: string, event_log?: { payloads?: 'all' | 'failed'; retention_days?: number | null }) => {
    const source = await engine.connectors.create(WS, { type: 'memory', direction: 'source', config: { name } });
    return engine.pipelines.create(WS, { name, source_connector_id: source.id, destination_connector_id: destination.id, activate: true, batch_size: 100, flush_interval_ms: HOUR, ...(event_log ? { event_log } : {}) });
  };
  const lean = await pipeline('lean', { payloads: 'failed', retention_days: 1 });
  const full = await pipeline('full');
  expect(lean.event_log).toEqual({ payloads: 'failed', retention_days: 1 });
  expect(full.event_log).toEqual({ payloads: 'all', retention_days: null });
  await eventually(clock, async () => (await listAll(engine, lean.id)).length === 4 && (await listAll(engine, full.id)).length === 2, 1000);

  // Only the dead-lettered event keeps its payload; the others keep id, type, time, status, attempts.
  const listed = await listAll(engine, lean.id);
  expect(listed.filter((e) => e.status === 'delivered').map((e) => e.payload)).toEqual([null, null, null]);
  expect(listed.filter((e) => e.status === 'dead_lettered').map((e) => e.payload)).toEqual([{ n: 3 }]);
  expect((await listAll(engine, full.id)).map((e) => e.payload!.n).sort()).toEqual([0, 1]);

  // A replayed dead letter was dead-lettered: it keeps its payload once delivered.
  hub.sink('out').acceptAll();
  const dead = listed.find((e) => e.status === 'dead_lettered')!;
  await engine.events.replay(WS, dead.id);
  await eventually(clock, async () => (await engine.events.get(WS, dead.id)).status === 'delivered', MINUTE);
  expect(await engine.events.get(WS, dead.id)).toMatchObject({ status: 'delivered', payload: { n: 3 } });

  // A day later the lean pipeline's events are gone; the other pipeline's stay.
  await clock.advance(DAY + HOUR);
  await eventually(clock, async () => (await listAll(engine, lean.id)).length === 0, MINUTE);
  expect((await listAll(engine, full.id)).length).toBe(2);

  // PATCH changes one field and keeps the other.
  expect((await engine.pipelines.update(WS, lean.id, { event_log: { retention_days: null } })).event_log).toEqual({ payloads: 'failed', retention_days: null });
});

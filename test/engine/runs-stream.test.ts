import { afterEach, expect, it } from 'vitest';
import { isFerryError, type Run } from '@ferry/core';
import { eventually } from '@ferry/testing';
import { startMemoryPipeline, stopMemoryEngines, WS } from '../support/memory-pipeline.js';

afterEach(stopMemoryEngines);

it('replays the runs oldest first, then each committed change of a run: queued, running, counted, ended', async () => {
  // Once a year: only manual runs happen during the test.
  const { engine, clock, hub, pipeline } = await startMemoryPipeline({ name: 'runs', schedule: '0 0 1 1 *', batchSize: 10 });
  for (let n = 0; n < 25; n++) hub.stream('in').push({ type: 't', payload: { n } });
  const first = await engine.pipelines.triggerRun(WS, pipeline.id);
  await eventually(clock, async () => (await engine.pipelines.listRuns(WS, pipeline.id)).data[0]?.status === 'succeeded', 1000);

  const seen: Run[] = [];
  let completed = false;
  const sub = engine.runs$(WS, pipeline.id).subscribe({ next: (r) => seen.push(r), complete: () => (completed = true) });
  await eventually(clock, async () => seen.length === 1, 1000);
  // The replay: the run as the listing shows it.
  expect(seen).toEqual((await engine.pipelines.listRuns(WS, pipeline.id)).data);
  expect(seen[0]).toMatchObject({ id: first.id, status: 'succeeded', events_read: 25, events_written: 25 });

  // Live: a second run, from queued to its end, each snapshot once.
  for (let n = 25; n < 50; n++) hub.stream('in').push({ type: 't', payload: { n } });
  const second = await engine.pipelines.triggerRun(WS, pipeline.id);
  await eventually(clock, async () => seen.at(-1)?.status === 'succeeded' && seen.at(-1)?.id === second.id, 1000);
  const live = seen.slice(1);
  expect(live.every((r) => r.id === second.id)).toBe(true);
  expect(live[0]).toMatchObject({ status: 'queued', trigger: 'manual', events_read: 0 });
  expect(live.map((r) => r.status)).toContain('running');
  expect(live.at(-1)).toEqual((await engine.pipelines.listRuns(WS, pipeline.id)).data[1]);
  expect(live.at(-1)).toMatchObject({ events_read: 25, events_written: 25 });
  // Counts only grow, and no snapshot repeats the one before it.
  for (let i = 1; i < live.length; i++) {
    expect(live[i]!.events_read).toBeGreaterThanOrEqual(live[i - 1]!.events_read);
    expect(live[i]).not.toEqual(live[i - 1]);
  }

  // Deleting the pipeline ends the stream.
  await engine.pipelines.delete(WS, pipeline.id);
  await eventually(clock, async () => completed, 1000);
  sub.unsubscribe();
});

it('replays only the runs created since a time, and refuses an unknown pipeline or a bad time', async () => {
  const { engine, clock, hub, pipeline } = await startMemoryPipeline({ name: 'runs', schedule: '0 0 1 1 *', batchSize: 10 });
  hub.stream('in').push({ type: 't', payload: { n: 1 } });
  const old = await engine.pipelines.triggerRun(WS, pipeline.id);
  await eventually(clock, async () => (await engine.pipelines.listRuns(WS, pipeline.id)).data[0]?.status === 'succeeded', 1000);
  await clock.advance(60_000);
  const since = new Date(clock.now()).toISOString();
  const recent = await engine.pipelines.triggerRun(WS, pipeline.id);
  await eventually(clock, async () => (await engine.pipelines.listRuns(WS, pipeline.id)).data[1]?.status === 'succeeded', 1000);

  const seen: Run[] = [];
  const sub = engine.runs$(WS, pipeline.id, { since }).subscribe((r) => seen.push(r));
  await eventually(clock, async () => seen.length === 1, 1000);
  expect(seen.map((r) => r.id)).toEqual([recent.id]);
  expect(seen.map((r) => r.id)).not.toContain(old.id);
  sub.unsubscribe();

  const errors: unknown[] = [];
  engine.runs$(WS, 'pip_01JD0000000000000000000000').subscribe({ error: (e) => errors.push(e) });
  engine.runs$(WS, pipeline.id, { since: 'yesterday' }).subscribe({ error: (e) => errors.push(e) });
  await eventually(clock, async () => errors.length === 2, 1000);
  expect(isFerryError(errors[0], 'not_found')).toBe(true);
  expect(isFerryError(errors[1], 'validation_failed')).toBe(true);
});

it('follows a streaming pipeline: its run counts each batch, and a pause ends it', async () => {
  const { engine, clock, hub, pipeline } = await startMemoryPipeline({ name: 'runs', batchSize: 10 });
  const seen: Run[] = [];
  const sub = engine.runs$(WS, pipeline.id).subscribe((r) => seen.push(r));
  await eventually(clock, async () => seen.at(-1)?.status === 'running', 1000);
  for (let n = 0; n < 30; n++) hub.stream('in').push({ type: 't', payload: { n } });
  await eventually(clock, async () => seen.at(-1)?.events_written === 30, 1000);
  await engine.pipelines.pause(WS, pipeline.id);
  await eventually(clock, async () => seen.at(-1)?.status === 'succeeded', 1000);
  expect(new Set(seen.map((r) => r.id)).size).toBe(1);
  expect(seen.at(-1)).toEqual((await engine.pipelines.listRuns(WS, pipeline.id)).data[0]);
  sub.unsubscribe();
});

/**
 * Held work, visible (docs/api.md, Pipelines): a pipeline whose flow is held says what it waits
 * on, in its record, its running run, /metrics and one log line, not one per retry; a dead letter
 * is logged.
 */
import { afterEach, expect, it } from 'vitest';
import { createEngine, type Engine, type Logger } from '@ferry/core';
import { sqliteStorage } from '@ferry/core';
import { createMetrics } from '@ferry/server';
import { MemoryHub, eventually, memoryConnector, VirtualClock } from '@ferry/testing';

const WS = 'default';
const MINUTE = 60_000;
const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.stop()));
});

/** A logger that keeps the message of each line at warn and above, and of info. */
function keptLogger(lines: string[]): Logger {
  const keep = (level: string) => (_obj: object | string, msg?: string) => void lines.push(`${level} ${msg ?? ''}`);
  const logger: Logger = { trace: () => undefined, debug: () => undefined, info: keep('info'), warn: keep('warn'), error: keep('error'), fatal: keep('fatal'), child: () => logger };
  return logger;
}

/** A started engine on SQLite in memory with the memory connector, on a virtual clock, its log kept. */
async function start() {
  const clock = new VirtualClock(undefined, { settleRealMs: 1 });
  const hub = new MemoryHub({ clock });
  const lines: string[] = [];
  const engine = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }), clock, plugins: [memoryConnector(hub)], webhookDelivery: false, logger: keptLogger(lines) });
  await engine.start();
  engines.push(engine);
  return { engine, clock, hub, lines };
}

it('a held pipeline says what it waits on, in its record and in /metrics, logs once, and is clear again once it recovers', async () => {
  const { engine, clock, hub, lines } = await start();
  for (let n = 0; n < 30; n++) hub.stream('in').push({ type: 'order.created', payload: { n } });
  hub.sink('out').down(9 * MINUTE);
  const source = await engine.connectors.create(WS, { type: 'memory', direction: 'source', config: { name: 'in' } });
  const sink = await engine.connectors.create(WS, { type: 'memory', direction: 'destination', config: { name: 'out' } });
  const pipeline = await engine.pipelines.create(WS, { name: 'held', source_connector_id: source.id, destination_connector_id: sink.id, activate: true, batch_size: 25 });
  const metrics = createMetrics(engine);
  expect(pipeline.held).toBeNull();

  await eventually(clock, async () => (await engine.pipelines.get(WS, pipeline.id)).held !== null, MINUTE);
  // While its run still retries, the run shows the same hold, in the listing and as the last run.
  const first = await engine.pipelines.get(WS, pipeline.id);
  expect(first.last_run).toMatchObject({ status: 'running', trigger: 'stream', held: { since: first.held!.since, error: { code: 'connection_refused' }, events_waiting: 25 } });
  expect((await engine.pipelines.listRuns(WS, pipeline.id, { order: 'desc' })).data[0]?.held).toEqual(first.held);

  await eventually(clock, async () => ((await engine.pipelines.get(WS, pipeline.id)).held?.attempts ?? 0) >= 3, MINUTE);
  await clock.advance(4 * MINUTE);
  const { held } = await engine.pipelines.get(WS, pipeline.id);
  expect(held).toMatchObject({ error: { code: 'connection_refused', message: expect.any(String) }, events_waiting: 25 });
  expect(Date.parse(held!.next_attempt_at)).toBeGreaterThanOrEqual(clock.now() - MINUTE);
  const text = await metrics.render();
  expect(text).toContain('ferry_pipelines_held 1');
  expect(text).toMatch(new RegExp(`ferry_pipeline_held_events\\{pipeline_id="${pipeline.id}"\\} 25`));
  const heldFor = Number(new RegExp(`ferry_pipeline_held_seconds\\{pipeline_id="${pipeline.id}"\\} (\\d+(\\.\\d+)?)`).exec(text)?.[1]);
  expect(heldFor).toBeGreaterThan(4 * 60);
  // One warning for the whole streak so far, however many attempts it took.
  expect(lines.filter((l) => l.startsWith('warn pipeline flow'))).toEqual(['warn pipeline flow held: its batch is retried with backoff']);

  await eventually(clock, () => hub.sink('out').events.size === 30, 10 * MINUTE);
  await eventually(clock, async () => (await engine.pipelines.get(WS, pipeline.id)).held === null, MINUTE);
  expect((await engine.pipelines.listRuns(WS, pipeline.id)).data.every((r) => r.held === null)).toBe(true);
  expect(await metrics.render()).toContain('ferry_pipelines_held 0');
  expect(lines).toContain('info pipeline flow recovered');
});

it('a pause clears the hold, and a dead letter is one log line', async () => {
  const { engine, clock, hub, lines } = await start();
  for (let n = 0; n < 10; n++) hub.stream('in').push({ type: 'order.created', payload: { n } });
  hub.sink('out').reject((e) => e.payload.n === 4);
  const source = await engine.connectors.create(WS, { type: 'memory', direction: 'source', config: { name: 'in' } });
  const sink = await engine.connectors.create(WS, { type: 'memory', direction: 'destination', config: { name: 'out' } });
  const pipeline = await engine.pipelines.create(WS, { name: 'dead', source_connector_id: source.id, destination_connector_id: sink.id, activate: true });
  await eventually(clock, () => hub.sink('out').events.size === 9, MINUTE);
  await eventually(clock, () => lines.includes('warn event dead-lettered'), MINUTE);

  hub.sink('out').down(60 * MINUTE);
  hub.stream('in').push({ type: 'order.created', payload: { n: 10 } });
  await eventually(clock, async () => (await engine.pipelines.get(WS, pipeline.id)).held !== null, 5 * MINUTE);
  let paused = false;
  void engine.pipelines.pause(WS, pipeline.id).then(() => (paused = true));
  await eventually(clock, () => paused, MINUTE);
  expect((await engine.pipelines.get(WS, pipeline.id)).held).toBeNull();
});

import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, generateSecretKey, sqliteStorage, systemClock, type Clock, type Engine } from '@ferry/core';
import { eventually, MemoryHub, memoryConnector, VirtualClock } from '@ferry/testing';

const WS = 'default';
const DAY = 24 * 60 * 60 * 1000;

/**
 * Schedules whose next tick is further away than a Node timer can wait (2^31-1 ms, ~24.8 days):
 * a yearly or monthly cron. A single Node timer would fire them at once, every future tick in a
 * row, until the cron library ran out of dates and the process died.
 */
describe('schedules further away than a Node timer can wait', () => {
  const engines: Engine[] = [];
  afterEach(async () => {
    await Promise.all(engines.splice(0).map((e) => e.stop()));
  });

  async function scheduled(clock: Clock, schedule: string) {
    const hub = new MemoryHub({ clock });
    const engine = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }), clock, secretKey: generateSecretKey(), plugins: [memoryConnector(hub)],
      // Polls a few times a month, so moving virtual time by months fires a few timers, not millions.
      runtime: { pollIntervalMs: 7 * DAY, leaseTtlMs: 60 * DAY }, webhookDelivery: false });
    await engine.start();
    engines.push(engine);
    const source = await engine.connectors.create(WS, { type: 'memory', direction: 'source', config: { name: 'in' } });
    const destination = await engine.connectors.create(WS, { type: 'memory', direction: 'destination', config: { name: 'out' } });
    const pipeline = await engine.pipelines.create(WS, { name: 'yearly', source_connector_id: source.id, destination_connector_id: destination.id, schedule, activate: true });
    return { engine, pipeline };
  }

  it('runs nothing before the tick on the real clock', async () => {
    // The first of a month two to three months ahead: always more than 24.8 days away.
    const month = ((new Date().getUTCMonth() + 2) % 12) + 1;
    const { engine, pipeline } = await scheduled(systemClock, `0 0 1 ${month} *`);
    // Node runs a timer it cannot hold after 1 ms: had the scheduler armed one, its run would be
    // queued before this 50 ms timer fires.
    await new Promise<void>((resolve) => systemClock.setTimeout(resolve, 50));
    expect((await engine.pipelines.listRuns(WS, pipeline.id)).data).toEqual([]);
  });

  it('runs once at the yearly tick on a virtual clock, and waits for the next one', async () => {
    const clock = new VirtualClock(Date.parse('2026-01-05T00:00:00.000Z'), { settleRealMs: 1 });
    const { engine, pipeline } = await scheduled(clock, '0 0 1 1 *');
    await clock.advance(60 * DAY);
    expect((await engine.pipelines.listRuns(WS, pipeline.id)).data).toEqual([]);
    await clock.advanceTo(Date.parse('2027-01-01T00:00:00.500Z'));
    await eventually(clock, async () => (await engine.pipelines.listRuns(WS, pipeline.id)).data.length === 1);
    await clock.advance(200 * DAY);
    const runs = (await engine.pipelines.listRuns(WS, pipeline.id)).data;
    expect(runs.map((r) => r.status)).toEqual(['succeeded']);
    expect(clock.pendingTimers()).toBeGreaterThan(0);
  });
});

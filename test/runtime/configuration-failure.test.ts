import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, generateSecretKey, sqliteStorage, type Engine, type JsonObject, type PlatformEvent, type Pipeline } from '@ferry/core';
import type { RuntimeOptions } from '@ferry/core/internal';
import { postgres } from '@ferry/postgres';
import { MemoryHub, memoryConnector, eventually, VirtualClock } from '@ferry/testing';
import { getSharedTestPostgres } from '@ferry/test-servers';
import pg from 'pg';

const WS = 'default';
const MINUTE = 60_000;

/**
 * A whole-batch failure that no retry fixes (a missing table, a refused privilege) is a setup
 * problem, not an outage: recorded and announced as `configuration_invalid`, the connector `down`
 * at once, and a streaming pipeline retried at the backoff's cap instead of in a burst. The
 * virtual clock moves only when a test says so; real waits are for I/O, never for time.
 */
describe('a non-retryable configuration failure', () => {
  const engines: Engine[] = [];
  afterEach(async () => {
    await Promise.all(engines.splice(0).map((e) => e.stop()));
  });

  async function setup(runtime: Partial<RuntimeOptions> = {}, destination: { type: string; config: JsonObject } = { type: 'memory', config: { name: 'out' } }) {
    const clock = new VirtualClock(undefined, { settleRealMs: 1 });
    const hub = new MemoryHub({ clock });
    const filename = join(mkdtempSync(join(tmpdir(), 'ferry-config-failure-')), 'ferry.db');
    const engine = await createEngine({
      storage: sqliteStorage({ filename }),
      clock,
      secretKey: generateSecretKey(),
      plugins: [memoryConnector(hub), postgres()],
      // The test Postgres listens on loopback, which the outbound policy refuses unless named.
      outboundAllow: ['127.0.0.1'],
      runtime: { leaseTtlMs: 30 * MINUTE, pollIntervalMs: MINUTE, ...runtime },
    });
    const heard: PlatformEvent[] = [];
    engine.on('*', (e) => heard.push(e));
    await engine.start();
    engines.push(engine);
    for (let i = 0; i < 10; i++) hub.stream('in').push({ type: 'order.created', payload: { n: i } });
    const pipeline = async (schedule: string | null): Promise<Pipeline> => {
      const source = await engine.connectors.create(WS, { type: 'memory', direction: 'source', config: { name: 'in' } });
      const sink = await engine.connectors.create(WS, { ...destination, direction: 'destination' });
      return engine.pipelines.create(WS, { name: 'p', source_connector_id: source.id, destination_connector_id: sink.id, schedule, batch_size: 100, flush_interval_ms: 1000, activate: true });
    };
    const of = (type: string) => heard.filter((e) => e.type === type);
    return { clock, hub, engine, heard, of, pipeline };
  }

  /** Moves the clock on second by second, letting each second's retries (and their I/O) run. */
  async function secondBySecond(clock: VirtualClock, seconds: number): Promise<void> {
    for (let i = 0; i < seconds; i++) {
      await clock.advance(1000);
      await new Promise((resolve) => setTimeout(resolve, 3));
    }
  }

  it('in a streaming pipeline: down at once, one connector.error and one pipeline.failed, then retried once a minute until fixed', async () => {
    const h = await setup();
    const sink = h.hub.sink('out').misconfigure('table_not_found');
    const p = await h.pipeline(null);
    await eventually(h.clock, () => h.of('pipeline.failed').length === 1);
    expect(h.of('pipeline.failed').map((e) => e.data.error)).toEqual(['configuration_invalid']);
    const runs = (await h.engine.pipelines.listRuns(WS, p.id)).data;
    expect(runs.map((r) => [r.status, r.error])).toEqual([['failed', 'configuration_invalid']]);
    await eventually(h.clock, async () => (await h.engine.connectors.get(WS, p.destination_connector_id)).health === 'down');
    const connector = await h.engine.connectors.get(WS, p.destination_connector_id);
    expect(connector.last_error).toMatchObject({ code: 'table_not_found' });
    expect(h.of('connector.health_changed').map((e) => e.data.health)).toEqual(['down']);
    expect(h.of('connector.error').map((e) => e.data.error)).toEqual(['table_not_found']);

    // Not an outage: no burst of retries at 1, 2, 4 s... The next attempt waits for the cap (30 to 60 s with jitter).
    await secondBySecond(h.clock, 29);
    expect(sink.writes).toBe(1);
    await secondBySecond(h.clock, 10 * 60);
    expect(sink.writes).toBeGreaterThanOrEqual(10);
    expect(sink.writes).toBeLessThanOrEqual(21);
    expect(h.of('pipeline.failed')).toHaveLength(1);
    expect(h.of('connector.error')).toHaveLength(1);
    expect(h.of('connector.health_changed')).toHaveLength(1);
    expect(sink.events.size).toBe(0);

    // Fixed outside Ferry: the next attempt (within a minute) delivers, and a new run starts.
    sink.up();
    await eventually(h.clock, () => sink.events.size === 10, 5_000);
    await eventually(h.clock, async () => (await h.engine.connectors.get(WS, p.destination_connector_id)).health === 'healthy');
    expect(h.of('connector.health_changed').map((e) => e.data.health)).toEqual(['down', 'healthy']);
    const after = (await h.engine.pipelines.listRuns(WS, p.id)).data;
    expect(after.map((r) => [r.status, r.error])).toEqual([['failed', 'configuration_invalid'], ['running', null]]);
    expect(h.of('pipeline.failed')).toHaveLength(1);
  });

  it('in a streaming pipeline: a change to its connector retries at once', async () => {
    const h = await setup();
    const sink = h.hub.sink('out').misconfigure('permission_denied');
    const p = await h.pipeline(null);
    await eventually(h.clock, () => h.of('pipeline.failed').length === 1);
    sink.up();
    await h.engine.connectors.update(WS, p.destination_connector_id, { config: { name: 'out' } });
    // No time passes: the update itself wakes the waiting flow.
    await eventually(h.clock, () => sink.events.size === 10);
    expect(sink.writes).toBe(2);
  });

  it('in a scheduled run: fails the run at once with configuration_invalid, after one attempt', async () => {
    const h = await setup({ runRetryAttempts: 8 });
    const sink = h.hub.sink('out').misconfigure('configuration_invalid');
    const p = await h.pipeline('0 * * * *');
    await eventually(h.clock, async () => (await h.engine.pipelines.listRuns(WS, p.id)).data[0]?.status === 'failed', MINUTE);
    const [run] = (await h.engine.pipelines.listRuns(WS, p.id)).data;
    expect(run).toMatchObject({ status: 'failed', error: 'configuration_invalid', events_written: 0 });
    expect(h.of('pipeline.failed').map((e) => e.data)).toEqual([{ pipeline_id: p.id, run_id: run!.id, error: 'configuration_invalid' }]);
    expect(sink.writes).toBe(1);
    await eventually(h.clock, async () => (await h.engine.connectors.get(WS, p.destination_connector_id)).health === 'down');
    expect(h.of('connector.health_changed').map((e) => e.data.health)).toEqual(['down']);
  });

  it('auth_failed keeps its own reason, and turns the connector down at once too', async () => {
    const h = await setup();
    h.hub.sink('out').misconfigure('auth_failed');
    const p = await h.pipeline(null);
    await eventually(h.clock, () => h.of('pipeline.failed').length === 1);
    expect(h.of('pipeline.failed').map((e) => e.data.error)).toEqual(['auth_failed']);
    await eventually(h.clock, async () => (await h.engine.connectors.get(WS, p.destination_connector_id)).health === 'down');
    expect(h.of('connector.health_changed').map((e) => e.data.health)).toEqual(['down']);
  });

  it('with a real postgres destination whose id is bigint: the check is down, the run fails with configuration_invalid, nothing is dead-lettered', async () => {
    const url = await (await getSharedTestPostgres()).createDatabase('config_failure');
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    try {
      await db.query(`CREATE TABLE events (id bigint PRIMARY KEY, type text, occurred_at timestamptz, payload jsonb)`);
      const h = await setup({}, { type: 'postgres', config: { connection_string: url, table: 'events' } });
      const p = await h.pipeline('0 * * * *');
      const check = await h.engine.connectors.check(WS, p.destination_connector_id);
      expect(check).toMatchObject({ health: 'down', error: { code: 'configuration_invalid' } });
      expect(check.error!.message).toContain('"id" is bigint');

      await eventually(h.clock, async () => (await h.engine.pipelines.listRuns(WS, p.id)).data[0]?.status === 'failed', MINUTE);
      const [run] = (await h.engine.pipelines.listRuns(WS, p.id)).data;
      expect(run).toMatchObject({ status: 'failed', error: 'configuration_invalid', events_written: 0, events_dead_lettered: 0 });
      expect(h.of('pipeline.failed').map((e) => e.data.error)).toEqual(['configuration_invalid']);
      expect(h.of('event.dead_lettered')).toHaveLength(0);
      expect((await h.engine.events.list(WS, p.id, {})).data).toHaveLength(0);

      // Fixed: the next run delivers every event.
      await db.query(`ALTER TABLE events ALTER COLUMN id TYPE text`);
      await h.engine.pipelines.triggerRun(WS, p.id);
      await eventually(h.clock, async () => (await h.engine.pipelines.listRuns(WS, p.id)).data[1]?.status === 'succeeded');
      expect((await db.query(`SELECT count(*)::int AS n FROM events`)).rows[0].n).toBe(10);
    } finally {
      await db.end();
    }
  });
});

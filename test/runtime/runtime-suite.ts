import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, generateSecretKey, isFerryError, type Engine, type Logger, type PlatformEvent, type Pipeline, type StorageConfig, type TransformStep } from '@ferry/core';
import type { RuntimeOptions } from '@ferry/core/internal';
import { engineContext } from '@ferry/core/internal';
import { MemoryHub, memoryConnector, eventually, VirtualClock } from '@ferry/testing';

/** A database two engines (or an engine and its successor) can open. */
export interface RuntimeDatabase {
  config(): StorageConfig;
}

/** Creates a fresh database for one test. */
export type RuntimeDatabaseFactory = () => Promise<RuntimeDatabase>;

const WS = 'default';

// FERRY_TEST_LOG=1 prints the engines' warnings and errors, to see why a runtime test waits.
const print = (level: string) => (obj: unknown, msg?: string) => console.log(level, msg ?? '', JSON.stringify(obj));
const quiet = () => undefined;
const logger: Logger | undefined = process.env.FERRY_TEST_LOG
  ? { trace: quiet, debug: quiet, info: quiet, warn: print('warn'), error: print('error'), fatal: print('fatal'), child: () => logger! }
  : undefined;
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

interface Harness {
  clock: VirtualClock;
  hub: MemoryHub;
  engine: Engine;
  heard: PlatformEvent[];
  /** Starts another engine on the same database (a restart, or a second instance). */
  another(options?: { clock?: VirtualClock; runtime?: Partial<RuntimeOptions>; instanceId?: string }): Promise<{ engine: Engine; heard: PlatformEvent[] }>;
}

/**
 * The pipeline runtime's behaviour, with a virtual clock and the memory connector, on one
 * storage dialect. Time moves only when a test says so; {@link eventually} waits for real I/O
 * (a database round trip) between steps of virtual time, never for time itself.
 */
export function runRuntimeSuite(name: string, factory: RuntimeDatabaseFactory): void {
  describe(`pipeline runtime (${name})`, () => {
    const engines: Engine[] = [];
    afterEach(async () => {
      await Promise.all(engines.splice(0).map((e) => e.stop()));
    });

    // Leases outlive the steps of virtual time the tests take (up to ten minutes), so a database
    // round trip still in flight when time jumps never lets one expire; the takeover test sets its own.
    async function setup(options: Partial<RuntimeOptions> = {}, instanceId?: string): Promise<Harness> {
      const runtime = { leaseTtlMs: 30 * MINUTE, pollIntervalMs: MINUTE, ...options };
      const db = await factory();
      // Timers wait a little real time after firing: their callbacks do database I/O before the next one is due.
      const clock = new VirtualClock(undefined, { settleRealMs: 1 });
      const hub = new MemoryHub({ clock });
      const secretKey = generateSecretKey();
      const start = async (c: VirtualClock, r: Partial<RuntimeOptions>, id?: string) => {
        const engine = await createEngine({ storage: db.config(), clock: c, secretKey, plugins: [memoryConnector(hub)], runtime: { ...runtime, ...r }, logger, ...(id === undefined ? {} : { instanceId: id }) });
        const heard: PlatformEvent[] = [];
        engine.on('*', (e) => heard.push(e));
        await engine.start();
        engines.push(engine);
        return { engine, heard };
      };
      const first = await start(clock, {}, instanceId);
      return { clock, hub, ...first, another: (o = {}) => start(o.clock ?? clock, o.runtime ?? {}, o.instanceId) };
    }

    async function pipeline(h: Harness, input: { transforms?: TransformStep[]; schedule?: string | null; batch_size?: number; activate?: boolean; source?: string; sink?: string; mode?: 'pull' | 'push'; pushAhead?: boolean; event_log?: Pipeline['event_log'] } = {}): Promise<Pipeline> {
      const source = await h.engine.connectors.create(WS, {
        type: 'memory',
        direction: 'source',
        config: { name: input.source ?? 'in', mode: input.mode ?? 'pull', token: 'source-secret-token', ...(input.pushAhead ? { push_ahead: true, push_batch_size: 100 } : {}) },
      });
      const destination = await h.engine.connectors.create(WS, { type: 'memory', direction: 'destination', config: { name: input.sink ?? 'out' } });
      return h.engine.pipelines.create(WS, {
        name: `p-${Math.random().toString(36).slice(2, 8)}`,
        source_connector_id: source.id,
        destination_connector_id: destination.id,
        transforms: input.transforms ?? [],
        schedule: input.schedule ?? null,
        batch_size: input.batch_size ?? 100,
        flush_interval_ms: 1000,
        activate: input.activate ?? true,
        ...(input.event_log ? { event_log: input.event_log } : {}),
      });
    }

        /**
     * Moves to each tick in turn and waits for its run to succeed (a tick that found the previous
     * run still queued would add none: moving on only when it is done keeps one run per tick).
     */
    async function untilTicked(h: Harness, pipelineId: string, ticks: string[], succeededBefore: number): Promise<void> {
      for (const [i, tick] of ticks.entries()) {
        await h.clock.advanceTo(Date.parse(`2026-01-01T${tick}:00.500Z`));
        await eventually(h.clock, async () => (await h.engine.pipelines.listRuns(WS, pipelineId)).data.filter((r) => r.status === 'succeeded').length === succeededBefore + i + 1);
      }
    }

    const push = (h: Harness, count: number, from = 0, name = 'in') => {
      for (let i = from; i < from + count; i++) h.hub.stream(name).push({ type: 'order.created', payload: { n: i, email: `u${i}@example.com` } });
    };
    const allEvents = async (h: Harness, id: string, status?: 'delivered' | 'filtered' | 'dead_lettered' | 'replaying') => {
      const out = [];
      let cursor: string | undefined;
      do {
        const page = await h.engine.events.list(WS, id, { limit: 100, cursor, ...(status ? { status } : {}) });
        out.push(...page.data);
        cursor = page.next_cursor ?? undefined;
        if (page.data.length === 0) break;
      } while (cursor);
      return out;
    };

    it('streams a backlog once, in batches, and records every event, the run and its counts', async () => {
      const h = await setup();
      push(h, 250);
      const p = await pipeline(h);
      await eventually(h.clock, () => h.hub.sink('out').events.size === 250);
      expect(h.hub.sink('out').duplicates).toBe(0);
      expect(h.hub.sink('out').writes).toBe(3);
      push(h, 10, 250);
      await eventually(h.clock, () => h.hub.sink('out').events.size === 260, 1000);
      // The destination has them before the event log: its commit follows.
      await eventually(h.clock, async () => (await allEvents(h, p.id)).length === 260);
      const events = await allEvents(h, p.id);
      expect(events).toHaveLength(260);
      expect(new Set(events.map((e) => e.status))).toEqual(new Set(['delivered']));
      expect(events.every((e) => e.attempts === 1 && /^evt_[0-9A-HJKMNP-TV-Z]{26}$/.test(e.id))).toBe(true);
      // Ids are derived from the source position: the destination saw the same ids.
      expect(new Set(events.map((e) => e.id))).toEqual(new Set(h.hub.sink('out').events.keys()));
      const [run] = (await h.engine.pipelines.listRuns(WS, p.id)).data;
      expect(run).toMatchObject({ trigger: 'stream', status: 'running', events_read: 260, events_written: 260, events_dead_lettered: 0 });
      expect(h.heard.map((e) => e.type)).toContain('pipeline.started');
    });

    it('pause waits for the batch in flight; activate resumes from the checkpoint with nothing read twice or skipped', async () => {
      const h = await setup();
      push(h, 300);
      h.hub.sink('out').slow(5000);
      const p = await pipeline(h);
      await eventually(h.clock, () => h.hub.sink('out').writes === 1);
      // While the destination holds the first batch, the second is read ahead, and no more.
      await eventually(h.clock, () => h.hub.stream('in').reads === 2);
      await h.clock.advance(4000);
      expect(h.hub.stream('in').reads).toBe(2);
      const paused = h.engine.pipelines.pause(WS, p.id);
      // The pause commits while the first batch is still being written (time stands still until
      // then: moving it on first could let that batch finish, and the flow take the next, before
      // the pause is in storage).
      await eventually(h.clock, async () => (await h.engine.pipelines.get(WS, p.id)).state === 'paused');
      await eventually(h.clock, () => h.hub.sink('out').events.size === 100, 1000);
      // The batch read ahead is dropped, not written: the pause took effect after the first.
      expect((await paused).state).toBe('paused');
      expect(h.heard.filter((e) => e.type === 'pipeline.completed')).toHaveLength(1);
      // Paused runs nothing, however long.
      await h.clock.advance(HOUR);
      expect(h.hub.sink('out').events.size).toBe(100);
      expect(await allEvents(h, p.id)).toHaveLength(100);
      push(h, 50, 300);
      h.hub.sink('out').slow(0);
      await h.engine.pipelines.activate(WS, p.id);
      await eventually(h.clock, () => h.hub.sink('out').events.size === 350, 1000);
      await eventually(h.clock, async () => (await allEvents(h, p.id)).length === 350);
      expect(h.hub.sink('out').duplicates).toBe(0);
      expect(h.hub.sink('out').log.map((id) => h.hub.sink('out').events.get(id)!.payload.n)).toEqual([...Array(350).keys()]);
      expect(await allEvents(h, p.id)).toHaveLength(350);
      const runs = (await h.engine.pipelines.listRuns(WS, p.id)).data;
      expect(runs.map((r) => r.status)).toEqual(['succeeded', 'running']);
    });

    it('deleting a pipeline with a batch in flight answers deleting, then removes it once the batch committed; connectors and delivered data stay', async () => {
      const h = await setup();
      push(h, 300);
      h.hub.sink('out').slow(5000);
      const p = await pipeline(h);
      await eventually(h.clock, () => h.hub.sink('out').writes === 1);
      const result = await h.engine.pipelines.delete(WS, p.id);
      expect(result.status).toBe('deleting');
      await eventually(h.clock, async () => h.heard.some((e) => e.type === 'pipeline.deleted'), 1000);
      await expect(h.engine.pipelines.get(WS, p.id)).rejects.toSatisfy((e) => isFerryError(e, 'not_found'));
      const types = h.heard.map((e) => e.type);
      expect(types.indexOf('pipeline.completed')).toBeLessThan(types.indexOf('pipeline.deleted'));
      expect(h.hub.sink('out').events.size).toBe(100);
      expect((await h.engine.connectors.list(WS)).data).toHaveLength(2);
    });

    it('a destination down for hours holds the flow: nothing lost, nothing dead-lettered, checkpoint unmoved; health goes degraded then down, then healthy', async () => {
      const h = await setup();
      push(h, 120);
      h.hub.sink('out').down(6 * HOUR);
      const p = await pipeline(h);
      await eventually(h.clock, async () => (await h.engine.connectors.get(WS, p.destination_connector_id)).health === 'down', MINUTE);
      await h.clock.advance(3 * HOUR);
      expect(h.hub.sink('out').events.size).toBe(0);
      expect(await allEvents(h, p.id)).toHaveLength(0);
      expect(h.heard.filter((e) => e.type === 'connector.error')).toHaveLength(1);
      // The pipeline says what it waits on, in its record and in the list.
      const { held } = await h.engine.pipelines.get(WS, p.id);
      expect(held).toMatchObject({ attempts: expect.any(Number), error: { code: expect.any(String), message: expect.any(String) }, events_waiting: 100 });
      expect(held!.attempts).toBeGreaterThan(3);
      expect(Date.parse(held!.since)).toBeLessThan(h.clock.now() - 2 * HOUR);
      expect(Date.parse(held!.next_attempt_at)).toBeGreaterThan(Date.parse(held!.since));
      expect((await h.engine.pipelines.list(WS)).data.find((x) => x.id === p.id)?.held).toEqual(held);
      await eventually(h.clock, () => h.hub.sink('out').events.size === 120, 10 * MINUTE);
      await eventually(h.clock, async () => (await h.engine.pipelines.get(WS, p.id)).held === null);
      await eventually(h.clock, async () => (await h.engine.connectors.get(WS, p.destination_connector_id)).health === 'healthy');
      await eventually(h.clock, async () => (await allEvents(h, p.id)).length === 120);
      const events = await allEvents(h, p.id);
      expect(events.every((e) => e.status === 'delivered')).toBe(true);
      expect(h.hub.sink('out').duplicates).toBe(0);
      const healths = h.heard.filter((e) => e.type === 'connector.health_changed').map((e) => e.data.health);
      expect(healths).toEqual(['degraded', 'down', 'healthy']);
      // A long outage of a streaming pipeline is reported once, and its recovery starts a new run.
      expect(h.heard.filter((e) => e.type === 'pipeline.failed').map((e) => e.data.error)).toEqual(['destination_unavailable']);
      const runs = (await h.engine.pipelines.listRuns(WS, p.id)).data;
      expect(runs.map((r) => [r.status, r.error])).toEqual([['failed', 'destination_unavailable'], ['running', null]]);
    });

    it('poison records are dead-lettered with stage, code and a redacted message, then replayed from that stage', async () => {
      const h = await setup();
      for (let i = 0; i < 20; i++) h.hub.stream('in').push({ type: 'order.created', payload: { n: i, amount: i === 3 ? 'source-secret-token' : String(i) } });
      h.hub.sink('out').reject((e) => e.payload.n === 7);
      const p = await pipeline(h, { transforms: [{ type: 'set', path: 'seen', value: true }, { type: 'cast', path: 'amount', to: 'number' }] });
      await eventually(h.clock, async () => (await allEvents(h, p.id)).length === 20);
      const dead = await allEvents(h, p.id, 'dead_lettered');
      expect(dead).toHaveLength(2);
      const byN = new Map(dead.map((e) => [e.payload!.n, e]));
      expect(byN.get(3)!.error).toMatchObject({ stage: 'transform:1' });
      expect(byN.get(3)!.error!.message).not.toContain('source-secret-token');
      expect(byN.get(3)!.attempts).toBe(3);
      expect(byN.get(7)!.error).toMatchObject({ stage: 'destination', code: 'record_rejected' });
      expect(byN.get(7)!.payload).toMatchObject({ n: 7, seen: true, amount: 7 });
      // Announced once committed: on the SQLite writer thread the rows can be read a moment before
      // the engine hears its commit answered and publishes.
      const announced = () => h.heard.filter((e) => e.type === 'event.dead_lettered').map((e) => String(e.data.event_id)).sort();
      await eventually(h.clock, () => announced().length === 2);
      expect(announced()).toEqual(dead.map((e) => e.id).sort());
      // A replay of something else is refused.
      const delivered = (await allEvents(h, p.id, 'delivered'))[0]!;
      await expect(h.engine.events.replay(WS, delivered.id)).rejects.toSatisfy((e) => isFerryError(e, 'event_not_dead_lettered'));

      // The destination's cause is fixed: the replay goes straight to the destination, steps not re-run.
      h.hub.sink('out').acceptAll();
      await h.engine.pipelines.update(WS, p.id, { transforms: [{ type: 'set', path: 'seen', value: 'again' }, { type: 'cast', path: 'amount', to: 'string' }] });
      expect((await h.engine.events.replay(WS, byN.get(7)!.id)).status).toBe('replaying');
      await eventually(h.clock, async () => (await h.engine.events.get(WS, byN.get(7)!.id)).status !== 'replaying');
      expect(h.hub.sink('out').events.get(byN.get(7)!.id)!.payload).toEqual({ n: 7, seen: true, amount: 7 });
      // The step failure replays from that step, with the pipeline's current steps: step 0 is not re-run.
      await h.engine.events.replay(WS, byN.get(3)!.id);
      await eventually(h.clock, async () => (await h.engine.events.get(WS, byN.get(3)!.id)).status !== 'replaying');
      expect(h.hub.sink('out').events.get(byN.get(3)!.id)!.payload).toEqual({ n: 3, seen: true, amount: 'source-secret-token' });
      const after = await h.engine.events.get(WS, byN.get(3)!.id);
      expect(after).toMatchObject({ status: 'delivered', attempts: 4 });
      expect(await allEvents(h, p.id, 'dead_lettered')).toHaveLength(0);
    });

    it('bulk replay re-runs every matching dead-lettered event once', async () => {
      const h = await setup();
      push(h, 60);
      h.hub.sink('out').reject((e) => (e.payload.n as number) % 3 === 0);
      const p = await pipeline(h, { batch_size: 25 });
      await eventually(h.clock, async () => (await allEvents(h, p.id, 'dead_lettered')).length === 20);
      expect(h.hub.sink('out').events.size).toBe(40);
      h.hub.sink('out').acceptAll();
      expect(await h.engine.events.replayMany(WS, p.id, {})).toEqual({ count: 20 });
      expect(await h.engine.events.replayMany(WS, p.id, {})).toEqual({ count: 0 });
      await eventually(h.clock, () => h.hub.sink('out').events.size === 60);
      await eventually(h.clock, async () => (await allEvents(h, p.id, 'delivered')).length === 60);
      expect(h.hub.sink('out').duplicates).toBe(0);
    });

    it('a pipeline that keeps payloads of failed events only logs every event, with the payload of the dead-lettered ones', async () => {
      const h = await setup();
      push(h, 30);
      h.hub.sink('out').reject((e) => (e.payload.n as number) % 10 === 0);
      const p = await pipeline(h, { batch_size: 10, event_log: { payloads: 'failed', retention_days: null } });
      await eventually(h.clock, async () => (await allEvents(h, p.id)).length === 30);
      const delivered = await allEvents(h, p.id, 'delivered');
      expect(delivered).toHaveLength(27);
      expect(delivered.every((e) => e.payload === null && e.type === 'order.created' && e.attempts === 1)).toBe(true);
      expect((await allEvents(h, p.id, 'dead_lettered')).map((e) => e.payload!.n).sort()).toEqual([0, 10, 20]);
      // What the destination received is whole: only the log is lean.
      expect([...h.hub.sink('out').events.values()].every((e) => typeof e.payload.n === 'number')).toBe(true);
    });

    it('applies every built-in step; filtered events are listed as filtered', async () => {
      const h = await setup();
      h.hub.stream('in').push(
        { type: 'order.created', payload: { n: 1, status: 'paid', customer: { email: 'a@example.com', name: 'A' }, total: '12.5', internal: 1 } },
        { type: 'order.created', payload: { n: 2, status: 'open', customer: { email: 'b@example.com', name: 'B' }, total: '3', internal: 1 } },
      );
      const p = await pipeline(h, {
        transforms: [
          { type: 'filter', path: 'status', op: 'eq', value: 'paid' },
          { type: 'set', path: 'source', value: 'shop' },
          { type: 'rename', from: 'customer.name', to: 'customer.full_name' },
          { type: 'drop', paths: ['internal'] },
          { type: 'mask', path: 'customer.email' },
          { type: 'retype', to: 'order.{payload.status}' },
          { type: 'cast', path: 'total', to: 'number' },
        ],
      });
      await eventually(h.clock, async () => (await allEvents(h, p.id)).length === 2);
      const [out] = [...h.hub.sink('out').events.values()];
      expect(h.hub.sink('out').events.size).toBe(1);
      expect(out!.type).toBe('order.paid');
      expect(out!.payload).toMatchObject({ n: 1, status: 'paid', source: 'shop', total: 12.5, customer: { full_name: 'A' } });
      expect(out!.payload).not.toHaveProperty('internal');
      expect((out!.payload.customer as { email: string }).email).toMatch(/^[0-9a-f]{64}$/);
      const filtered = await allEvents(h, p.id, 'filtered');
      expect(filtered.map((e) => e.payload!.n)).toEqual([2]);
      const [run] = (await h.engine.pipelines.listRuns(WS, p.id)).data;
      expect(run).toMatchObject({ events_read: 2, events_written: 1, events_filtered: 1 });
    });

    it('runs a scheduled pipeline once per tick, takes manual runs, and catches up missed ticks once after downtime', async () => {
      const h = await setup();
      push(h, 30);
      const p = await pipeline(h, { schedule: '*/10 * * * *' });
      await eventually(h.clock, async () => (await h.engine.pipelines.listRuns(WS, p.id)).data[0]?.status === 'succeeded', MINUTE);
      const first = (await h.engine.pipelines.listRuns(WS, p.id)).data;
      expect(first).toHaveLength(1);
      expect(first[0]).toMatchObject({ trigger: 'schedule', status: 'succeeded', events_read: 30, scheduled_for: '2026-01-01T00:10:00.000Z' });
      expect(h.heard.filter((e) => e.type === 'pipeline.started' || e.type === 'pipeline.completed').map((e) => e.type)).toEqual(['pipeline.started', 'pipeline.completed']);
      await untilTicked(h, p.id, ['00:20', '00:30'], 1);
      const ticks = (await h.engine.pipelines.listRuns(WS, p.id)).data.map((r) => r.scheduled_for);
      expect(ticks).toEqual(['2026-01-01T00:10:00.000Z', '2026-01-01T00:20:00.000Z', '2026-01-01T00:30:00.000Z']);
      // A manual run, besides the schedule.
      push(h, 5, 30);
      const manual = await h.engine.pipelines.triggerRun(WS, p.id);
      expect(manual.status).toBe('queued');
      await eventually(h.clock, () => h.hub.sink('out').events.size === 35);
      await eventually(h.clock, async () => (await h.engine.pipelines.listRuns(WS, p.id)).data.at(-1)!.status === 'succeeded');

      // Down from 00:31 to 03:05: the 15 missed ticks are caught up by one run, for the latest.
      await h.engine.stop();
      h.clock.set(Date.parse('2026-01-01T03:05:00.000Z'));
      const second = await h.another();
      await eventually(h.clock, async () => (await second.engine.pipelines.listRuns(WS, p.id)).data.length === 5);
      const runs = (await second.engine.pipelines.listRuns(WS, p.id)).data;
      expect(runs.at(-1)).toMatchObject({ trigger: 'schedule', scheduled_for: '2026-01-01T03:00:00.000Z' });
      await eventually(h.clock, async () => (await second.engine.pipelines.listRuns(WS, p.id)).data.at(-1)!.status === 'succeeded');
      expect(h.hub.sink('out').duplicates).toBe(0);
    });

    it('a tick that finds a run still queued adds none; a run queued for a paused pipeline is cancelled', async () => {
      // No run executes here: the queued one waits through the next ticks.
      const h = await setup({ runConcurrency: 0 });
      const p = await pipeline(h, { schedule: '*/10 * * * *' });
      for (const tick of ['00:10', '00:20', '00:30']) {
        await h.clock.advanceTo(Date.parse(`2026-01-01T${tick}:00.500Z`));
        await eventually(h.clock, async () => (await h.engine.pipelines.get(WS, p.id)).state === 'active');
      }
      await eventually(h.clock, async () => (await h.engine.pipelines.listRuns(WS, p.id)).data.length === 1);
      await h.clock.advance(1_000);
      const runs = (await h.engine.pipelines.listRuns(WS, p.id)).data;
      expect(runs.map((r) => [r.status, r.scheduled_for])).toEqual([['queued', '2026-01-01T00:10:00.000Z']]);
      // Paused before any engine took it up: the engine that claims it cancels it.
      await h.engine.pipelines.pause(WS, p.id);
      const worker = await h.another({ runtime: { runConcurrency: 1 } });
      await eventually(h.clock, async () => (await worker.engine.pipelines.listRuns(WS, p.id)).data[0]!.status !== 'queued');
      expect((await worker.engine.pipelines.listRuns(WS, p.id)).data[0]).toMatchObject({ status: 'failed', error: 'cancelled', events_read: 0 });
    });

    it('a connector whose config changes is opened again before the next batch', async () => {
      const h = await setup();
      push(h, 10);
      const p = await pipeline(h);
      await eventually(h.clock, async () => (await allEvents(h, p.id)).length === 10);
      await h.engine.connectors.update(WS, p.destination_connector_id, { config: { name: 'elsewhere' } });
      push(h, 5, 10);
      await eventually(h.clock, () => h.hub.sink('elsewhere').events.size === 5, 1000);
      expect(h.hub.sink('out').events.size).toBe(10);
      expect(h.hub.sink('elsewhere').payloads().map((x) => x.n)).toEqual([10, 11, 12, 13, 14]);
    });

    for (const mode of ['pull', 'push'] as const) {
      it(`a held batch is retried with the destination's new settings: a PATCH reaches the batch waiting for it (${mode} source)`, async () => {
        const h = await setup();
        push(h, 10);
        h.hub.sink('out').down(6 * HOUR);
        const p = await pipeline(h, { mode });
        await eventually(h.clock, async () => (await h.engine.connectors.get(WS, p.destination_connector_id)).health === 'down', MINUTE);
        // The fix, made while the batch is held: the next attempt goes to the new place, at once.
        await h.engine.connectors.update(WS, p.destination_connector_id, { config: { name: 'fixed' } });
        await eventually(h.clock, () => h.hub.sink('fixed').events.size === 10, 1000);
        expect(h.hub.sink('out').accepted).toBe(0);
        expect(h.hub.sink('fixed').payloads().map((x) => x.n)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        await eventually(h.clock, async () => (await allEvents(h, p.id)).length === 10);
        // The events after it go there too, and nothing was sent twice.
        push(h, 3, 10);
        await eventually(h.clock, () => h.hub.sink('fixed').events.size === 13, 1000);
        expect(h.hub.sink('fixed').duplicates).toBe(0);
      });
    }

    for (const mode of ['pull', 'push'] as const) {
      it(`a failing read is retried with the source's new settings (${mode} source)`, async () => {
        const h = await setup();
        push(h, 5);
        push(h, 4, 100, 'moved');
        h.hub.stream('in').down(6 * HOUR);
        const p = await pipeline(h, { mode });
        await eventually(h.clock, async () => (await h.engine.connectors.get(WS, p.source_connector_id)).health === 'down', MINUTE);
        await h.engine.connectors.update(WS, p.source_connector_id, { config: { name: 'moved' } });
        await eventually(h.clock, () => h.hub.sink('out').events.size === 4, 1000);
        expect(h.hub.sink('out').payloads().map((x) => x.n)).toEqual([100, 101, 102, 103]);
      });
    }

    it("a held batch is retried with the pipeline's new steps and batch size", async () => {
      const h = await setup();
      push(h, 30);
      const sink = h.hub.sink('out').limitBatch(10);
      const p = await pipeline(h, { batch_size: 100 });
      // Every write of the 30 is refused as too large: the batch is held, not dead-lettered.
      await eventually(h.clock, () => sink.writes >= 2, MINUTE);
      expect(sink.accepted).toBe(0);
      await h.engine.pipelines.update(WS, p.id, { batch_size: 10, transforms: [{ type: 'set', path: 'fixed', value: true }] });
      await eventually(h.clock, () => sink.events.size === 30, 1000);
      expect(sink.largestWrite).toBe(10);
      expect(sink.payloads().every((x) => x.fixed === true)).toBe(true);
      expect(sink.duplicates).toBe(0);
      await eventually(h.clock, async () => (await allEvents(h, p.id)).length === 30);
      expect((await allEvents(h, p.id)).every((e) => e.status === 'delivered')).toBe(true);
    });

    it('two engines on one database record each tick once', async () => {
      const h = await setup();
      const other = await h.another();
      push(h, 10);
      const p = await pipeline(h, { schedule: '*/10 * * * *' });
      // The other engine learns of the pipeline at its next poll.
      await h.clock.advance(MINUTE + 1_000);
      await untilTicked(h, p.id, ['00:10', '00:20', '00:30', '00:40'], 0);
      const runs = (await other.engine.pipelines.listRuns(WS, p.id)).data;
      expect(runs.map((r) => r.scheduled_for)).toEqual(['2026-01-01T00:10:00.000Z', '2026-01-01T00:20:00.000Z', '2026-01-01T00:30:00.000Z', '2026-01-01T00:40:00.000Z']);
      expect(h.hub.sink('out').duplicates).toBe(0);
    });

    it('a scheduled run whose destination stays down fails with a reason code; the checkpoint stays and nothing is dead-lettered', async () => {
      const h = await setup({ runRetryAttempts: 4 });
      push(h, 10);
      h.hub.sink('out').down(24 * HOUR);
      const p = await pipeline(h, { schedule: '0 * * * *' });
      await eventually(h.clock, async () => (await h.engine.pipelines.listRuns(WS, p.id)).data[0]?.status === 'failed', MINUTE);
      const [run] = (await h.engine.pipelines.listRuns(WS, p.id)).data;
      expect(run).toMatchObject({ status: 'failed', error: 'destination_unavailable', events_written: 0 });
      const failed = h.heard.filter((e) => e.type === 'pipeline.failed');
      expect(failed.map((e) => e.data)).toEqual([{ pipeline_id: p.id, run_id: run!.id, error: 'destination_unavailable' }]);
      expect(await allEvents(h, p.id)).toHaveLength(0);
      // The next tick after the outage moves everything.
      h.hub.sink('out').up();
      await eventually(h.clock, () => h.hub.sink('out').events.size === 10, 10 * MINUTE);
    });

    it('a streaming pipeline is consumed by one engine; another takes over from the checkpoint when the holder dies', async () => {
      const h = await setup({ leaseTtlMs: 30_000, pollIntervalMs: 5_000 });
      push(h, 100);
      const p = await pipeline(h);
      await eventually(h.clock, () => h.hub.sink('out').events.size === 100);
      await eventually(h.clock, async () => (await allEvents(h, p.id)).length === 100);
      // A second engine with a clock of its own: the first one "dies" by never running a timer again.
      const clockB = new VirtualClock(h.clock.now(), { settleRealMs: 1 });
      const b = await h.another({ clock: clockB });
      await clockB.advance(10_000);
      expect(b.heard.filter((e) => e.type === 'pipeline.started')).toHaveLength(0);
      push(h, 50, 100);
      await eventually(clockB, () => h.hub.sink('out').events.size === 150, 5_000);
      await eventually(clockB, async () => (await allEvents(h, p.id)).length === 150);
      expect(h.hub.sink('out').duplicates).toBe(0);
      const runs = (await b.engine.pipelines.listRuns(WS, p.id)).data;
      expect(runs.map((r) => [r.status, r.error])).toEqual([['failed', 'interrupted'], ['running', null]]);
      expect(await allEvents(h, p.id)).toHaveLength(150);
    });

    it('an engine started with the instance id of one that died takes its pipeline back at once, not after the lease time', async () => {
      const h = await setup({ leaseTtlMs: 30 * MINUTE, pollIntervalMs: 5_000 }, 'worker-1');
      push(h, 100);
      const p = await pipeline(h);
      await eventually(h.clock, async () => h.hub.sink('out').events.size === 100 && (await allEvents(h, p.id)).length === 100);
      // The first engine "dies" (its clock never runs a timer again); a supervisor starts the same id again.
      const clockB = new VirtualClock(h.clock.now(), { settleRealMs: 1 });
      const b = await h.another({ clock: clockB, instanceId: 'worker-1' });
      push(h, 50, 100);
      // At most 100 s of virtual time: far inside the 30-minute lease the first engine holds.
      await eventually(clockB, async () => h.hub.sink('out').events.size === 150 && (await allEvents(h, p.id)).length === 150, 1_000, 100);
      expect(h.hub.sink('out').duplicates).toBe(0);
      // Both runs started at the same virtual time: their order is the ids'.
      const runs = (await b.engine.pipelines.listRuns(WS, p.id)).data;
      expect(runs.map((r) => [r.status, r.error]).sort()).toEqual([['failed', 'interrupted'], ['running', null]]);
    });

    it('streaming pipelines spread over the engines that run them, and come back when one leaves', async () => {
      const h = await setup({ leaseTtlMs: 30_000, pollIntervalMs: 5_000 });
      const names = ['a', 'b', 'c', 'd', 'e'];
      for (const name of names) push(h, 100, 0, `in-${name}`);
      const pipelines = [];
      for (const name of names) pipelines.push(await pipeline(h, { source: `in-${name}`, sink: `out-${name}` }));
      const holders = async () => {
        const rows = await engineContext(h.engine).storage.knex('leases').where('name', 'like', 'pipeline:%').andWhere('expires_at', '>', new Date(h.clock.now()).toISOString()).select('holder');
        const count = new Map<string, number>();
        for (const row of rows as { holder: string }[]) count.set(row.holder, (count.get(row.holder) ?? 0) + 1);
        return count;
      };
      const delivered = (from: number) => names.every((name) => h.hub.sink(`out-${name}`).events.size === from);
      const a = engineContext(h.engine).instanceId;
      // Alone, an engine reads every pipeline at once.
      await eventually(h.clock, async () => delivered(100) && (await holders()).get(a) === 5);

      // A second engine joins: the first hands over what is beyond its share (3 of 5), after the batch in flight.
      const other = await h.another();
      const b = engineContext(other.engine).instanceId;
      await eventually(h.clock, async () => {
        const count = await holders();
        return count.get(a) === 3 && count.get(b) === 2;
      }, 5_000, 100);
      for (const name of names) push(h, 100, 100, `in-${name}`);
      await eventually(h.clock, () => delivered(200), 1_000);
      // The spread stays put: nobody hands over what is within its share.
      await h.clock.advance(60_000);
      const settled = await holders();
      expect([settled.get(a), settled.get(b)]).toEqual([3, 2]);

      // The engines cannot be counted (the leases table refuses that query): each poll goes on
      // with the last count, so a pipeline activated meanwhile is still taken up.
      const leaseRepos = [h.engine, other.engine].map((e) => engineContext(e).storage.repos.leases);
      const counts = leaseRepos.map((repo) => repo.countHeld);
      for (const repo of leaseRepos) repo.countHeld = () => Promise.reject(new Error('the leases table refuses'));
      push(h, 100, 0, 'in-f');
      const late = await pipeline(h, { source: 'in-f', sink: 'out-f' });
      await eventually(h.clock, () => h.hub.sink('out-f').events.size === 100, 1_000);
      const meanwhile = await holders();
      expect((meanwhile.get(a) ?? 0) + (meanwhile.get(b) ?? 0)).toBe(6);
      leaseRepos.forEach((repo, i) => (repo.countHeld = counts[i]!));
      names.push('f');
      pipelines.push(late);
      push(h, 100, 100, 'in-f');

      // The second engine stops: its pipelines come back to the first, from their checkpoints.
      await other.engine.stop();
      for (const name of names) push(h, 100, 200, `in-${name}`);
      await eventually(h.clock, async () => delivered(300) && (await holders()).get(a) === names.length, 5_000, 100);
      for (const name of names) expect(h.hub.sink(`out-${name}`).duplicates).toBe(0);
      for (const p of pipelines) expect(await allEvents(h, p.id)).toHaveLength(300);
    });

    it('push sources are awaited: one batch at a time, and pause/activate loses nothing', async () => {
      const h = await setup();
      push(h, 1200);
      h.hub.sink('out').slow(1000);
      const p = await pipeline(h, { mode: 'push' });
      await eventually(h.clock, () => h.hub.sink('out').events.size >= 500, 1000);
      // The source is never ahead of the destination by more than the batch being written.
      expect(h.hub.stream('in').reads - h.hub.sink('out').writes).toBeLessThanOrEqual(1);
      // The pause answers once the batch in flight is written, which the slow sink does on the
      // virtual clock: the clock moves until it has answered.
      let answered = false;
      const paused = h.engine.pipelines.pause(WS, p.id).then(() => (answered = true));
      await eventually(h.clock, async () => (await h.engine.pipelines.get(WS, p.id)).state === 'paused', 1000);
      await eventually(h.clock, () => answered, 1000);
      await paused;
      const atPause = h.hub.sink('out').events.size;
      await h.clock.advance(HOUR);
      expect(h.hub.sink('out').events.size).toBe(atPause);
      h.hub.sink('out').slow(0);
      await h.engine.pipelines.activate(WS, p.id);
      await eventually(h.clock, () => h.hub.sink('out').events.size === 1200, 1000);
      expect(h.hub.sink('out').duplicates).toBe(0);
      // An idle push source calls no handler; a pause still ends the stream at once.
      await eventually(h.clock, async () => (await allEvents(h, p.id)).length === 1200);
      const completed = h.heard.filter((e) => e.type === 'pipeline.completed').length;
      expect((await h.engine.pipelines.pause(WS, p.id)).state).toBe('paused');
      expect(h.heard.filter((e) => e.type === 'pipeline.completed')).toHaveLength(completed + 1);
    });

    it('a push source handing over the next batch before the last committed: each is written while the one before commits, in order, and pause/activate loses nothing', async () => {
      const h = await setup();
      push(h, 1200);
      const p = await pipeline(h, { mode: 'push', pushAhead: true });
      await eventually(h.clock, () => h.hub.sink('out').events.size >= 500, 1000);
      // The pause answers once the batch in flight is written, which the slow sink does on the
      // virtual clock: the clock moves until it has answered.
      let answered = false;
      const paused = h.engine.pipelines.pause(WS, p.id).then(() => (answered = true));
      await eventually(h.clock, async () => (await h.engine.pipelines.get(WS, p.id)).state === 'paused', 1000);
      await eventually(h.clock, () => answered, 1000);
      await paused;
      await h.engine.pipelines.activate(WS, p.id);
      await eventually(h.clock, async () => (await engineContext(h.engine).storage.repos.checkpoints.get(p.id)) === 1200, 1000);
      const sink = h.hub.sink('out');
      expect(sink.events.size).toBe(1200);
      // Written in the source's order: the destination saw no batch before the one preceding it.
      const order = [...sink.events.values()].map((e) => (e.payload as { n: number }).n);
      expect(order).toEqual([...order].sort((a, b) => a - b));
      const stream = h.hub.stream('in');
      expect(stream.maxHanded).toBe(2);
      expect(stream.settledOutOfOrder).toBe(0);
      expect(await allEvents(h, p.id)).toHaveLength(1200);
      const [run] = (await h.engine.pipelines.listRuns(WS, p.id)).data;
      expect(run?.events_read).toBeGreaterThan(0);
    });

    it('a batch whose commit is refused leaves neither events nor their notifications (outbox atomicity)', async () => {
      const h = await setup();
      h.hub.stream('in').push({ type: 'order.created', payload: { n: 0 } }, { type: 'order.created', payload: { n: 1 } });
      h.hub.sink('out').reject((e) => e.payload.n === 1).slow(1000);
      const p = await pipeline(h);
      await eventually(h.clock, () => h.hub.sink('out').writes === 1);
      // Another engine "takes over" the pipeline while the batch is being written: the commit is refused.
      await engineContext(h.engine).storage.knex('leases').where({ name: `pipeline:${p.id}` }).update({ token: 'someone-else', holder: 'someone-else' });
      await eventually(h.clock, () => h.hub.sink('out').writes >= 3, 1000);
      await h.clock.advance(5_000);
      expect(await allEvents(h, p.id)).toHaveLength(0);
      const outbox = await engineContext(h.engine).storage.repos.outbox.listForWorkspace(WS);
      expect(outbox.some((e) => e.type === 'event.dead_lettered')).toBe(false);
      expect(h.heard.some((e) => e.type === 'event.dead_lettered')).toBe(false);
      // Committed dead letters are announced from the same transaction, heard by `on` and `platformEvents$` alike.
      await engineContext(h.engine).storage.knex('leases').where({ name: `pipeline:${p.id}` }).delete();
      const streamed: string[] = [];
      const sub = h.engine.platformEvents$.subscribe((e) => streamed.push(e.type));
      await eventually(h.clock, async () => (await allEvents(h, p.id)).length === 2, 5_000);
      // Published once the engine hears the commit answered (a moment after the rows can be read, on the writer thread).
      await eventually(h.clock, () => streamed.includes('event.dead_lettered'));
      sub.unsubscribe();
      const stored = (await engineContext(h.engine).storage.repos.outbox.listForWorkspace(WS)).filter((e) => e.type === 'event.dead_lettered');
      expect(stored).toHaveLength(1);
      expect(h.heard.filter((e) => e.type === 'event.dead_lettered').map((e) => e.id)).toEqual(stored.map((e) => e.id));
      expect(streamed).toContain('event.dead_lettered');
    });

    it('engine.stop() lets the batch in flight commit, releases the lease, and a restart resumes with no duplicate', async () => {
      const h = await setup();
      push(h, 300);
      h.hub.sink('out').slow(5000);
      const p = await pipeline(h);
      await eventually(h.clock, () => h.hub.sink('out').writes === 1);
      const stopping = h.engine.stop();
      await eventually(h.clock, () => h.hub.sink('out').events.size === 100, 1000);
      await stopping;
      expect(h.hub.sink('out').writes).toBe(1);
      h.hub.sink('out').slow(0);
      const next = await h.another();
      await eventually(h.clock, () => h.hub.sink('out').events.size === 300, 1000);
      expect(h.hub.sink('out').duplicates).toBe(0);
      const runs = (await next.engine.pipelines.listRuns(WS, p.id)).data;
      expect(runs.map((r) => r.status)).toEqual(['succeeded', 'running']);
      // A graceful stop hands the stream over silently: no pipeline.completed for it.
      expect(h.heard.filter((e) => e.type === 'pipeline.completed')).toHaveLength(0);
    });

    it('a scheduled run interrupted by engine.stop() goes back to the queue and the next engine finishes it', async () => {
      const h = await setup();
      push(h, 300);
      h.hub.sink('out').slow(5000);
      const p = await pipeline(h, { schedule: '0 * * * *' });
      await h.clock.advanceTo(Date.parse('2026-01-01T01:00:00.000Z'));
      await eventually(h.clock, () => h.hub.sink('out').writes === 1);
      const stopping = h.engine.stop();
      await eventually(h.clock, () => h.hub.sink('out').events.size === 100, 1000);
      await stopping;
      // Back in the queue, with what it did so far.
      const viewer = await h.another({ runtime: { enabled: false } });
      expect((await viewer.engine.pipelines.listRuns(WS, p.id)).data[0]).toMatchObject({ status: 'queued', events_read: 100 });
      h.hub.sink('out').slow(0);
      const next = await h.another();
      await eventually(h.clock, async () => (await next.engine.pipelines.listRuns(WS, p.id)).data[0]?.status === 'succeeded', 1000);
      const [run] = (await next.engine.pipelines.listRuns(WS, p.id)).data;
      expect(run).toMatchObject({ trigger: 'schedule', events_read: 300, events_written: 300 });
      expect(h.hub.sink('out').events.size).toBe(300);
      expect(h.hub.sink('out').duplicates).toBe(0);
    });
  });
}

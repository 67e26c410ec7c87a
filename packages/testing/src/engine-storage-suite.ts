import { Type } from '@sinclair/typebox';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createEngine, defineConnector, generateSecretKey, isFerryError, Secret, type Engine, type ErrorCode, type PlatformEvent } from '@ferry/core';
import { engineContext } from '@ferry/core/internal';
import type { StorageFactory } from './storage-suite.js';
import { VirtualClock } from './virtual-clock.js';

/** A connector type for engine tests: a secret token, a nested secret, and a check that sees clear values. */
const vault = defineConnector({
  type: 'vault',
  version: '1.0.0',
  directions: ['source', 'destination'],
  configSchema: Type.Object(
    {
      table: Type.String({ minLength: 1 }),
      token: Secret(Type.String({ minLength: 8 })),
      port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, default: 5432 })),
      auth: Type.Optional(Type.Object({ user: Type.String(), password: Secret(Type.String()) }, { additionalProperties: false })),
    },
    { additionalProperties: false },
  ),
  check: async (ctx) =>
    ctx.config.token === 'token-that-works'
      ? { health: 'healthy', latencyMs: 3 }
      : { health: 'down', latencyMs: 3, error: { code: 'auth_failed', message: `login refused for ${ctx.config.token}` } },
});

const hook = defineConnector({
  type: 'hook',
  version: '1.0.0',
  directions: ['source', 'destination', 'bidirectional'],
  configSchema: Type.Object({ url: Type.Optional(Type.String()), retries: Type.Optional(Type.Integer({ default: 3 })) }, { additionalProperties: false }),
  // A destination needs a url; the schema alone cannot say so for one direction only.
  validateConfig: (config, direction) => {
    const problems = direction !== 'source' && config.url === undefined ? [{ pointer: '/url', code: 'required', detail: 'A destination needs a url.' }] : [];
    // Defaults are applied before the plugin's rules run.
    if (config.retries === undefined) problems.push({ pointer: '/retries', code: 'missing_default', detail: 'defaults not applied' });
    return problems;
  },
});

async function expectError(promise: Promise<unknown>, code: ErrorCode): Promise<NonNullable<unknown>> {
  try {
    await promise;
  } catch (error) {
    if (isFerryError(error, code)) return error;
    throw new Error(`expected ${code}, got ${isFerryError(error) ? error.code : String(error)}`);
  }
  throw new Error(`expected ${code}, but it succeeded`);
}

/**
 * The engine's rules on a given storage: services, cursors, the outbox and secrets at rest.
 * Run it for each dialect next to {@link runStorageSuite}.
 */
export function runEngineStorageSuite(name: string, factory: StorageFactory): void {
  describe(`engine on storage: ${name}`, () => {
    let clock: VirtualClock;
    let engine: Engine;
    let events: PlatformEvent[];

    beforeEach(async () => {
      clock = new VirtualClock();
      engine = await createEngine({ storage: await factory(), secretKey: generateSecretKey(), clock, plugins: [vault, hook], outboundAllow: ['127.0.0.1'] });
      await engine.start();
      events = [];
      engine.on('*', (e) => events.push(e));
    });

    afterEach(async () => {
      await engine.stop();
    });

    const source = (ws = 'acme', token = 'token-that-works') =>
      engine.connectors.create(ws, { type: 'vault', direction: 'source', config: { table: 'orders', token } });
    const destination = (ws = 'acme') =>
      engine.connectors.create(ws, { type: 'vault', direction: 'destination', config: { table: 'copy', token: 'token-that-works' } });

    it('stores connector secrets encrypted, never returns them, keeps them across a redacted round trip', async () => {
      const created = await engine.connectors.create('acme', {
        type: 'vault',
        direction: 'source',
        config: { table: 'orders', token: 'super-secret-token-1', auth: { user: 'app', password: 'p4ssw0rd-nested' } },
      });
      expect(created.config).toEqual({ table: 'orders', token: '********', auth: { user: 'app', password: '********' } });
      const raw = await engineContext(engine).storage.knex('connectors').where({ id: created.id }).first();
      const rawText = JSON.stringify(raw);
      expect(rawText).not.toContain('super-secret-token-1');
      expect(rawText).not.toContain('p4ssw0rd-nested');
      expect(String(raw.secrets)).toMatch(/^v1\./);
      // Sending the redacted config back keeps the stored secrets.
      const updated = await engine.connectors.update('acme', created.id, { config: { ...created.config, table: 'orders_v2' } });
      expect(updated.config).toMatchObject({ table: 'orders_v2', token: '********' });
      const check = await engine.connectors.check('acme', created.id);
      expect(check.health).toBe('down');
      // The plugin saw the clear token and put it in its message; it never reaches the caller.
      expect(check.error?.message).toBe('login refused for ********');
      expect(JSON.stringify(events)).not.toContain('super-secret-token-1');
      const fixed = await engine.connectors.update('acme', created.id, { config: { token: 'token-that-works' } });
      expect(fixed.config.token).toBe('********');
      expect((await engine.connectors.check('acme', created.id)).health).toBe('healthy');
      expect(events.map((e) => e.type)).toEqual(['connector.health_changed', 'connector.error', 'connector.health_changed']);
    });

    it('validates connector input with field errors and the direction rules', async () => {
      const bad = await expectError(engine.connectors.create('acme', { type: 'vault', direction: 'source', config: { token: 'sEcr3t', extra: 1 } }), 'validation_failed');
      expect((bad as { errors: { pointer: string; code: string }[] }).errors).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ pointer: '/config/table', code: 'required' }),
          expect.objectContaining({ pointer: '/config/token', code: 'too_short' }),
          expect.objectContaining({ pointer: '/config/extra', code: 'unknown_field' }),
        ]),
      );
      expect(JSON.stringify(bad)).not.toContain('sEcr3t');
      const direction = await expectError(engine.connectors.create('acme', { type: 'vault', direction: 'bidirectional', config: { table: 't', token: 'token-that-works' } }), 'invalid_direction');
      expect((direction as { errors: { pointer: string }[] }).errors[0]?.pointer).toBe('/direction');
      const placeholder = await expectError(engine.connectors.create('acme', { type: 'vault', direction: 'source', config: { table: 't', token: '********' } }), 'validation_failed');
      expect((placeholder as { errors: { pointer: string; code: string }[] }).errors).toEqual([expect.objectContaining({ pointer: '/config/token', code: 'redacted_value' })]);
      await expectError(engine.connectors.create('acme', { type: 'nope', direction: 'source', config: {} }), 'validation_failed');
      const ro = await expectError(engine.connectors.create('acme', { type: 'hook', direction: 'bidirectional', config: {}, health: 'down' } as never), 'validation_failed');
      expect((ro as { errors: { code: string }[] }).errors[0]?.code).toBe('read_only');
      expect((await engine.connectors.create('acme', { type: 'hook', direction: 'bidirectional', config: { url: 'https://example.com' } })).direction).toBe('bidirectional');
      // The plugin's own rules, per direction, on create and on update.
      const needsUrl = await expectError(engine.connectors.create('acme', { type: 'hook', direction: 'destination', config: {} }), 'validation_failed');
      expect((needsUrl as { errors: { pointer: string; code: string }[] }).errors).toEqual([expect.objectContaining({ pointer: '/config/url', code: 'required' })]);
      const out = await engine.connectors.create('acme', { type: 'hook', direction: 'destination', config: { url: 'https://example.com' } });
      await expectError(engine.connectors.update('acme', out.id, { config: { url: null } }), 'validation_failed');
      expect((await engine.connectors.create('acme', { type: 'hook', direction: 'source', config: {} })).config).toEqual({});
    });

    it('pipelines: references, directions, schedule, transforms, names, state machine, outbox', async () => {
      const src = await source();
      const dst = await destination();
      const other = await source('other');
      await expectError(engine.pipelines.create('acme', { name: 'p', source_connector_id: other.id, destination_connector_id: dst.id }), 'invalid_reference');
      await expectError(engine.pipelines.create('acme', { name: 'p', source_connector_id: dst.id, destination_connector_id: src.id }), 'invalid_direction');
      await expectError(engine.pipelines.create('acme', { name: 'p', source_connector_id: src.id, destination_connector_id: dst.id, schedule: '61 * * * *' }), 'invalid_schedule');
      const badStep = await expectError(
        engine.pipelines.create('acme', { name: 'p', source_connector_id: src.id, destination_connector_id: dst.id, transforms: [{ type: 'set', path: 'a', value: 1 }, { type: 'rename', from: 'a' }] }),
        'validation_failed',
      );
      expect((badStep as { errors: { pointer: string }[] }).errors[0]?.pointer).toMatch(/^\/transforms\/1\//);
      // One answer lists every problem: the body's shape and the steps together.
      const both = await expectError(
        engine.pipelines.create('acme', { name: 'p', source_connector_id: src.id, destination_connector_id: dst.id, batch_size: 0, transforms: [{ type: 'explode' }] }),
        'validation_failed',
      );
      expect((both as { errors: { pointer: string }[] }).errors.map((e) => e.pointer).sort()).toEqual(['/batch_size', '/transforms/0/type']);
      expect(await engineContext(engine).storage.repos.outbox.listForWorkspace('acme')).toEqual([]);

      const p = await engine.pipelines.create('acme', { name: 'orders', source_connector_id: src.id, destination_connector_id: dst.id, schedule: '*/5 * * * *' });
      expect(p).toMatchObject({ state: 'draft', schedule: '*/5 * * * *', transforms: [], last_run: null });
      await expectError(engine.pipelines.create('acme', { name: 'orders', source_connector_id: src.id, destination_connector_id: dst.id }), 'name_taken');
      const pb = await engine.pipelines.create('other', { name: 'orders', source_connector_id: other.id, destination_connector_id: (await destination('other')).id });
      const conflict = await expectError(engine.pipelines.pause('acme', p.id), 'invalid_state_transition');
      expect((conflict as { currentStatus: string }).currentStatus).toBe('draft');
      expect((await engine.pipelines.activate('acme', p.id)).state).toBe('active');
      await expectError(engine.pipelines.activate('acme', p.id), 'invalid_state_transition');
      expect((await engine.pipelines.pause('acme', p.id)).state).toBe('paused');
      expect((await engine.pipelines.update('acme', p.id, { schedule: null, name: 'orders-stream' })).schedule).toBeNull();
      expect((await engine.connectors.get('acme', src.id)).pipeline_count).toBe(1);
      await expectError(engine.connectors.delete('acme', src.id), 'connector_in_use');
      expect(await engine.pipelines.delete('acme', p.id)).toEqual({ status: 'deleted' });
      await expectError(engine.pipelines.get('acme', p.id), 'not_found');
      await engine.connectors.delete('acme', src.id);
      // Every event was written with its change: exactly these, in order, in the outbox.
      const outbox = (await engineContext(engine).storage.repos.outbox.listForWorkspace('acme')).map((e) => [e.type, e.data.pipeline_id]);
      expect(outbox).toEqual([
        ['pipeline.created', p.id],
        ['pipeline.activated', p.id],
        ['pipeline.paused', p.id],
        ['pipeline.deleted', p.id],
      ]);
      expect(events.filter((e) => e.workspace_id === 'acme').map((e) => e.type)).toEqual(outbox.map(([t]) => t));
      expect((await engine.pipelines.get('other', pb.id)).name).toBe('orders');
    });

    it('workspace isolation: another workspace sees 404 on every id', async () => {
      const src = await source();
      const dst = await destination();
      const p = await engine.pipelines.create('acme', { name: 'p', source_connector_id: src.id, destination_connector_id: dst.id });
      const w = await engine.webhooks.create('acme', { url: 'https://example.com/h', events: ['pipeline.failed'] });
      // Thunks, so each call starts only when its rejection is awaited.
      const calls: (() => Promise<unknown>)[] = [
        () => engine.connectors.get('intruder', src.id),
        () => engine.connectors.update('intruder', src.id, { name: 'x' }),
        () => engine.connectors.delete('intruder', src.id),
        () => engine.connectors.check('intruder', src.id),
        () => engine.pipelines.get('intruder', p.id),
        () => engine.pipelines.update('intruder', p.id, { name: 'x' }),
        () => engine.pipelines.activate('intruder', p.id),
        () => engine.pipelines.pause('intruder', p.id),
        () => engine.pipelines.delete('intruder', p.id),
        () => engine.pipelines.listRuns('intruder', p.id),
        () => engine.events.list('intruder', p.id),
        () => engine.events.replayMany('intruder', p.id),
        () => engine.webhooks.get('intruder', w.id),
        () => engine.webhooks.getSecret('intruder', w.id),
        () => engine.webhooks.update('intruder', w.id, { enabled: false }),
        () => engine.webhooks.rotateSecret('intruder', w.id),
        () => engine.webhooks.listDeliveries('intruder', w.id),
        () => engine.webhooks.delete('intruder', w.id),
      ];
      for (const call of calls) await expectError(call(), 'not_found');
      expect((await engine.connectors.list('intruder')).data).toEqual([]);
      expect((await engine.pipelines.list('intruder')).data).toEqual([]);
      await expectError(engine.pipelines.create('intruder', { name: 'p', source_connector_id: src.id, destination_connector_id: dst.id }), 'invalid_reference');
    });

    it('pagination: concurrent inserts cause no gap and no duplicate', async () => {
      const initial: string[] = [];
      for (let i = 0; i < 23; i++) initial.push((await engine.connectors.create('acme', { type: 'hook', direction: 'source', config: {}, name: `c${i}` })).id);
      const seen: string[] = [];
      let cursor: string | undefined;
      let round = 0;
      do {
        const page = await engine.connectors.list('acme', { limit: 5, ...(cursor ? { cursor } : {}) });
        seen.push(...page.data.map((c) => c.id));
        cursor = page.next_cursor ?? undefined;
        expect(page.has_more).toBe(page.next_cursor !== null);
        // Others write while we page: concurrently, several at once.
        await Promise.all([0, 1, 2].map((j) => engine.connectors.create('acme', { type: 'hook', direction: 'source', config: {}, name: `new${round}-${j}` })));
        round++;
      } while (cursor);
      expect(new Set(seen).size).toBe(seen.length);
      for (const id of initial) expect(seen).toContain(id);
      expect(seen.slice(0, initial.length)).toEqual(initial);
    });

    it('order: desc lists newest first, page after page; a cursor keeps its order; a bad order is refused', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 7; i++) ids.push((await engine.connectors.create('acme', { type: 'hook', direction: 'source', config: {}, name: `o${i}` })).id);
      const walk = async (order?: 'asc' | 'desc') => {
        const seen: string[] = [];
        let cursor: string | undefined;
        do {
          const page = await engine.connectors.list('acme', { limit: 3, ...(order ? { order } : {}), ...(cursor ? { cursor } : {}) });
          seen.push(...page.data.map((c) => c.id));
          cursor = page.next_cursor ?? undefined;
        } while (cursor);
        return seen;
      };
      expect(await walk()).toEqual(ids);
      expect(await walk('asc')).toEqual(ids);
      expect(await walk('desc')).toEqual([...ids].reverse());
      const newest = await engine.connectors.list('acme', { limit: 3, order: 'desc' });
      await expectError(engine.connectors.list('acme', { cursor: newest.next_cursor! }), 'invalid_cursor');
      await expectError(engine.connectors.list('acme', { cursor: newest.next_cursor!, order: 'asc' }), 'invalid_cursor');
      const oldest = await engine.connectors.list('acme', { limit: 3 });
      await expectError(engine.connectors.list('acme', { cursor: oldest.next_cursor!, order: 'desc' }), 'invalid_cursor');
      expect((await engine.connectors.list('acme', { limit: 3, cursor: oldest.next_cursor!, order: 'asc' })).data.map((c) => c.id)).toEqual(ids.slice(3, 6));
      await expectError(engine.connectors.list('acme', { order: 'sideways' as never }), 'validation_failed');
    });

    it('cursors: tampered, expired, other filters, other workspace, bad limits are rejected', async () => {
      for (let i = 0; i < 3; i++) await engine.connectors.create('acme', { type: 'hook', direction: 'source', config: {}, name: `c${i}` });
      await engine.connectors.create('acme', { type: 'vault', direction: 'source', config: { table: 't', token: 'token-that-works' } });
      const first = await engine.connectors.list('acme', { limit: 1 });
      const cursor = first.next_cursor!;
      expect((await engine.connectors.list('acme', { limit: 1, cursor })).data).toHaveLength(1);
      const [body, mac] = cursor.split('.') as [string, string];
      const flipped = body.slice(0, -2) + (body.at(-2) === 'A' ? 'B' : 'A') + body.at(-1);
      await expectError(engine.connectors.list('acme', { cursor: `${flipped}.${mac}` }), 'invalid_cursor');
      await expectError(engine.connectors.list('acme', { cursor: `${body}.${mac.slice(1)}x` }), 'invalid_cursor');
      await expectError(engine.connectors.list('acme', { cursor: 'garbage' }), 'invalid_cursor');
      await expectError(engine.connectors.list('acme', { cursor, type: 'hook' }), 'invalid_cursor');
      await expectError(engine.connectors.list('other', { cursor }), 'invalid_cursor');
      await expectError(engine.pipelines.list('acme', { cursor }), 'invalid_cursor');
      for (const limit of [0, -1, 1.5, Number.NaN]) await expectError(engine.connectors.list('acme', { limit }), 'validation_failed');
      expect((await engine.connectors.list('acme', { limit: 1000 })).data).toHaveLength(4);
      clock.set(clock.now() + 72 * 3600 * 1000 + 1000);
      await expectError(engine.connectors.list('acme', { limit: 1, cursor }), 'invalid_cursor');
    });

    it('outbox: a failed change leaves no event, and listeners only hear committed ones', async () => {
      const src = await source();
      const dst = await destination();
      const p = await engine.pipelines.create('acme', { name: 'p', source_connector_id: src.id, destination_connector_id: dst.id });
      // Changes that fail (here on the unique name, inside their transaction) record no event.
      await engine.pipelines.create('acme', { name: 'q', source_connector_id: src.id, destination_connector_id: dst.id });
      const before = (await engineContext(engine).storage.repos.outbox.listForWorkspace('acme')).length;
      await expectError(engine.pipelines.update('acme', p.id, { name: 'q' }), 'name_taken');
      await expectError(engine.pipelines.create('acme', { name: 'q', source_connector_id: src.id, destination_connector_id: dst.id }), 'name_taken');
      expect((await engineContext(engine).storage.repos.outbox.listForWorkspace('acme')).length).toBe(before);
      expect(events.filter((e) => e.type === 'pipeline.created')).toHaveLength(2);
    });

    it('events: listing, filters, replay rules', async () => {
      const src = await source();
      const dst = await destination();
      const p = await engine.pipelines.create('acme', { name: 'p', source_connector_id: src.id, destination_connector_id: dst.id });
      const row = (i: number, status: 'delivered' | 'dead_lettered') => ({
        id: `evt_${String(i).padStart(26, '0')}`, workspace_id: 'acme', pipeline_id: p.id, type: 'order.created',
        occurred_at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(), payload: { i }, status, attempts: status === 'delivered' ? 1 : 3,
        error: status === 'dead_lettered' ? { stage: 'destination', code: 'rejected', message: 'no' } : null,
        dead_lettered_at: status === 'dead_lettered' ? new Date(Date.UTC(2026, 0, 1)).toISOString() : null,
        created_at: new Date(Date.UTC(2026, 0, 1)).toISOString(), updated_at: new Date(Date.UTC(2026, 0, 1)).toISOString(),
      });
      await engineContext(engine).storage.repos.events.append([row(1, 'delivered'), row(2, 'dead_lettered'), row(3, 'dead_lettered'), row(4, 'delivered')]);
      const page = await engine.events.list('acme', p.id, { limit: 2 });
      expect(page.data.map((e) => e.payload!.i)).toEqual([1, 2]);
      const tail = await engine.events.list('acme', p.id, { cursor: page.next_cursor! });
      expect(tail.has_more).toBe(false);
      expect(tail.next_cursor).not.toBeNull();
      expect((await engine.events.list('acme', p.id, { since: '2026-01-01T00:00:02Z', until: '2026-01-01T00:00:04.000Z' })).data.map((e) => e.payload!.i)).toEqual([2, 3]);
      // Newest first, a page at a time, within a window: the bounds hold on every page.
      const newest = await engine.events.list('acme', p.id, { order: 'desc', limit: 1, until: '2026-01-01T00:00:04.000Z' });
      expect(newest.data.map((e) => e.payload!.i)).toEqual([3]);
      const older = await engine.events.list('acme', p.id, { order: 'desc', limit: 2, until: '2026-01-01T00:00:04.000Z', cursor: newest.next_cursor! });
      expect(older.data.map((e) => e.payload!.i)).toEqual([2, 1]);
      const windowed = await engine.events.list('acme', p.id, { order: 'desc', limit: 1, since: '2026-01-01T00:00:02Z' });
      expect(windowed.data.map((e) => e.payload!.i)).toEqual([4]);
      expect((await engine.events.list('acme', p.id, { order: 'desc', since: '2026-01-01T00:00:02Z', cursor: windowed.next_cursor! })).data.map((e) => e.payload!.i)).toEqual([3, 2]);
      await expectError(engine.events.list('acme', p.id, { since: 'yesterday' }), 'validation_failed');
      const notDead = await expectError(engine.events.replay('acme', row(1, 'delivered').id), 'event_not_dead_lettered');
      expect((notDead as { currentStatus: string }).currentStatus).toBe('delivered');
      expect((await engine.events.replay('acme', row(2, 'dead_lettered').id)).status).toBe('replaying');
      await expectError(engine.events.replay('acme', row(2, 'dead_lettered').id), 'event_not_dead_lettered');
      await expectError(engine.events.replay('other', row(3, 'dead_lettered').id), 'not_found');
      expect(await engine.events.replayMany('acme', p.id, {})).toEqual({ count: 1 });
      // Log order: an event recorded later with an earlier occurred_at comes last, where a client
      // tailing with its cursor finds it.
      const end = await engine.events.list('acme', p.id);
      await engineContext(engine).storage.repos.events.append([row(0, 'delivered')]);
      expect((await engine.events.list('acme', p.id)).data.map((e) => e.payload!.i)).toEqual([1, 2, 3, 4, 0]);
      expect((await engine.events.list('acme', p.id, { cursor: end.next_cursor! })).data.map((e) => e.payload!.i)).toEqual([0]);
      expect((await engine.events.get('acme', row(0, 'delivered').id)).payload).toEqual({ i: 0 });
      // A cursor of the listing as it was before log order, an (occurred_at, id) position: refused.
      const before = engineContext(engine).cursors.encode(['2026-01-01T00:00:01.000Z', row(1, 'delivered').id], {
        resource: `events:${p.id}`,
        workspaceId: 'acme',
        filters: { type: undefined, status: undefined, since: undefined, until: undefined },
      });
      await expectError(engine.events.list('acme', p.id, { cursor: before }), 'invalid_cursor');
    });

    it('webhooks: url rules, event types, secrets encrypted and rotated with overlap', async () => {
      await expectError(engine.webhooks.create('acme', { url: 'http://example.com/h', events: ['pipeline.failed'] }), 'url_not_allowed');
      await expectError(engine.webhooks.create('acme', { url: 'https://10.0.0.1/h', events: ['pipeline.failed'] }), 'url_not_allowed');
      await expectError(engine.webhooks.create('acme', { url: 'https://[::ffff:169.254.169.254]/h', events: ['pipeline.failed'] }), 'url_not_allowed');
      await expectError(engine.webhooks.create('acme', { url: 'https://example.com/h', events: ['pipeline.exploded' as never] }), 'unknown_event_type');
      await expectError(engine.webhooks.create('acme', { url: 'https://example.com/h', events: ['pipeline.failed'], secret: 'whsec_c2hvcnQ=' }), 'validation_failed');
      const local = await engine.webhooks.create('acme', { url: 'http://127.0.0.1:9999/h', events: ['pipeline.failed'] });
      expect(local.url).toBe('http://127.0.0.1:9999/h');
      const w = await engine.webhooks.create('acme', { url: 'https://example.com/h', events: ['pipeline.failed', 'pipeline.completed'], description: 'ops' });
      expect(w.secret).toMatch(/^whsec_/);
      expect(await engine.webhooks.get('acme', w.id)).not.toHaveProperty('secret');
      expect(await engine.webhooks.getSecret('acme', w.id)).toEqual({ secret: w.secret });
      const raw = JSON.stringify(await engineContext(engine).storage.knex('webhook_subscriptions').where({ id: w.id }).first());
      expect(raw).not.toContain(w.secret.slice(6));
      const rotated = await engine.webhooks.rotateSecret('acme', w.id, { previous_secret_expires_in: 3600 });
      expect(await engine.webhooks.signingSecrets('acme', w.id)).toEqual([rotated.secret, w.secret]);
      for (let i = 0; i < 6; i++) await engine.webhooks.rotateSecret('acme', w.id, { previous_secret_expires_in: 7200 });
      expect(await engine.webhooks.signingSecrets('acme', w.id)).toHaveLength(6);
      clock.set(clock.now() + 7201 * 1000);
      expect(await engine.webhooks.signingSecrets('acme', w.id)).toHaveLength(1);
      const updated = await engine.webhooks.update('acme', w.id, { enabled: false, events: ['connector.error'] });
      expect(updated).toMatchObject({ enabled: false, events: ['connector.error'] });
      await engine.webhooks.delete('acme', w.id);
      await expectError(engine.webhooks.get('acme', w.id), 'not_found');
    });

    it('deliveries: listing, redelivery rules, recovery of a range', async () => {
      const w = await engine.webhooks.create('acme', { url: 'https://example.com/h', events: ['pipeline.failed'] });
      const base = { workspace_id: 'acme', subscription_id: w.id, event_type: 'pipeline.failed' as const, body: '{}', attempts: 8, next_attempt_at: null, last_attempt_at: null, last_response_status: 500, last_error: null, cycle_started_at: '2026-01-01T00:00:00.000Z', updated_at: '2026-01-01T00:00:00.000Z' };
      await engineContext(engine).storage.repos.deliveries.insertMany([
        { ...base, id: 'dlv_1', event_id: 'evt_1', status: 'failed', created_at: '2026-01-01T00:00:01.000Z' },
        { ...base, id: 'dlv_2', event_id: 'evt_2', status: 'failed', created_at: '2026-01-01T00:00:02.000Z' },
        { ...base, id: 'dlv_3', event_id: 'evt_3', status: 'retrying', created_at: '2026-01-01T00:00:03.000Z' },
      ]);
      expect((await engine.webhooks.listDeliveries('acme', w.id, { status: 'failed' })).data.map((d) => d.id)).toEqual(['dlv_1', 'dlv_2']);
      await expectError(engine.webhooks.redeliver('acme', w.id, 'dlv_3'), 'delivery_in_progress');
      expect(await engine.webhooks.redeliver('acme', w.id, 'dlv_1')).toMatchObject({ status: 'pending', attempts: 0 });
      expect(await engine.webhooks.recover('acme', w.id, { since: '2026-01-01T00:00:00Z' })).toEqual({ count: 1 });
      expect((await engine.webhooks.getDelivery('acme', w.id, 'dlv_2')).attempt_history).toEqual([]);
    });

    it('concurrency: rotations, config patches, pipeline creation against connector deletion, bootstrap keys', async () => {
      // Concurrent secret rotations: every secret handed out still signs.
      const w = await engine.webhooks.create('acme', { url: 'https://example.com/h', events: ['pipeline.failed'] });
      const rotated = await Promise.all(Array.from({ length: 4 }, () => engine.webhooks.rotateSecret('acme', w.id)));
      const signing = await engine.webhooks.signingSecrets('acme', w.id);
      for (const { secret } of [...rotated, w]) expect(signing).toContain(secret);

      // Concurrent patches of different fields both land.
      const c = await engine.connectors.create('acme', { type: 'vault', direction: 'source', config: { table: 't', token: 'token-that-works' } });
      await Promise.all([
        engine.connectors.update('acme', c.id, { config: { table: 'patched' } }),
        engine.connectors.update('acme', c.id, { config: { port: 6543 } }),
        engine.connectors.update('acme', c.id, { name: 'renamed' }),
      ]);
      expect(await engine.connectors.get('acme', c.id)).toMatchObject({ name: 'renamed', config: { table: 'patched', port: 6543, token: '********' } });
      // While a rotation holds the connector, its config cannot change (a rename still can).
      await engineContext(engine).storage.repos.connectors.update('acme', c.id, { rotation_status: 'rotating' });
      await expectError(engine.connectors.update('acme', c.id, { config: { table: 'during' } }), 'rotation_in_progress');
      expect((await engine.connectors.update('acme', c.id, { name: 'still' })).name).toBe('still');
      await engineContext(engine).storage.repos.connectors.update('acme', c.id, { rotation_status: null });

      // A pipeline created while its connector is deleted: never both.
      for (let i = 0; i < 8; i++) {
        const src = await source();
        const dst = await destination();
        const [created, deleted] = await Promise.allSettled([
          engine.pipelines.create('acme', { name: `race-${i}`, source_connector_id: src.id, destination_connector_id: dst.id }),
          engine.connectors.delete('acme', src.id),
        ]);
        expect([created.status, deleted.status].sort()).toEqual(['fulfilled', 'rejected']);
        if (created.status === 'fulfilled') expect((await engine.connectors.get('acme', src.id)).pipeline_count).toBe(1);
      }

      // Several servers starting with the same bootstrap key all come up.
      const token = (await engine.apiKeys.create({ workspace: 'scratch' })).key;
      const fresh = await createEngine({ storage: await factory(), secretKey: generateSecretKey(), clock });
      await fresh.start();
      try {
        const ensured = await Promise.all([fresh.apiKeys.ensure(token), fresh.apiKeys.ensure(token), fresh.apiKeys.ensure(token)]);
        expect(new Set(ensured.map((k) => k.id)).size).toBe(1);
      } finally {
        await fresh.stop();
      }
    });

    it('api keys: create, verify, scopes, revoke, bootstrap', async () => {
      const created = await engine.apiKeys.create({ workspace: 'acme', scopes: ['pipelines:read'], name: 'ci' });
      expect(created.key).toMatch(/^fry_[0-9A-Za-z]{8}_[0-9A-Za-z]{38}$/);
      const raw = JSON.stringify(await engineContext(engine).storage.knex('api_keys').where({ id: created.id }).first());
      expect(raw).not.toContain(created.key.slice(13, 45));
      expect(await engine.apiKeys.verify(created.key)).toMatchObject({ workspace_id: 'acme', scopes: ['pipelines:read'] });
      const wrongSecret = created.key.slice(0, 14) + (created.key[14] === 'a' ? 'b' : 'a') + created.key.slice(15);
      await expectError(engine.apiKeys.verify(wrongSecret), 'unauthenticated');
      await expectError(engine.apiKeys.verify('fry_nope'), 'unauthenticated');
      await expectError(engine.apiKeys.create({ scopes: ['root'] }), 'validation_failed');
      expect((await engine.apiKeys.list('acme')).data.map((k) => k.id)).toEqual([created.id]);
      await engine.apiKeys.revoke('acme', created.key_id);
      await expectError(engine.apiKeys.verify(created.key), 'unauthenticated');
      const boot = (await engine.apiKeys.create({ workspace: 'scratch' })).key;
      const other = await createEngine({ storage: await factory(), secretKey: generateSecretKey(), clock });
      await other.start();
      try {
        const ensured = await other.apiKeys.ensure(boot);
        expect(ensured.workspace_id).toBe('default');
        expect((await other.apiKeys.ensure(boot)).id).toBe(ensured.id);
        expect((await other.apiKeys.verify(boot)).scopes).toEqual(['write']);
      } finally {
        await other.stop();
      }
    });
  });
}

import type { Knex } from 'knex';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StorageConfig } from '@ferry/core';
import { deriveEventId, openStorage, type BackfillRow, type ConnectorRow, type DeliveryRow, type EventRow, type FerryStorage, type PipelineRow } from '@ferry/core/internal';

/** What one batch commits (`BatchCommits` in storage), as a queued commit takes it. */
type BatchCommit = Parameters<ReturnType<ReturnType<FerryStorage['batchCommits']>['queue']>>[0];

/** Makes a fresh, empty storage for one test. */
export type StorageFactory = () => Promise<StorageConfig>;

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();

/** A connector row for tests. */
export function connectorRow(overrides: Partial<ConnectorRow> & Pick<ConnectorRow, 'id'>): ConnectorRow {
  return {
    workspace_id: 'ws_a',
    name: null,
    type: 'memory',
    direction: 'source',
    config: { table: 'orders' },
    secrets: null,
    health: 'healthy',
    health_checked_at: null,
    last_error: null,
    rotation_status: null,
    rotation_started_at: null,
    rotation_state: null,
    created_at: at(0),
    updated_at: at(0),
    ...overrides,
  };
}

/** A pipeline row for tests. */
export function pipelineRow(overrides: Partial<PipelineRow> & Pick<PipelineRow, 'id' | 'name'>): PipelineRow {
  return {
    workspace_id: 'ws_a',
    source_connector_id: 'con_src',
    destination_connector_id: 'con_dst',
    transforms: [],
    schedule: null,
    state: 'draft',
    batch_size: 100,
    flush_interval_ms: 1000,
    max_attempts: 3,
    event_log: { payloads: 'all', retention_days: null },
    salt: 'salt',
    last_tick_at: null,
    paused_by: null,
    created_at: at(0),
    updated_at: at(0),
    deleted_at: null,
    ...overrides,
  };
}

function eventRow(i: number, overrides: Partial<EventRow> = {}): EventRow {
  return {
    id: `evt_${String(i).padStart(6, '0')}`,
    workspace_id: 'ws_a',
    pipeline_id: 'pip_1',
    type: i % 2 === 0 ? 'order.created' : 'order.paid',
    occurred_at: at(Math.floor(i / 3) * 1000),
    payload: { n: i },
    status: 'delivered',
    attempts: 1,
    error: null,
    dead_lettered_at: null,
    created_at: at(0),
    updated_at: at(0),
    ...overrides,
  };
}

function deliveryRow(i: number, overrides: Partial<DeliveryRow> = {}): DeliveryRow {
  return {
    id: `dlv_${String(i).padStart(4, '0')}`,
    workspace_id: 'ws_a',
    subscription_id: 'whk_1',
    event_id: `evt_p${i}`,
    event_type: 'pipeline.failed',
    body: JSON.stringify({ id: `evt_p${i}` }),
    status: 'pending',
    attempts: 0,
    next_attempt_at: at(0),
    cycle_started_at: at(0),
    last_attempt_at: null,
    last_response_status: null,
    last_error: null,
    created_at: at(i * 1000),
    updated_at: at(i * 1000),
    ...overrides,
  };
}

/**
 * The storage conformance suite: every repository operation, leases and queue claims, and the
 * transaction guarantees the engine relies on. Run it once per dialect with a factory that
 * returns a fresh, empty database each time; the same cases must pass on each.
 *
 * @example
 * ```ts
 * runStorageSuite('sqlite', async () => sqliteStorage({ filename: ':memory:' }));
 * ```
 */
export function runStorageSuite(name: string, factory: StorageFactory): void {
  describe(`storage conformance: ${name}`, () => {
    let storage: FerryStorage;

    beforeEach(async () => {
      storage = await openStorage(await factory());
      await storage.repos.workspaces.ensure('ws_a', at(0));
      await storage.repos.workspaces.ensure('ws_b', at(0));
    });

    afterEach(async () => {
      await storage.close();
    });

    async function seedConnectorsAndPipeline(): Promise<void> {
      await storage.repos.connectors.insert(connectorRow({ id: 'con_src' }));
      await storage.repos.connectors.insert(connectorRow({ id: 'con_dst', direction: 'destination' }));
      await storage.repos.pipelines.insert(pipelineRow({ id: 'pip_1', name: 'one' }));
    }

    it('migrates idempotently', async () => {
      await storage.migrate();
      await storage.migrate();
      expect(await storage.ping()).toBe(true);
    });

    it('workspaces: ensure and create are idempotent, get and list', async () => {
      const again = await storage.repos.workspaces.ensure('ws_a', at(5000));
      expect(again.created_at).toBe(at(0));
      await storage.repos.workspaces.create('ws_a', at(6000));
      await storage.repos.workspaces.create('ws_c', at(7000));
      expect(await storage.repos.workspaces.get('ws_a')).toMatchObject({ created_at: at(0) });
      expect(await storage.repos.workspaces.get('ws_c')).toMatchObject({ created_at: at(7000) });
      expect(await storage.repos.workspaces.get('ws_b')).toMatchObject({ id: 'ws_b' });
      expect(await storage.repos.workspaces.get('nope')).toBeNull();
      expect((await storage.repos.workspaces.list()).map((w) => w.id)).toEqual(['ws_a', 'ws_b', 'ws_c']);
    });

    it('api keys: insert, lookups, list, touch, revoke, isolation', async () => {
      const base = { name: 'ci', scopes: ['read'], secret_hash: 'h'.repeat(64), last4: 'abcd', rate_limit: { requests: 10, per_seconds: 60 }, created_at: at(0), last_used_at: null, revoked_at: null };
      await storage.repos.apiKeys.insert({ ...base, id: 'key_1', key_id: 'AAAAAAAA', workspace_id: 'ws_a' });
      await storage.repos.apiKeys.insert({ ...base, id: 'key_2', key_id: 'BBBBBBBB', workspace_id: 'ws_b', rate_limit: null });
      expect(await storage.repos.apiKeys.getByKeyId('AAAAAAAA')).toMatchObject({ id: 'key_1', scopes: ['read'], rate_limit: { requests: 10, per_seconds: 60 } });
      expect(await storage.repos.apiKeys.get('ws_b', 'key_1')).toBeNull();
      expect((await storage.repos.apiKeys.list('ws_a', undefined, 10)).rows.map((r) => r.id)).toEqual(['key_1']);
      await storage.repos.apiKeys.touch('key_1', at(1000));
      expect((await storage.repos.apiKeys.get('ws_a', 'key_1'))?.last_used_at).toBe(at(1000));
      expect(await storage.repos.apiKeys.revoke('ws_b', 'key_1', at(2000))).toBe(false);
      expect(await storage.repos.apiKeys.revoke('ws_a', 'key_1', at(2000))).toBe(true);
      expect(await storage.repos.apiKeys.revoke('ws_a', 'key_1', at(3000))).toBe(false);
      expect((await storage.repos.apiKeys.get('ws_a', 'key_1'))?.revoked_at).toBe(at(2000));
      await expect(storage.repos.apiKeys.insert({ ...base, id: 'key_3', key_id: 'AAAAAAAA', workspace_id: 'ws_a' })).rejects.toThrow();
    });

    it('connectors: insert, get, list with filter, compare-and-set update, delete, pipeline counts', async () => {
      await storage.repos.connectors.insert(connectorRow({ id: 'con_1', config: { nested: { a: [1, 'x'] } } }));
      await storage.repos.connectors.insert(connectorRow({ id: 'con_2', type: 'other' }));
      await storage.repos.connectors.insert(connectorRow({ id: 'con_3', workspace_id: 'ws_b' }));
      expect(await storage.repos.connectors.get('ws_a', 'con_1')).toMatchObject({ config: { nested: { a: [1, 'x'] } }, last_error: null });
      expect(await storage.repos.connectors.get('ws_a', 'con_3')).toBeNull();
      expect((await storage.repos.connectors.list('ws_a', {}, undefined, 10)).rows.map((r) => r.id)).toEqual(['con_1', 'con_2']);
      expect((await storage.repos.connectors.list('ws_a', { type: 'other' }, undefined, 10)).rows.map((r) => r.id)).toEqual(['con_2']);
      expect(await storage.repos.connectors.update('ws_a', 'con_1', { rotation_status: 'rotating' }, { rotation_status: null })).toBe(true);
      expect(await storage.repos.connectors.update('ws_a', 'con_1', { rotation_status: 'rotating' }, { rotation_status: null })).toBe(false);
      expect(await storage.repos.connectors.update('ws_b', 'con_1', { name: 'x' })).toBe(false);
      await storage.repos.connectors.update('ws_a', 'con_1', { last_error: { code: 'c', message: 'm', at: at(1) } });
      expect((await storage.repos.connectors.get('ws_a', 'con_1'))?.last_error).toEqual({ code: 'c', message: 'm', at: at(1) });
      await storage.repos.pipelines.insert(pipelineRow({ id: 'pip_1', name: 'p1', source_connector_id: 'con_1', destination_connector_id: 'con_2' }));
      await storage.repos.pipelines.insert(pipelineRow({ id: 'pip_2', name: 'p2', source_connector_id: 'con_1', destination_connector_id: 'con_1' }));
      await storage.repos.pipelines.insert(pipelineRow({ id: 'pip_3', name: 'p3', source_connector_id: 'con_1', destination_connector_id: 'con_2', deleted_at: at(1) }));
      const counts = await storage.repos.connectors.pipelineCounts('ws_a', ['con_1', 'con_2']);
      expect(Object.fromEntries(counts)).toEqual({ con_1: 2, con_2: 1 });
      expect(await storage.repos.connectors.delete('ws_b', 'con_2')).toBe(false);
      await storage.repos.pipelines.markDeleted('ws_a', 'pip_1', at(2));
      expect(await storage.repos.connectors.delete('ws_a', 'con_2')).toBe(true);
    });

    it('pipelines: names unique among live pipelines, state compare-and-set, soft delete', async () => {
      await seedConnectorsAndPipeline();
      await expect(storage.repos.pipelines.insert(pipelineRow({ id: 'pip_dup', name: 'one' }))).rejects.toThrow();
      await storage.repos.pipelines.insert(pipelineRow({ id: 'pip_b', name: 'one', workspace_id: 'ws_b' }));
      await storage.repos.pipelines.insert(pipelineRow({ id: 'pip_2', name: 'two', transforms: [{ type: 'set', path: 'a', value: 1 }], schedule: '* * * * *' }));
      expect(await storage.repos.pipelines.get('ws_a', 'pip_2')).toMatchObject({ transforms: [{ type: 'set', path: 'a', value: 1 }], schedule: '* * * * *' });
      expect(await storage.repos.pipelines.update('ws_a', 'pip_1', { state: 'active' }, ['draft', 'paused'])).toBe(true);
      expect(await storage.repos.pipelines.update('ws_a', 'pip_1', { state: 'active' }, ['draft', 'paused'])).toBe(false);
      expect((await storage.repos.pipelines.list('ws_a', { state: 'active' }, undefined, 10)).rows.map((p) => p.id)).toEqual(['pip_1']);
      expect((await storage.repos.pipelines.list('ws_a', { name: 'two' }, undefined, 10)).rows.map((p) => p.id)).toEqual(['pip_2']);
      expect((await storage.repos.pipelines.listByState('active')).map((p) => p.id)).toEqual(['pip_1']);
      expect((await storage.repos.pipelines.referencing('ws_a', 'con_src')).map((p) => p.id)).toEqual(['pip_1', 'pip_2']);
      expect(await storage.repos.pipelines.markDeleted('ws_a', 'pip_1', at(5))).toBe(true);
      expect(await storage.repos.pipelines.get('ws_a', 'pip_1')).toBeNull();
      expect(await storage.repos.pipelines.getAnyWorkspace('pip_b')).toMatchObject({ workspace_id: 'ws_b' });
      // The name of a deleted pipeline is free again.
      await storage.repos.pipelines.insert(pipelineRow({ id: 'pip_3', name: 'one' }));
      expect(await storage.repos.pipelines.markDeleted('ws_a', 'pip_1', at(6))).toBe(false);
    });

    it('runs: one per pipeline and tick, history, latest, counters, in flight', async () => {
      await seedConnectorsAndPipeline();
      const run = (id: string, scheduled: string | null, trigger: 'schedule' | 'manual' = 'schedule') => ({
        id, workspace_id: 'ws_a', pipeline_id: 'pip_1', trigger, scheduled_for: scheduled, status: 'queued' as const, created_at: at(0),
      });
      expect(await storage.repos.runs.insert(run('run_1', at(60_000)))).toBe(true);
      expect(await storage.repos.runs.insert(run('run_2', at(60_000)))).toBe(false);
      expect(await storage.repos.runs.insert(run('run_3', null, 'manual'))).toBe(true);
      expect(await storage.repos.runs.insert(run('run_4', null, 'manual'))).toBe(true);
      await storage.repos.runs.addCounts('run_1', { events_read: 5, events_written: 4 });
      await Promise.all([storage.repos.runs.addCounts('run_1', { events_read: 1 }), storage.repos.runs.addCounts('run_1', { events_read: 2, events_dead_lettered: 1 })]);
      expect(await storage.repos.runs.get('ws_a', 'run_1')).toMatchObject({ events_read: 8, events_written: 4, events_dead_lettered: 1, events_filtered: 0 });
      expect(await storage.repos.runs.get('ws_b', 'run_1')).toBeNull();
      await storage.repos.runs.update('run_1', { status: 'succeeded', finished_at: at(1) });
      expect((await storage.repos.runs.inFlight('pip_1')).map((r) => r.id)).toEqual(['run_3', 'run_4']);
      expect((await storage.repos.runs.latest(['pip_1'])).get('pip_1')?.id).toBe('run_4');
      const page = await storage.repos.runs.list('ws_a', 'pip_1', ['run_1'], 2);
      expect(page.rows.map((r) => r.id)).toEqual(['run_3', 'run_4']);
      expect(page.hasMore).toBe(false);
    });

    it('checkpoints: absent, put, overwrite', async () => {
      await seedConnectorsAndPipeline();
      expect(await storage.repos.checkpoints.get('pip_1')).toBeNull();
      await storage.repos.checkpoints.put('pip_1', { offset: 10, parts: [1, 2] }, null, at(1));
      await storage.repos.checkpoints.put('pip_1', { offset: 20, parts: [3] }, 'run_1', at(2));
      expect(await storage.repos.checkpoints.get('pip_1')).toEqual({ offset: 20, parts: [3] });
    });

    it('events: units in log order, keyset listing with filters, status compare-and-set, dead letters, bulk replay', async () => {
      const rows = Array.from({ length: 30 }, (_, i) => eventRow(i));
      // Three batches, three units; the listing runs through them in the order they were written.
      for (let k = 0; k < 30; k += 10) await storage.repos.events.append(rows.slice(k, k + 10));
      expect((await storage.repos.events.get('ws_a', 'evt_000012'))?.payload).toEqual({ n: 12 });
      expect(await storage.repos.events.get('ws_b', 'evt_000000')).toBeNull();
      expect(await storage.repos.events.get('ws_a', 'evt_999999')).toBeNull();
      for (const order of ['asc', 'desc'] as const) {
        const seen: string[] = [];
        let after: string[] | undefined;
        for (;;) {
          const page = await storage.repos.events.list('ws_a', 'pip_1', {}, after, 7, order);
          seen.push(...page.rows.map((r) => r.id));
          if (!page.hasMore) break;
          const last = page.rows[page.rows.length - 1]!;
          after = [String(last.log!.unit), String(last.log!.index)];
        }
        expect(seen).toEqual(order === 'asc' ? rows.map((r) => r.id) : rows.map((r) => r.id).reverse());
      }
      const paid = await storage.repos.events.list('ws_a', 'pip_1', { type: 'order.paid', since: at(3000), until: at(6000) }, undefined, 100);
      expect(paid.rows.map((r) => r.payload!.n)).toEqual([9, 11, 13, 15, 17]);
      expect((await storage.repos.events.list('ws_a', 'pip_1', { type: 'order.none' }, undefined, 100)).rows).toEqual([]);
      await storage.repos.events.append([eventRow(100, { status: 'dead_lettered', error: { stage: 'transform:1', code: 'boom', message: 'x' }, dead_lettered_at: at(9) })]);
      await storage.repos.events.putDeadLetter({ event_id: 'evt_000100', workspace_id: 'ws_a', pipeline_id: 'pip_1', stage: 'transform:1', record: { type: 't', payload: { a: 1 } }, replay_requested_at: null, created_at: at(9) });
      expect((await storage.repos.events.list('ws_a', 'pip_1', { status: 'dead_lettered' }, undefined, 10)).rows[0]?.error).toEqual({ stage: 'transform:1', code: 'boom', message: 'x' });
      expect(await storage.repos.events.getDeadLetter('evt_000100')).toMatchObject({ stage: 'transform:1', record: { type: 't', payload: { a: 1 } } });
      expect(await storage.repos.events.updateStatus('ws_a', 'evt_000100', { status: 'replaying' }, 'delivered')).toBe(false);
      expect(await storage.repos.events.updateStatus('ws_a', 'evt_000100', { status: 'replaying' }, 'dead_lettered')).toBe(true);
      // The change overlays the unit: the listing without a status filter says replaying too.
      expect((await storage.repos.events.list('ws_a', 'pip_1', { type: 'order.created', since: at(33_000) }, undefined, 10)).rows.map((r) => [r.id, r.status])).toEqual([['evt_000100', 'replaying']]);
      await storage.repos.events.updateStatus('ws_a', 'evt_000100', { status: 'dead_lettered' });
      await storage.repos.events.append([eventRow(101, { status: 'dead_lettered' })]);
      await storage.repos.events.append([eventRow(102, { status: 'dead_lettered', workspace_id: 'ws_b' })]);
      expect(await storage.repos.events.requestBulkReplay('ws_a', 'pip_1', {}, at(10))).toBe(2);
      expect(await storage.repos.events.requestBulkReplay('ws_a', 'pip_1', {}, at(11))).toBe(0);
      expect((await storage.repos.events.getDeadLetter('evt_000100'))?.replay_requested_at).toBe(at(10));
      expect((await storage.repos.events.get('ws_b', 'evt_000102'))?.status).toBe('dead_lettered');
      // A replay's outcome settles the change row; the listing by status follows it.
      await storage.repos.events.settle([eventRow(100, { status: 'delivered', attempts: 4, updated_at: at(12) })]);
      expect(await storage.repos.events.get('ws_a', 'evt_000100')).toMatchObject({ status: 'delivered', attempts: 4, error: null });
      expect((await storage.repos.events.list('ws_a', 'pip_1', { status: 'replaying' }, undefined, 10)).rows.map((r) => r.id)).toEqual(['evt_000101']);
      expect(await storage.repos.events.attemptsOf(['evt_000100', 'evt_000101'])).toEqual(new Map([['evt_000100', 4], ['evt_000101', 1]]));
      await storage.repos.events.deleteDeadLetter('evt_000100');
      expect(await storage.repos.events.getDeadLetter('evt_000100')).toBeNull();
    });

    it('events: timestamps are stored in one form; the same id in another workspace stays apart', async () => {
      await storage.repos.events.append([eventRow(1, { occurred_at: '2026-01-01T10:00:00Z' }), eventRow(2, { occurred_at: '2026-01-01T11:00:00.500+01:00' })]);
      const listed = await storage.repos.events.list('ws_a', 'pip_1', {}, undefined, 10);
      expect(listed.rows.map((r) => [r.id, r.occurred_at])).toEqual([
        ['evt_000001', '2026-01-01T10:00:00.000Z'],
        ['evt_000002', '2026-01-01T10:00:00.500Z'],
      ]);
      await storage.repos.events.append([eventRow(1, { workspace_id: 'ws_b', pipeline_id: 'pip_other', payload: { stolen: true } })]);
      expect((await storage.repos.events.get('ws_a', 'evt_000001'))?.payload).toEqual({ n: 1 });
      expect((await storage.repos.events.get('ws_b', 'evt_000001'))?.payload).toEqual({ stolen: true });
      await expect(storage.repos.events.append([eventRow(3, { occurred_at: 'not a time' })])).rejects.toThrow(RangeError);
    });

    it('events: a unit written in a transaction rolls back with it; payloads and types come back exactly', async () => {
      await seedConnectorsAndPipeline();
      await storage.transaction(async (repos) => {
        await repos.events.append([eventRow(1), eventRow(2, { attempts: 3, status: 'dead_lettered' }), eventRow(3)]);
        // Characters escaping formats care for, a null marker spelled out, and text JSON must keep.
        await repos.events.append([eventRow(4, { type: 'tab\there', payload: { s: 'a\tb\nc\r\\d \\N', e: '\\', u: '\u2028é😀', big: '123456789012345678901234567890' } })]);
        await repos.checkpoints.put('pip_1', { offset: 4 }, null, at(4));
      });
      const listed = await storage.repos.events.list('ws_a', 'pip_1', {}, undefined, 10);
      expect(listed.rows.map((r) => [r.id, r.attempts, r.status])).toEqual([
        ['evt_000001', 1, 'delivered'],
        ['evt_000002', 3, 'dead_lettered'],
        ['evt_000003', 1, 'delivered'],
        ['evt_000004', 1, 'delivered'],
      ]);
      expect(listed.rows[3]).toMatchObject({ type: 'tab\there', payload: { s: 'a\tb\nc\r\\d \\N', e: '\\', u: '\u2028é😀', big: '123456789012345678901234567890' } });
      expect(await storage.repos.checkpoints.get('pip_1')).toEqual({ offset: 4 });
      await expect(
        storage.transaction(async (repos) => {
          await repos.events.append([eventRow(5, { status: 'dead_lettered' })]);
          throw new Error('abandoned');
        }),
      ).rejects.toThrow('abandoned');
      expect(await storage.repos.events.get('ws_a', 'evt_000005')).toBeNull();
      expect(await storage.repos.events.countOpen('pip_1')).toEqual({ dead_lettered: 1, replaying: 0 });
    });

    it('events: a type rare in its unit is listed from its copies, in log order, with its changes', async () => {
      const unit = (from: number) => Array.from({ length: 40 }, (_, k) => eventRow(from + k, { type: k === 5 || k === 30 ? 'order.refunded' : 'order.created' }));
      await storage.repos.events.append(unit(0));
      await storage.repos.events.append(unit(100).map((r) => (r.id === 'evt_000130' ? { ...r, status: 'dead_lettered' as const, attempts: 3, error: { stage: 'destination', code: 'no', message: 'no' } } : r)));
      expect((await storage.knex('event_unit_types').whereNotNull('events')).length).toBe(2);
      for (const order of ['asc', 'desc'] as const) {
        const seen: string[] = [];
        let after: string[] | undefined;
        for (;;) {
          const page = await storage.repos.events.list('ws_a', 'pip_1', { type: 'order.refunded' }, after, 1, order);
          seen.push(...page.rows.map((r) => r.id));
          if (!page.hasMore) break;
          after = [String(page.rows[0]!.log!.unit), String(page.rows[0]!.log!.index)];
        }
        const all = ['evt_000005', 'evt_000030', 'evt_000105', 'evt_000130'];
        expect(seen).toEqual(order === 'asc' ? all : all.reverse());
      }
      await storage.repos.events.settle([eventRow(130, { type: 'order.refunded', status: 'delivered', attempts: 4, updated_at: at(50) })]);
      const listed = await storage.repos.events.list('ws_a', 'pip_1', { type: 'order.refunded', since: at(30_000) }, undefined, 10);
      expect(listed.rows.map((r) => [r.id, r.status, r.attempts, r.payload])).toEqual([
        ['evt_000105', 'delivered', 1, { n: 105 }],
        ['evt_000130', 'delivered', 4, { n: 130 }],
      ]);
      expect(listed.rows[0]).toEqual(await storage.repos.events.get('ws_a', 'evt_000105'));
    });

    it('events: a large batch is one unit, and pages through', async () => {
      const rows = Array.from({ length: 2_345 }, (_, i) => eventRow(i));
      await storage.repos.events.append(rows);
      expect(Number((await storage.knex('event_units').count({ n: '*' }))[0]!.n)).toBe(1);
      let after: string[] | undefined;
      let seen = 0;
      for (;;) {
        const page = await storage.repos.events.list('ws_a', 'pip_1', {}, after, 1000);
        seen += page.rows.length;
        if (!page.hasMore) break;
        after = [String(page.rows.at(-1)!.log!.unit), String(page.rows.at(-1)!.log!.index)];
      }
      expect(seen).toBe(2_345);
      expect((await storage.repos.events.get('ws_a', 'evt_002000'))?.payload).toEqual({ n: 2_000 });
    });

    it('webhook subscriptions: insert, get, list, subscribed types, update, delete', async () => {
      const base = { url: 'https://example.com/hook', description: null, enabled: true, disabled_reason: null, secret: 'sealed', previous_secrets: null, failing_since: null, created_at: at(0), updated_at: at(0) };
      await storage.repos.webhooks.insert({ ...base, id: 'whk_1', workspace_id: 'ws_a', events: ['pipeline.failed', 'pipeline.completed'] });
      await storage.repos.webhooks.insert({ ...base, id: 'whk_2', workspace_id: 'ws_a', events: ['connector.error'], enabled: false });
      await storage.repos.webhooks.insert({ ...base, id: 'whk_3', workspace_id: 'ws_b', events: ['pipeline.failed'] });
      expect(await storage.repos.webhooks.get('ws_a', 'whk_1')).toMatchObject({ enabled: true, events: ['pipeline.failed', 'pipeline.completed'] });
      expect((await storage.repos.webhooks.get('ws_a', 'whk_2'))?.enabled).toBe(false);
      expect(await storage.repos.webhooks.get('ws_a', 'whk_3')).toBeNull();
      expect((await storage.repos.webhooks.list('ws_a', undefined, 1)).hasMore).toBe(true);
      expect((await storage.repos.webhooks.subscribedTo('ws_a', 'pipeline.failed')).map((w) => w.id)).toEqual(['whk_1']);
      expect(await storage.repos.webhooks.subscribedTo('ws_a', 'connector.error')).toEqual([]);
      expect(await storage.repos.webhooks.update('ws_a', 'whk_2', { enabled: true })).toBe(true);
      expect((await storage.repos.webhooks.subscribedTo('ws_a', 'connector.error')).map((w) => w.id)).toEqual(['whk_2']);
      expect(await storage.repos.webhooks.update('ws_b', 'whk_2', { enabled: false })).toBe(false);
      expect(await storage.repos.webhooks.delete('ws_b', 'whk_1')).toBe(false);
      expect(await storage.repos.webhooks.delete('ws_a', 'whk_1')).toBe(true);
    });

    it('deliveries: one per subscription and event, listing, compare-and-set, recovery range, attempts, drop pending', async () => {
      await storage.repos.deliveries.insertMany([deliveryRow(1), deliveryRow(2, { status: 'failed' }), deliveryRow(3, { status: 'failed' }), deliveryRow(4, { status: 'delivered' })]);
      await storage.repos.deliveries.insertMany([deliveryRow(1, { id: 'dlv_dup' })]);
      expect((await storage.repos.deliveries.list('ws_a', 'whk_1', {}, undefined, 10)).rows.map((d) => d.id)).toEqual(['dlv_0001', 'dlv_0002', 'dlv_0003', 'dlv_0004']);
      expect((await storage.repos.deliveries.list('ws_a', 'whk_1', { status: 'failed', since: at(3000) }, undefined, 10)).rows.map((d) => d.id)).toEqual(['dlv_0003']);
      expect(await storage.repos.deliveries.get('ws_b', 'whk_1', 'dlv_0001')).toBeNull();
      expect((await storage.repos.deliveries.failedBetween('ws_a', 'whk_1', at(0), at(3000))).map((d) => d.id)).toEqual(['dlv_0002']);
      expect(await storage.repos.deliveries.update('dlv_0001', { status: 'pending' }, ['delivered', 'failed'])).toBe(false);
      expect(await storage.repos.deliveries.update('dlv_0002', { status: 'pending', attempts: 0 }, ['delivered', 'failed'])).toBe(true);
      await storage.repos.deliveries.insertAttempt({ id: 'att_1', delivery_id: 'dlv_0001', workspace_id: 'ws_a', attempted_at: at(1), response_status: 500, duration_ms: 12, response_body: 'oops', error: null });
      await storage.repos.deliveries.insertAttempt({ id: 'att_2', delivery_id: 'dlv_0001', workspace_id: 'ws_a', attempted_at: at(2), response_status: null, duration_ms: 15000, response_body: null, error: 'timeout' });
      expect(await storage.repos.deliveries.attempts('dlv_0001')).toEqual([
        expect.objectContaining({ id: 'att_1', response_status: 500, duration_ms: 12 }),
        expect.objectContaining({ id: 'att_2', response_status: null, error: 'timeout' }),
      ]);
      expect(await storage.repos.deliveries.deletePending('whk_1')).toBe(2);
      expect((await storage.repos.deliveries.list('ws_a', 'whk_1', {}, undefined, 10)).rows.map((d) => d.status)).toEqual(['failed', 'delivered']);
    });

    it('deliveries: the worker\'s queue: claim in due order, fenced outcomes, held and open rows failed apart', async () => {
      const T0 = Date.parse(at(0));
      await storage.repos.deliveries.insertMany([1, 2, 3].map((i) => deliveryRow(i, { subscription_id: 'whk_q', next_attempt_at: at(i) })));
      expect(await storage.repos.deliveries.hasDue(T0, [])).toBe(false);
      expect(await storage.repos.deliveries.hasDue(T0 + 5000, ['whk_q'])).toBe(false);
      const claim = await storage.repos.deliveries.claimDue({ now: T0 + 5000, limit: 1, holder: 'h', ttlMs: 60_000, exceptSubscriptions: [] });
      expect(claim.rows.map((r) => r.id)).toEqual(['dlv_0001']);
      // Disabling fails the open rows nobody holds; the one in flight keeps its claim.
      expect(await storage.repos.deliveries.failOpen('whk_q', 'disabled', at(6))).toBe(2);
      const outcome = { id: 'dlv_0001', token: claim.token, status: 'retrying' as const, attempts: 1, cycle_started_at: at(5), last_attempt_at: at(5), last_response_status: 500, last_error: 'HTTP 500.', next_attempt_at: at(9), updated_at: at(6) };
      const attempt = { id: 'att_q1', delivery_id: 'dlv_0001', workspace_id: 'ws_a', attempted_at: at(5), response_status: 500, duration_ms: 3, response_body: null, error: 'HTTP 500.' };
      // A stale token records its attempt but decides nothing.
      expect([...(await storage.repos.deliveries.recordAttempts([attempt], [{ ...outcome, token: 'stale' }], T0 + 6000))]).toEqual([]);
      expect([...(await storage.repos.deliveries.recordAttempts([{ ...attempt, id: 'att_q2' }], [outcome], T0 + 6000))]).toEqual(['dlv_0001']);
      expect(await storage.repos.deliveries.get('ws_a', 'whk_q', 'dlv_0001')).toMatchObject({ status: 'retrying', attempts: 1, next_attempt_at: at(9), last_response_status: 500 });
      expect((await storage.repos.deliveries.attempts('dlv_0001')).map((a) => a.id)).toEqual(['att_q1', 'att_q2']);
      expect(await storage.repos.deliveries.nextDueAfter(at(6))).toBe(at(9));
    });

    it('outbox: append, pending in order, fan-out mark, tail', async () => {
      for (let i = 1; i <= 3; i++) {
        await storage.repos.outbox.append({ id: `evt_o${i}`, workspace_id: 'ws_a', type: 'pipeline.created', data: { pipeline_id: `pip_${i}` }, occurred_at: at(i) });
      }
      const pending = await storage.repos.outbox.pending(10);
      expect(pending.map((e) => e.id)).toEqual(['evt_o1', 'evt_o2', 'evt_o3']);
      expect(pending[0]?.data).toEqual({ pipeline_id: 'pip_1' });
      await storage.repos.outbox.markFannedOut(['evt_o1', 'evt_o2'], at(9));
      expect((await storage.repos.outbox.pending(10)).map((e) => e.id)).toEqual(['evt_o3']);
      expect((await storage.repos.outbox.get('evt_o1'))?.fanned_out_at).toBe(at(9));
      expect((await storage.repos.outbox.listForWorkspace('ws_b')).length).toBe(0);
    });

    it("events by id: a stream's units found by the span of their ids, interleaved, at a boundary, beside ids without a time", async () => {
      await seedConnectorsAndPipeline();
      // Ids as a stream's are: a ULID of the record's time (derived from the position).
      const t0 = Date.parse(at(0));
      const streamed = (pipelineId: string, n: number, ms: number): EventRow => ({ ...eventRow(n, { pipeline_id: pipelineId, occurred_at: new Date(ms).toISOString() }), id: deriveEventId(pipelineId, `p${n}`, ms) });
      const units: EventRow[][] = [];
      // Two pipelines writing the same seconds: each unit's span overlaps the other's.
      for (let b = 0; b < 6; b++) units.push(Array.from({ length: 50 }, (_, k) => streamed(b % 2 === 0 ? 'pip_1' : 'pip_2', b * 100 + k, t0 + Math.floor(b / 2) * 1000 + k * 20)));
      // Every level's cell edge in one unit: a millisecond before and after 2^28 / 32 ms.
      const edge = 2 ** 23 * Math.ceil(t0 / 2 ** 23);
      units.push([streamed('pip_1', 900, edge - 1), streamed('pip_1', 901, edge)]);
      // A unit of ids without a time (found by each of its keys), and one whose times are hours apart.
      units.push([eventRow(950), eventRow(951)]);
      units.push([streamed('pip_1', 960, t0), streamed('pip_1', 961, t0 + 5 * 3_600_000)]);
      for (const unit of units) await storage.repos.events.append(unit);
      for (const unit of units) {
        for (const e of unit) expect((await storage.repos.events.get('ws_a', e.id))?.payload, e.id).toEqual(e.payload);
      }
      expect(await storage.repos.events.get('ws_b', units[0]![0]!.id)).toBeNull();
      // The same moment, never written.
      expect(await storage.repos.events.get('ws_a', deriveEventId('pip_1', 'p-none', t0 + 20))).toBeNull();
      // Retention takes the units and what finds them: nothing is found, nothing is left behind.
      expect(await storage.repos.events.deleteSettledBefore('pip_1', at(10_000_000_000), 100)).toBe(6);
      expect(await storage.repos.events.deleteSettledBefore('pip_2', at(10_000_000_000), 100)).toBe(3);
      for (const unit of units) {
        for (const e of unit) expect(await storage.repos.events.get('ws_a', e.id)).toBeNull();
      }
      if (storage.dialect.inProcess) {
        for (const table of ['event_keys', 'event_key_spans']) expect((await storage.knex(table).count({ n: '*' }))[0]!.n, table).toBe(0);
      }
    });

    it('retention deletes: only what is settled and older than the cutoff, a chunk at a time', async () => {
      await seedConnectorsAndPipeline();
      // Events go a unit at a time: one whose events all happened and were logged before the
      // cutoff, and none of which is dead-lettered or replaying now.
      for (const unit of [
        [eventRow(1), eventRow(2, { status: 'filtered' })], [eventRow(3, { status: 'dead_lettered' })], [eventRow(4, { status: 'replaying' })],
        [eventRow(5, { created_at: at(10_000) })], [eventRow(6, { occurred_at: at(20_000) })], [eventRow(7, { pipeline_id: 'pip_2' })], [eventRow(8)],
      ]) await storage.repos.events.append(unit);
      expect(await storage.repos.events.deleteSettledBefore('pip_1', at(5_000), 1)).toBe(1);
      expect(await storage.repos.events.deleteSettledBefore('pip_1', at(5_000), 100)).toBe(1);
      expect(await storage.repos.events.deleteSettledBefore('pip_1', at(5_000), 100)).toBe(0);
      const left = async (pipelineId: string) => (await storage.repos.events.list('ws_a', pipelineId, {}, undefined, 100)).rows.map((r) => r.id).sort();
      expect(await left('pip_1')).toEqual(['evt_000003', 'evt_000004', 'evt_000005', 'evt_000006']);
      expect(await left('pip_2')).toEqual(['evt_000007']);
      expect(await storage.repos.events.get('ws_a', 'evt_000008')).toBeNull();
      expect(await storage.repos.events.get('ws_a', 'evt_000003')).toMatchObject({ status: 'dead_lettered' });

      // Runs: finished ones made before the cutoff id go; queued and running ones stay.
      const run = (id: string, status: 'queued' | 'running' | 'succeeded' | 'failed') => ({ id, workspace_id: 'ws_a', pipeline_id: 'pip_1', trigger: 'manual' as const, scheduled_for: null, status, created_at: at(0) });
      for (const [id, status] of [['run_01A', 'succeeded'], ['run_01B', 'failed'], ['run_01C', 'running'], ['run_01D', 'queued'], ['run_09Z', 'succeeded']] as const) await storage.repos.runs.insert(run(id, status));
      expect(await storage.repos.runs.deleteFinishedBefore('run_05', 100)).toBe(2);
      expect((await storage.repos.runs.list('ws_a', 'pip_1', undefined, 100)).rows.map((r) => r.id)).toEqual(['run_01C', 'run_01D', 'run_09Z']);

      // Deliveries: delivered and failed ones (with their attempts) go; pending and retrying stay.
      await storage.repos.deliveries.insertMany([deliveryRow(1, { status: 'delivered' }), deliveryRow(2, { status: 'failed' }), deliveryRow(3), deliveryRow(4, { status: 'retrying' }), deliveryRow(9, { id: 'dlv_9999', status: 'delivered' })]);
      await storage.repos.deliveries.insertAttempt({ id: 'att_1', delivery_id: 'dlv_0001', workspace_id: 'ws_a', attempted_at: at(1), response_status: 204, duration_ms: 3, response_body: null, error: null });
      await storage.repos.deliveries.insertAttempt({ id: 'att_3', delivery_id: 'dlv_0003', workspace_id: 'ws_a', attempted_at: at(1), response_status: 500, duration_ms: 3, response_body: null, error: null });
      expect(await storage.transaction((trx) => trx.deliveries.deleteFinishedBefore('dlv_5', 100))).toBe(2);
      expect((await storage.repos.deliveries.list('ws_a', 'whk_1', {}, undefined, 100)).rows.map((r) => r.id)).toEqual(['dlv_0003', 'dlv_0004', 'dlv_9999']);
      expect(await storage.repos.deliveries.attempts('dlv_0001')).toEqual([]);
      expect((await storage.repos.deliveries.attempts('dlv_0003')).map((a) => a.id)).toEqual(['att_3']);

      // Platform events: fanned out before the cutoff go; pending ones stay.
      for (let i = 1; i <= 3; i++) await storage.repos.outbox.append({ id: `evt_r${i}`, workspace_id: 'ws_a', type: 'pipeline.created', data: {}, occurred_at: at(i) });
      await storage.repos.outbox.markFannedOut(['evt_r1'], at(1_000));
      await storage.repos.outbox.markFannedOut(['evt_r2'], at(9_000));
      expect(await storage.repos.outbox.deleteFannedOutBefore(at(5_000), 100)).toBe(1);
      expect((await storage.repos.outbox.listForWorkspace('ws_a')).map((e) => e.id)).toEqual(['evt_r2', 'evt_r3']);
    });

    it('stats: figures across workspaces, zero where nothing is', async () => {
      expect(await storage.repos.stats.read()).toEqual({
        pipelinesByState: {},
        runsByStatus: {},
        deliveriesByStatus: {},
        runEvents: { read: 0, written: 0, filtered: 0, dead_lettered: 0 },
        queues: { outbox: 0, deliveries: 0, replays: 0, runs: 0 },
        holds: [],
      });
      await seedConnectorsAndPipeline();
      await storage.repos.pipelines.insert(pipelineRow({ id: 'pip_2', name: 'two', state: 'active' }));
      await storage.repos.pipelines.insert(pipelineRow({ id: 'pip_3', name: 'three', state: 'active' }));
      await storage.repos.pipelines.insert(pipelineRow({ id: 'pip_b', name: 'b', workspace_id: 'ws_b', state: 'paused' }));
      await storage.repos.pipelines.markDeleted('ws_a', 'pip_3', at(1));
      const run = (id: string, status: 'queued' | 'succeeded') => ({ id, workspace_id: 'ws_a', pipeline_id: 'pip_1', trigger: 'manual' as const, scheduled_for: null, status, created_at: at(0) });
      await storage.repos.runs.insert(run('run_1', 'succeeded'));
      await storage.repos.runs.insert(run('run_2', 'queued'));
      await storage.repos.runs.addCounts('run_1', { events_read: 10, events_written: 7, events_filtered: 2, events_dead_lettered: 1 });
      await storage.repos.runs.addCounts('run_2', { events_read: 3, events_written: 3 });
      await storage.repos.deliveries.insertMany([deliveryRow(1), deliveryRow(2, { status: 'retrying' }), deliveryRow(3, { status: 'delivered' })]);
      for (let i = 1; i <= 3; i++) {
        await storage.repos.outbox.append({ id: `evt_s${i}`, workspace_id: 'ws_a', type: 'pipeline.created', data: {}, occurred_at: at(i) });
      }
      await storage.repos.outbox.markFannedOut(['evt_s1'], at(5));
      await storage.repos.events.putDeadLetter({ event_id: 'evt_d1', workspace_id: 'ws_a', pipeline_id: 'pip_1', stage: 'destination', record: { type: 't', payload: {} }, replay_requested_at: at(6), created_at: at(6) });
      await storage.repos.events.putDeadLetter({ event_id: 'evt_d2', workspace_id: 'ws_a', pipeline_id: 'pip_1', stage: 'destination', record: { type: 't', payload: {} }, replay_requested_at: null, created_at: at(6) });
      const hold = { workspace_id: 'ws_a', since: at(7), attempts: 2, error_code: 'connection_refused', error_message: 'refused', next_attempt_at: at(9), events_waiting: 100, updated_at: at(8) };
      await storage.repos.pipelineHolds.put({ ...hold, pipeline_id: 'pip_2', attempts: 1 });
      await storage.repos.pipelineHolds.put({ ...hold, pipeline_id: 'pip_2' });
      expect(await storage.repos.stats.read()).toEqual({
        pipelinesByState: { draft: 1, active: 1, paused: 1 },
        runsByStatus: { succeeded: 1, queued: 1 },
        deliveriesByStatus: { pending: 1, retrying: 1, delivered: 1 },
        runEvents: { read: 13, written: 10, filtered: 2, dead_lettered: 1 },
        queues: { outbox: 2, deliveries: 2, replays: 1, runs: 1 },
        holds: [{ pipeline_id: 'pip_2', since: at(7), events_waiting: 100 }],
      });
      expect((await storage.repos.pipelineHolds.forPipelines('ws_a', ['pip_1', 'pip_2'])).get('pip_2')?.attempts).toBe(2);
      expect((await storage.repos.pipelineHolds.forPipelines('ws_b', ['pip_2'])).size).toBe(0);
      await storage.repos.pipelineHolds.clear('pip_2');
      expect((await storage.repos.stats.read()).holds).toEqual([]);
    });

    it('backfills: insert once, get per workspace, list in id order, the open ones oldest first, an end that stays', async () => {
      const backfill = (id: string, state: BackfillRow['state'], overrides: Partial<BackfillRow> = {}): BackfillRow => ({
        id,
        workspace_id: 'ws_a',
        pipeline_id: 'pip_1',
        state,
        tables: [{ table: 'public.items', rows_read: 0, rows_estimated: 1_000_000_000_000, state: 'pending' }],
        where: { 'public.items': "region = 'é\u2028'" },
        chunk_size: 500,
        rows_read: 0,
        error: null,
        created_at: at(0),
        started_at: null,
        finished_at: null,
        updated_at: at(0),
        ...overrides,
      });
      await storage.repos.backfills.insert(backfill('bfl_1', 'succeeded', { where: null, chunk_size: null, rows_read: 2 ** 40, finished_at: at(5) }));
      await storage.repos.backfills.insert(backfill('bfl_2', 'running', { started_at: at(1) }));
      await storage.repos.backfills.insert(backfill('bfl_3', 'queued'));
      await storage.repos.backfills.insert(backfill('bfl_4', 'cancelled'));
      await storage.repos.backfills.insert(backfill('bfl_5', 'queued', { pipeline_id: 'pip_2' }));
      // A second insert of an id (a report heard twice) changes nothing.
      await storage.repos.backfills.insert(backfill('bfl_3', 'failed'));
      expect(await storage.repos.backfills.get('ws_a', 'bfl_1')).toEqual(backfill('bfl_1', 'succeeded', { where: null, chunk_size: null, rows_read: 2 ** 40, finished_at: at(5) }));
      expect(await storage.repos.backfills.get('ws_a', 'bfl_2')).toEqual(backfill('bfl_2', 'running', { started_at: at(1) }));
      expect(await storage.repos.backfills.get('ws_b', 'bfl_2')).toBeNull();
      expect((await storage.repos.backfills.getAnyWorkspace('bfl_3'))?.state).toBe('queued');
      expect((await storage.repos.backfills.list('ws_a', 'pip_1', undefined, 10)).rows.map((r) => r.id)).toEqual(['bfl_1', 'bfl_2', 'bfl_3', 'bfl_4']);
      expect((await storage.repos.backfills.list('ws_a', 'pip_1', ['bfl_3'], 10, 'desc')).rows.map((r) => r.id)).toEqual(['bfl_2', 'bfl_1']);
      expect((await storage.repos.backfills.list('ws_b', 'pip_1', undefined, 10)).rows).toEqual([]);
      expect((await storage.repos.backfills.open('pip_1')).map((r) => r.id)).toEqual(['bfl_2', 'bfl_3']);
      expect(await storage.repos.backfills.cancelledIds('pip_1', 10)).toEqual(['bfl_4']);
      const done = [{ table: 'public.items', rows_read: 7, rows_estimated: 1_000_000_000_000, state: 'done' as const }];
      expect(await storage.repos.backfills.updateOpen('bfl_2', { state: 'succeeded', tables: done, rows_read: 7, finished_at: at(9), updated_at: at(9) })).toBe(true);
      expect(await storage.repos.backfills.get('ws_a', 'bfl_2')).toMatchObject({ state: 'succeeded', tables: done, rows_read: 7, finished_at: at(9) });
      // Ended is final: whoever comes second changes nothing.
      expect(await storage.repos.backfills.updateOpen('bfl_2', { state: 'cancelled', updated_at: at(10) })).toBe(false);
      expect(await storage.repos.backfills.updateOpen('bfl_1', { state: 'running', updated_at: at(10) })).toBe(false);
      expect((await storage.repos.backfills.get('ws_a', 'bfl_2'))?.state).toBe('succeeded');
      expect((await storage.repos.backfills.open('pip_1')).map((r) => r.id)).toEqual(['bfl_3']);
    });

    it('pipeline minutes: batches add up within a minute, a new minute gets a row of its own, a window reads one workspace', async () => {
      const minute = (ms: number) => new Date(T0 + ms - (ms % 60_000)).toISOString();
      const batch = (ms: number, read: number, overrides: { pipeline_id?: string; workspace_id?: string; written?: number; filtered?: number; dead?: number } = {}) => ({
        pipeline_id: overrides.pipeline_id ?? 'pip_1',
        workspace_id: overrides.workspace_id ?? 'ws_a',
        minute: minute(ms),
        events_read: read,
        events_written: overrides.written ?? read,
        events_filtered: overrides.filtered ?? 0,
        events_dead_lettered: overrides.dead ?? 0,
      });
      // Three batches in the first minute, one of them inside a transaction (as a commit is).
      await storage.repos.pipelineMinutes.add(batch(1_000, 10));
      await storage.transaction((trx) => trx.pipelineMinutes.add(batch(30_000, 5, { written: 3, filtered: 1, dead: 1 })));
      await storage.repos.pipelineMinutes.add(batch(59_999, 1));
      // The next minute, another pipeline, another workspace.
      await storage.repos.pipelineMinutes.add(batch(60_000, 7));
      await storage.repos.pipelineMinutes.add(batch(2_000, 100, { pipeline_id: 'pip_2' }));
      await storage.repos.pipelineMinutes.add(batch(3_000, 100, { pipeline_id: 'pip_b', workspace_id: 'ws_b' }));

      const window = await storage.repos.pipelineMinutes.range('ws_a', 'pip_1', at(0), at(10 * 60_000));
      expect(window).toEqual([
        { pipeline_id: 'pip_1', workspace_id: 'ws_a', minute: at(0), events_read: 16, events_written: 14, events_filtered: 1, events_dead_lettered: 1 },
        { pipeline_id: 'pip_1', workspace_id: 'ws_a', minute: at(60_000), events_read: 7, events_written: 7, events_filtered: 0, events_dead_lettered: 0 },
      ]);
      // `until` is exclusive; another workspace sees nothing of the pipeline, even by its id.
      expect((await storage.repos.pipelineMinutes.range('ws_a', 'pip_1', at(0), at(60_000))).map((r) => r.minute)).toEqual([at(0)]);
      expect(await storage.repos.pipelineMinutes.range('ws_b', 'pip_1', at(0), at(10 * 60_000))).toEqual([]);
      expect((await storage.repos.pipelineMinutes.range('ws_b', 'pip_b', at(0), at(60_000)))[0]?.events_read).toBe(100);
    });

    it('pipeline minutes: retention deletes the minutes before the cutoff, across pipelines, a chunk at a time', async () => {
      expect(await storage.repos.pipelineMinutes.oldest()).toBeNull();
      const row = (pipelineId: string, minutes: number) => ({
        pipeline_id: pipelineId, workspace_id: 'ws_a', minute: at(minutes * 60_000), events_read: 1, events_written: 1, events_filtered: 0, events_dead_lettered: 0,
      });
      for (let m = 0; m < 5; m++) {
        await storage.repos.pipelineMinutes.add(row('pip_1', m));
        await storage.repos.pipelineMinutes.add(row('pip_2', m + 1));
      }
      expect(await storage.repos.pipelineMinutes.oldest()).toBe(at(0));
      // Before minute 3: pip_1's minutes 0, 1, 2 and pip_2's 1, 2; oldest first, 2 per chunk.
      expect(await storage.repos.pipelineMinutes.deleteBefore(at(3 * 60_000), 2)).toBe(2);
      expect(await storage.repos.pipelineMinutes.oldest()).toBe(at(60_000));
      expect(await storage.repos.pipelineMinutes.deleteBefore(at(3 * 60_000), 100)).toBe(3);
      expect(await storage.repos.pipelineMinutes.deleteBefore(at(3 * 60_000), 100)).toBe(0);
      const minutesOf = async (pipelineId: string) => (await storage.repos.pipelineMinutes.range('ws_a', pipelineId, at(0), at(3_600_000))).map((r) => r.minute);
      expect(await minutesOf('pip_1')).toEqual([at(180_000), at(240_000)]);
      expect(await minutesOf('pip_2')).toEqual([at(180_000), at(240_000), at(300_000)]);
      expect(await storage.repos.pipelineMinutes.oldest()).toBe(at(180_000));
    });

    it('events: how many of a pipeline\'s events are dead-lettered and replaying now', async () => {
      expect(await storage.repos.events.countOpen('pip_1')).toEqual({ dead_lettered: 0, replaying: 0 });
      await storage.repos.events.append([
        eventRow(1), eventRow(2, { status: 'filtered' }), eventRow(3, { status: 'dead_lettered' }), eventRow(4, { status: 'dead_lettered' }),
        eventRow(5, { status: 'replaying' }), eventRow(6, { status: 'dead_lettered', pipeline_id: 'pip_2' }),
      ]);
      expect(await storage.repos.events.countOpen('pip_1')).toEqual({ dead_lettered: 2, replaying: 1 });
      expect(await storage.repos.events.countOpen('pip_2')).toEqual({ dead_lettered: 1, replaying: 0 });
    });

    it('idempotency: claim, in progress, completion, stale takeover, purge', async () => {
      const record = (owner: string, createdMs: number) => ({
        api_key_id: 'key_1', key: 'k1', workspace_id: 'ws_a', request_hash: 'hash-a', owner_token: owner,
        locked_until: at(createdMs + 30_000), created_at: at(createdMs), expires_at: at(createdMs + 86_400_000),
      });
      expect(await storage.repos.idempotency.begin(record('o1', 0), at(0))).toEqual({ started: true });
      const second = await storage.repos.idempotency.begin(record('o2', 10), at(10));
      expect(second).toMatchObject({ started: false, existing: { status: 'processing', owner_token: 'o1' } });
      // The first request crashed: after its lock runs out, a retry takes the key over.
      expect(await storage.repos.idempotency.begin(record('o3', 40_000), at(40_000))).toEqual({ started: true });
      // The crashed first request comes back: it no longer owns the key and may not store its answer.
      expect(await storage.repos.idempotency.complete('key_1', 'k1', 'o1', { status: 500, headers: {}, body: 'late' })).toBe(false);
      await storage.repos.idempotency.abandon('key_1', 'k1', 'o1');
      expect((await storage.repos.idempotency.get('key_1', 'k1'))?.owner_token).toBe('o3');
      expect(await storage.repos.idempotency.complete('key_1', 'k1', 'o3', { status: 201, headers: { 'content-type': 'application/json' }, body: '{"id":"x"}' })).toBe(true);
      const replay = await storage.repos.idempotency.begin(record('o4', 50_000), at(50_000));
      expect(replay).toMatchObject({ started: false, existing: { status: 'completed', response_status: 201, response_headers: { 'content-type': 'application/json' }, response_body: '{"id":"x"}' } });
      await storage.repos.idempotency.begin({ ...record('o5', 0), key: 'k2' }, at(0));
      await storage.repos.idempotency.abandon('key_1', 'k2', 'o5');
      expect(await storage.repos.idempotency.get('key_1', 'k2')).toBeNull();
      expect(await storage.repos.idempotency.purgeExpired(at(200_000_000))).toBe(1);
      expect(await storage.repos.idempotency.get('key_1', 'k1')).toBeNull();
    });

    it('leases: one holder, heartbeat, takeover after expiry, stale token refused', async () => {
      const a = await storage.repos.leases.acquire('pipeline:pip_1', 'engine-a', 10_000, T0);
      expect(a).not.toBeNull();
      expect(await storage.repos.leases.acquire('pipeline:pip_1', 'engine-b', 10_000, T0 + 5_000)).toBeNull();
      expect(await storage.repos.leases.heartbeat('pipeline:pip_1', a!.token, 10_000, T0 + 9_000)).toBe(true);
      expect(await storage.repos.leases.acquire('pipeline:pip_1', 'engine-b', 10_000, T0 + 15_000)).toBeNull();
      // engine-a stops heartbeating; after expiry engine-b takes over.
      const b = await storage.repos.leases.acquire('pipeline:pip_1', 'engine-b', 10_000, T0 + 19_001);
      expect(b).not.toBeNull();
      expect((await storage.repos.leases.get('pipeline:pip_1'))?.holder).toBe('engine-b');
      expect(await storage.repos.leases.heartbeat('pipeline:pip_1', a!.token, 10_000, T0 + 19_002)).toBe(false);
      expect(await storage.repos.leases.release('pipeline:pip_1', a!.token)).toBe(false);
      expect(await storage.repos.leases.release('pipeline:pip_1', b!.token)).toBe(true);
      expect(await storage.repos.leases.acquire('pipeline:pip_1', 'engine-a', 10_000, T0 + 19_003)).not.toBeNull();
    });

    it('leases: a holder checks it still holds the lease inside the transaction of its work', async () => {
      const a = (await storage.repos.leases.acquire('pipeline:pip_1', 'engine-a', 10_000, T0))!;
      expect(await storage.transaction((repos) => repos.leases.isHeld('pipeline:pip_1', a.token, T0 + 5_000))).toBe(true);
      expect(await storage.repos.leases.isHeld('pipeline:pip_1', a.token, T0 + 10_001)).toBe(false);
      const b = (await storage.repos.leases.acquire('pipeline:pip_1', 'engine-b', 10_000, T0 + 10_002))!;
      expect(await storage.repos.leases.isHeld('pipeline:pip_1', a.token, T0 + 10_003)).toBe(false);
      expect(await storage.repos.leases.isHeld('pipeline:pip_1', b.token, T0 + 10_003)).toBe(true);
    });

    it('checkpoints: a fenced write lands only while its token holds the lease', async () => {
      await seedConnectorsAndPipeline();
      const a = (await storage.repos.leases.acquire('pipeline:pip_1', 'engine-a', 10_000, T0))!;
      const fenceA = { name: 'pipeline:pip_1', token: a.token };
      expect(await storage.transaction((repos) => repos.checkpoints.putFenced('pip_1', { offset: 1 }, null, new Date(T0 + 5_000).toISOString(), fenceA))).toBe(true);
      expect(await storage.repos.checkpoints.putFenced('pip_1', { offset: 2 }, 'run_1', new Date(T0 + 6_000).toISOString(), fenceA)).toBe(true);
      expect(await storage.repos.checkpoints.get('pip_1')).toEqual({ offset: 2 });
      // Expired, then taken over: the old token moves nothing, the new one does.
      expect(await storage.repos.checkpoints.putFenced('pip_1', { offset: 3 }, null, new Date(T0 + 10_001).toISOString(), fenceA)).toBe(false);
      const b = (await storage.repos.leases.acquire('pipeline:pip_1', 'engine-b', 10_000, T0 + 10_002))!;
      expect(await storage.repos.checkpoints.putFenced('pip_1', { offset: 4 }, null, new Date(T0 + 10_003).toISOString(), fenceA)).toBe(false);
      expect(await storage.repos.checkpoints.get('pip_1')).toEqual({ offset: 2 });
      expect(await storage.repos.checkpoints.putFenced('pip_1', { offset: 5 }, null, new Date(T0 + 10_003).toISOString(), { name: 'pipeline:pip_1', token: b.token })).toBe(true);
      expect(await storage.repos.checkpoints.get('pip_1')).toEqual({ offset: 5 });
      // A lease of another name does not fence this one.
      expect(await storage.repos.checkpoints.putFenced('pip_1', { offset: 6 }, null, new Date(T0 + 10_004).toISOString(), { name: 'pipeline:pip_2', token: b.token })).toBe(false);
    });

    it('leases: concurrent acquirers, exactly one wins', async () => {
      const results = await Promise.all(Array.from({ length: 8 }, (_, i) => storage.repos.leases.acquire('scheduler', `engine-${i}`, 10_000, T0)));
      expect(results.filter((r) => r !== null)).toHaveLength(1);
    });

    it('queue claims: disjoint concurrent claims, takeover after expiry, zombie completion refused', async () => {
      await storage.repos.deliveries.insertMany(Array.from({ length: 10 }, (_, i) => deliveryRow(i + 1)));
      const due = (q: Knex.QueryBuilder) => q.whereIn('status', ['pending', 'retrying']).andWhere('next_attempt_at', '<=', at(0));
      const claim = (holder: string, now: number) =>
        storage.repos.deliveries.queue.claim<DeliveryRow>({ where: due, orderBy: ['next_attempt_at', 'id'], limit: 4, holder, ttlMs: 30_000, now });
      const [c1, c2] = await Promise.all([claim('a', T0), claim('b', T0)]);
      const ids1 = c1.rows.map((r) => r.id);
      const ids2 = c2.rows.map((r) => r.id);
      expect(ids1).toHaveLength(4);
      expect(ids2).toHaveLength(4);
      expect(ids1.filter((id) => ids2.includes(id))).toEqual([]);
      const c3 = await claim('c', T0 + 1_000);
      expect(c3.rows).toHaveLength(2);
      expect(await claim('d', T0 + 2_000)).toMatchObject({ rows: [] });
      // Whichever claimer got dlv_0001 dies after one heartbeat on it (to T0 + 50s).
      const victim = 'dlv_0001';
      const dead = ids1.includes(victim) ? c1 : c2;
      const other = dead === c1 ? c2 : c1;
      expect(await storage.repos.deliveries.queue.heartbeat(victim, dead.token, 30_000, T0 + 20_000)).toBe(true);
      // Every lease has expired by now: 'e' takes over the four oldest rows, the victim among them.
      const c4 = await claim('e', T0 + 50_001);
      expect(c4.rows.map((r) => r.id).sort()).toEqual(['dlv_0001', 'dlv_0002', 'dlv_0003', 'dlv_0004']);
      expect(await storage.repos.deliveries.queue.complete(victim, dead.token, { status: 'delivered' }, T0 + 50_002)).toBe(false);
      expect(await storage.repos.deliveries.queue.heartbeat(victim, dead.token, 30_000, T0 + 50_002)).toBe(false);
      expect(await storage.repos.deliveries.queue.complete(victim, c4.token, { status: 'delivered' }, T0 + 50_003)).toBe(true);
      expect((await storage.repos.deliveries.get('ws_a', 'whk_1', victim))?.status).toBe('delivered');
      // A lease that expired is refused even when nobody took over yet.
      const unclaimed = other.rows.map((r) => r.id).find((id) => !c4.rows.some((r) => r.id === id))!;
      expect(await storage.repos.deliveries.queue.complete(unclaimed, other.token, { status: 'delivered' }, T0 + 31_000)).toBe(false);
      expect(await storage.repos.deliveries.queue.updateHeld('dlv_0003', c4.token, { attempts: 1 }, T0 + 50_004)).toBe(true);
      expect(await storage.repos.deliveries.queue.updateHeld('dlv_0003', dead.token, { attempts: 9 }, T0 + 50_004)).toBe(false);
      expect((await storage.repos.deliveries.get('ws_a', 'whk_1', 'dlv_0003'))?.attempts).toBe(1);
      expect(await storage.repos.deliveries.queue.release('dlv_0002', c4.token)).toBe(true);
      expect((await claim('f', T0 + 50_004)).rows.map((r) => r.id)).toContain('dlv_0002');
    });

    it('leases and queue claims of one holder end at once when that holder starts again, and no one else\u2019s', async () => {
      await storage.repos.leases.acquire('pipeline:pip_1', 'engine-a', 30_000, T0);
      await storage.repos.leases.acquire('scheduler', 'engine-b', 30_000, T0);
      await storage.repos.deliveries.insertMany([deliveryRow(1), deliveryRow(2)]);
      const due = (q: Knex.QueryBuilder) => q.whereIn('status', ['pending', 'retrying']).andWhere('next_attempt_at', '<=', at(0));
      const claim = (holder: string, limit: number, now: number) =>
        storage.repos.deliveries.queue.claim<DeliveryRow>({ where: due, orderBy: ['next_attempt_at', 'id'], limit, holder, ttlMs: 30_000, now });
      const held = await claim('engine-a', 1, T0);
      await claim('engine-b', 1, T0);
      // engine-a's process died; a new one with its id starts 1 s later, long before 30 s.
      expect(await storage.repos.leases.expireHeldBy('engine-a', T0 + 1_000)).toBe(1);
      expect(await storage.repos.deliveries.queue.expireHeldBy('engine-a', T0 + 1_000)).toBe(1);
      expect(await storage.repos.leases.acquire('pipeline:pip_1', 'engine-c', 30_000, T0 + 1_001)).not.toBeNull();
      expect(await storage.repos.leases.acquire('scheduler', 'engine-c', 30_000, T0 + 1_001)).toBeNull();
      expect((await claim('engine-c', 2, T0 + 1_001)).rows.map((r) => r.id)).toEqual([held.rows[0]!.id]);
      // What the dead process had in flight is refused: its token no longer holds the row.
      expect(await storage.repos.deliveries.queue.complete(held.rows[0]!.id, held.token, { status: 'delivered' }, T0 + 1_002)).toBe(false);
      // Nothing left to end the second time.
      expect(await storage.repos.leases.expireHeldBy('engine-a', T0 + 1_003)).toBe(0);
    });

    it('bulk writes of more rows than one statement takes: outbox, inbox, deliveries and attempts', async () => {
      const n = 1200;
      const range = Array.from({ length: n }, (_, i) => i);
      await storage.repos.outbox.appendMany(range.map((i) => ({ id: `evt_bulk${i}`, workspace_id: 'ws_a', type: 'event.dead_lettered' as const, data: { i }, occurred_at: at(i) })));
      expect((await storage.repos.outbox.pending(n + 1)).length).toBe(n);
      await storage.repos.inbox.insertMany(range.map((i) => ({ id: `evt_ib${i}`, workspace_id: 'ws_a', connector_id: 'con_bulk', message_id: `m${i}`, type: 't', occurred_at: at(i), payload: { i }, received_at: at(i) })));
      expect((await storage.repos.inbox.readAfter('con_bulk', 0, n + 1)).length).toBe(n);
      await storage.repos.deliveries.insertMany(range.map((i) => deliveryRow(i, { subscription_id: 'whk_bulk' })));
      expect(await storage.repos.deliveries.deletePending('whk_bulk')).toBe(n);
      await storage.repos.deliveries.insertAttempts(range.map((i) => ({ id: `att_${i}`, delivery_id: 'dlv_bulk', workspace_id: 'ws_a', attempted_at: at(i), response_status: 500, duration_ms: 1, response_body: null, error: null })));
      expect((await storage.repos.deliveries.attempts('dlv_bulk')).length).toBe(n);
    });

    it('inbox: deduplicated by message id, read in arrival order after a position', async () => {
      const row = (i: number, message = `msg_${i}`) => ({ id: `evt_in${i}`, workspace_id: 'ws_a', connector_id: 'con_w', message_id: message, type: 't', occurred_at: at(i), payload: { i }, received_at: at(i) });
      await storage.repos.inbox.insertMany([row(1), row(2), row(3)]);
      await storage.repos.inbox.insertMany([row(4, 'msg_2')]);
      const all = await storage.repos.inbox.readAfter('con_w', 0, 10);
      expect(all.map((r) => r.payload.i)).toEqual([1, 2, 3]);
      expect((await storage.repos.inbox.readAfter('con_w', all[0]!.seq, 1)).map((r) => r.id)).toEqual(['evt_in2']);
      expect(await storage.repos.inbox.readAfter('con_other', 0, 10)).toEqual([]);
    });

    describe('batch commits', () => {
      const counts = (n: number) => ({ events_read: n, events_written: n, events_filtered: 0, events_dead_lettered: 0 });
      let fence: { name: string; token: string };

      beforeEach(async () => {
        await seedConnectorsAndPipeline();
        await storage.repos.runs.insert({ id: 'run_1', workspace_id: 'ws_a', pipeline_id: 'pip_1', trigger: 'stream', scheduled_for: null, status: 'running', created_at: at(0) });
        fence = { name: 'pipeline:pip_1', token: (await storage.repos.leases.acquire('pipeline:pip_1', 'engine-a', 60_000, T0))!.token };
      });

      /** A batch of events `from`..`to`, all delivered, its checkpoint at `to`. */
      const batch = (from: number, to: number, overrides: Partial<BatchCommit> = {}): BatchCommit => {
        const events = Array.from({ length: to - from + 1 }, (_, k) => eventRow(from + k, { created_at: at(1000), updated_at: at(1000) }));
        return { workspaceId: 'ws_a', pipelineId: 'pip_1', runId: 'run_1', fence, events, deadLetters: [], notices: [], checkpoint: { at: to }, counts: counts(events.length), now: at(1000), ...overrides };
      };

      it("writes a batch's events, dead letters, checkpoint, run counters, minute and notices in one commit", async () => {
        const commits = storage.batchCommits('pip_1');
        const dead = eventRow(3, { status: 'dead_lettered', attempts: 3, error: { stage: 'destination', code: 'destination_rejected', message: 'no' }, dead_lettered_at: at(1000), created_at: at(1000), updated_at: at(1000) });
        const letter = { event_id: dead.id, workspace_id: 'ws_a', pipeline_id: 'pip_1', stage: 'destination', record: { id: dead.id, type: dead.type, occurred_at: dead.occurred_at, payload: dead.payload }, replay_requested_at: null, created_at: at(1000) };
        const notice = { id: 'evt_notice1', workspace_id: 'ws_a', type: 'event.dead_lettered' as const, data: { pipeline_id: 'pip_1', event_id: dead.id }, occurred_at: at(1000) };
        const minute = { pipeline_id: 'pip_1', workspace_id: 'ws_a', minute: at(0), events_read: 3, events_written: 2, events_filtered: 0, events_dead_lettered: 1 };
        const first = batch(1, 2);
        await commits.queue(undefined)({ ...first, events: [...first.events, dead], deadLetters: [letter], notices: [notice], counts: { ...counts(3), events_written: 2, events_dead_lettered: 1 }, checkpoint: { at: 3 }, minute });
        commits.close();
        expect((await storage.repos.events.get('ws_a', 'evt_000001'))?.status).toBe('delivered');
        expect(await storage.repos.events.get('ws_a', dead.id)).toMatchObject({ status: 'dead_lettered', attempts: 3, error: { code: 'destination_rejected' }, dead_lettered_at: at(1000) });
        expect(await storage.repos.events.getDeadLetter(dead.id)).toMatchObject({ stage: 'destination', record: { id: dead.id, payload: { n: 3 } } });
        expect(await storage.repos.checkpoints.get('pip_1')).toEqual({ at: 3 });
        expect(await storage.repos.runs.get('ws_a', 'run_1')).toMatchObject({ events_read: 3, events_written: 2, events_dead_lettered: 1 });
        expect(await storage.repos.pipelineMinutes.range('ws_a', 'pip_1', at(0), at(60_000))).toMatchObject([{ events_read: 3, events_dead_lettered: 1 }]);
        expect((await storage.repos.outbox.pending(10)).map((e) => [e.id, e.data])).toEqual([['evt_notice1', { pipeline_id: 'pip_1', event_id: dead.id }]]);
      });

      it('refuses a batch whose lease was taken over (lease_lost), and writes none of it', async () => {
        const commits = storage.batchCommits('pip_1');
        const notice = { id: 'evt_notice2', workspace_id: 'ws_a', type: 'event.dead_lettered' as const, data: {}, occurred_at: at(1000) };
        await expect(commits.queue(undefined)(batch(1, 2, { fence: { ...fence, token: 'stale' }, notices: [notice] }))).rejects.toMatchObject({ code: 'lease_lost' });
        commits.close();
        expect(await storage.repos.events.get('ws_a', 'evt_000001')).toBeNull();
        expect(await storage.repos.checkpoints.get('pip_1')).toBeNull();
        expect(await storage.repos.runs.get('ws_a', 'run_1')).toMatchObject({ events_read: 0 });
        expect(await storage.repos.outbox.get('evt_notice2')).toBeNull();
      });

      it('commits a batch without dead letters or notices whole (types, a rare type, counters, minute), and none of it past a lost fence', async () => {
        const commits = storage.batchCommits('pip_1');
        const minute = { pipeline_id: 'pip_1', workspace_id: 'ws_a', minute: at(0), ...counts(41) };
        const rare = eventRow(41, { type: 'order.rare "quoted"', payload: { n: 41, s: 'é\\"' }, created_at: at(1000), updated_at: at(1000) });
        const whole = (overrides: Partial<BatchCommit> = {}) => {
          const b = batch(1, 40, { minute, counts: counts(41), checkpoint: { at: 41 }, ...overrides });
          return { ...b, events: [...b.events, rare] };
        };
        await expect(commits.queue(undefined)(whole({ fence: { ...fence, token: 'stale' } }))).rejects.toMatchObject({ code: 'lease_lost' });
        expect(await storage.repos.events.get('ws_a', 'evt_000001')).toBeNull();
        expect(await storage.repos.checkpoints.get('pip_1')).toBeNull();
        expect(await storage.repos.runs.get('ws_a', 'run_1')).toMatchObject({ events_read: 0 });
        expect(await storage.repos.pipelineMinutes.range('ws_a', 'pip_1', at(0), at(60_000))).toEqual([]);

        await commits.queue(undefined)(whole());
        // A batch without events moves the checkpoint and counts what it read.
        await commits.queue(undefined)(batch(1, 0, { checkpoint: { at: 42 }, counts: { ...counts(0), events_filtered: 1 }, minute: { ...minute, ...counts(0), events_filtered: 1 } }));
        commits.close();
        expect(await storage.repos.checkpoints.get('pip_1')).toEqual({ at: 42 });
        expect(await storage.repos.runs.get('ws_a', 'run_1')).toMatchObject({ events_read: 41, events_written: 41, events_filtered: 1 });
        expect(await storage.repos.pipelineMinutes.range('ws_a', 'pip_1', at(0), at(60_000))).toMatchObject([{ events_read: 41, events_filtered: 1 }]);
        expect((await storage.repos.events.list('ws_a', 'pip_1', {}, undefined, 100)).rows.map((r) => r.id)).toEqual([...Array.from({ length: 40 }, (_, k) => eventRow(k + 1).id), rare.id]);
        expect((await storage.repos.events.list('ws_a', 'pip_1', { type: 'order.rare "quoted"' }, undefined, 100)).rows).toMatchObject([{ id: rare.id, payload: rare.payload }]);
        expect((await storage.repos.events.list('ws_a', 'pip_1', { type: 'order.paid' }, undefined, 100)).rows).toHaveLength(20);
        expect(await storage.repos.events.get('ws_a', 'evt_000040')).toMatchObject({ status: 'delivered', payload: { n: 40 } });
      });

      it('records a batch read again once more; an event read again answers with its newest outcome', async () => {
        const commits = storage.batchCommits('pip_1');
        await commits.queue(undefined)(batch(1, 2));
        const again = batch(2, 3);
        again.events[0]!.status = 'filtered';
        await commits.queue(undefined)(again);
        commits.close();
        expect((await storage.repos.events.get('ws_a', 'evt_000002'))?.status).toBe('filtered');
        expect((await storage.repos.events.get('ws_a', 'evt_000003'))?.status).toBe('delivered');
        expect(await storage.repos.runs.get('ws_a', 'run_1')).toMatchObject({ events_read: 4 });
      });

      it('commits in the order places were taken, and nothing after a batch that failed', async () => {
        const commits = storage.batchCommits('pip_1');
        let release!: () => void;
        const gate = new Promise<void>((resolve) => (release = resolve));
        const commitFirst = commits.queue(undefined);
        const first = gate.then(() => commitFirst(batch(1, 2)));
        const second = commits.queue(first)(batch(3, 4));
        release();
        await Promise.all([first, second]);
        expect(await storage.repos.checkpoints.get('pip_1')).toEqual({ at: 4 });

        const failed = commits.queue(undefined)(batch(5, 6, { fence: { ...fence, token: 'stale' } }));
        failed.catch(() => undefined);
        const after = commits.queue(failed)(batch(7, 8));
        await expect(failed).rejects.toMatchObject({ code: 'lease_lost' });
        await expect(after).rejects.toMatchObject({ code: 'lease_lost' });
        commits.close();
        expect(await storage.repos.events.get('ws_a', 'evt_000007')).toBeNull();
        expect(await storage.repos.checkpoints.get('pip_1')).toEqual({ at: 4 });
      });
    });

    it('transactions: everything rolls back together', async () => {
      await expect(
        storage.transaction(async (repos) => {
          await repos.outbox.append({ id: 'evt_tx', workspace_id: 'ws_a', type: 'pipeline.created', data: {}, occurred_at: at(0) });
          await repos.connectors.insert(connectorRow({ id: 'con_tx' }));
          throw new Error('abort');
        }),
      ).rejects.toThrow('abort');
      expect(await storage.repos.outbox.get('evt_tx')).toBeNull();
      expect(await storage.repos.connectors.get('ws_a', 'con_tx')).toBeNull();
      await storage.transaction(async (repos) => {
        await repos.outbox.append({ id: 'evt_tx2', workspace_id: 'ws_a', type: 'pipeline.created', data: {}, occurred_at: at(0) });
      });
      expect(await storage.repos.outbox.get('evt_tx2')).not.toBeNull();
    });
  });
}

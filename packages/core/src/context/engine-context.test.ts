import { TransactionScope } from './transaction-scope.js';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { systemClock, type PlatformEvent, IdGenerator, silentLogger } from '../common/index.js';
import { afterCommit, reader, transact, type EngineContext } from './engine-context.js';
import { PlatformEventBus } from './platform-event-bus.js';
import { FerryStorage, sqliteStorage } from '../storage/index.js';

let storage: FerryStorage;
let ctx: EngineContext;
let published: PlatformEvent[];

beforeEach(async () => {
  storage = new FerryStorage(sqliteStorage({ filename: ':memory:' }));
  await storage.migrate();
  await storage.repos.workspaces.ensure('ws', '2026-01-01T00:00:00.000Z');
  const bus = new PlatformEventBus(silentLogger);
  published = [];
  bus.on('*', (e) => published.push(e));
  ctx = {
    storage, bus, clock: systemClock, logger: silentLogger, ids: new IdGenerator(systemClock), instanceId: 'test',
    currentTransaction: new TransactionScope(), assertRunning: () => undefined,
  } as unknown as EngineContext;
});

afterEach(async () => {
  await storage.close();
});

it('a change made while a transaction is open in the same flow joins it (no second transaction, no deadlock on SQLite)', async () => {
  await transact(ctx, async (_repos, emit) => {
    emit('ws', 'pipeline.created', { pipeline_id: 'outer' });
    // A service call nested in a runtime batch: it must use the open transaction.
    await transact(ctx, async (repos, innerEmit) => {
      innerEmit('ws', 'pipeline.activated', { pipeline_id: 'inner' });
      await repos.workspaces.ensure('ws2', '2026-01-01T00:00:00.000Z');
    });
    expect(await reader(ctx).workspaces.get('ws2')).not.toBeNull();
    // Nothing is published before the outer transaction commits.
    expect(published).toEqual([]);
  });
  expect(published.map((e) => e.type)).toEqual(['pipeline.created', 'pipeline.activated']);
  expect((await storage.repos.outbox.listForWorkspace('ws')).map((e) => e.type)).toEqual(['pipeline.created', 'pipeline.activated']);
});

it('a failure anywhere inside rolls back the nested change and its events too', async () => {
  await expect(
    transact(ctx, async () => {
      await transact(ctx, async (repos, emit) => {
        emit('ws', 'pipeline.created', { pipeline_id: 'p' });
        await repos.workspaces.ensure('ws3', '2026-01-01T00:00:00.000Z');
      });
      throw new Error('batch failed');
    }),
  ).rejects.toThrow('batch failed');
  expect(await storage.repos.workspaces.get('ws3')).toBeNull();
  expect(await storage.repos.outbox.listForWorkspace('ws')).toEqual([]);
  expect(published).toEqual([]);
});

it('afterCommit runs once the transaction of its flow committed, in order, never after a rollback, and at once outside one', async () => {
  const heard: string[] = [];
  await transact(ctx, async (repos) => {
    afterCommit(ctx, () => heard.push('first'));
    await transact(ctx, async () => afterCommit(ctx, () => heard.push('nested')));
    await repos.workspaces.ensure('ws4', '2026-01-01T00:00:00.000Z');
    // A listener reading the change back must find it committed: nothing runs before the commit.
    expect(heard).toEqual([]);
  });
  expect(heard).toEqual(['first', 'nested']);
  await expect(
    transact(ctx, async () => {
      afterCommit(ctx, () => heard.push('rolled back'));
      throw new Error('no');
    }),
  ).rejects.toThrow('no');
  afterCommit(ctx, () => heard.push('outside'));
  expect(heard).toEqual(['first', 'nested', 'outside']);
});

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Type } from '@sinclair/typebox';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, defineConnector, generateSecretKey, isFerryError, postgresStorage, sqliteStorage, type Engine, type PlatformEvent } from '@ferry/core';
import { VirtualClock } from '@ferry/testing';
import { getSharedTestPostgres } from '@ferry/test-servers';

const memory = defineConnector({
  type: 'memory',
  version: '1.0.0',
  directions: ['source', 'destination'],
  configSchema: Type.Object({ name: Type.String() }),
});

describe('two engines in one process', () => {
  const engines: Engine[] = [];
  afterEach(async () => {
    await Promise.all(engines.splice(0).map((e) => e.stop()));
  });

  async function start(storage: Parameters<typeof createEngine>[0]['storage']): Promise<Engine> {
    const engine = await createEngine({ storage, secretKey: generateSecretKey(), clock: new VirtualClock(), plugins: [memory] });
    await engine.start();
    engines.push(engine);
    return engine;
  }

  it.each([
    ['sqlite files', () => {
      const dir = mkdtempSync(join(tmpdir(), 'ferry-two-'));
      return [sqliteStorage({ filename: join(dir, 'a.db') }), sqliteStorage({ filename: join(dir, 'b.db') })] as const;
    }],
    ['sqlite in memory', () => [sqliteStorage({ filename: ':memory:' }), sqliteStorage({ filename: ':memory:' })] as const],
  ])('with separate storage (%s) share nothing', async (_name, storages) => {
    const [sa, sb] = storages();
    const a = await start(sa);
    const b = await start(sb);
    const heardA: PlatformEvent[] = [];
    const heardB: PlatformEvent[] = [];
    a.on('*', (e) => heardA.push(e));
    b.platformEvents$.subscribe((e) => heardB.push(e));

    const src = await a.connectors.create('default', { type: 'memory', direction: 'source', config: { name: 'in' } });
    const dst = await a.connectors.create('default', { type: 'memory', direction: 'destination', config: { name: 'out' } });
    const pipeline = await a.pipelines.create('default', { name: 'shared-name', source_connector_id: src.id, destination_connector_id: dst.id });
    const key = await a.apiKeys.create({ workspace: 'default' });

    // The same workspace name in B is a different workspace in a different database.
    expect((await b.connectors.list('default')).data).toEqual([]);
    expect((await b.pipelines.list('default')).data).toEqual([]);
    await expect(b.pipelines.get('default', pipeline.id)).rejects.toSatisfy((e) => isFerryError(e, 'not_found'));
    await expect(b.apiKeys.verify(key.key)).rejects.toSatisfy((e) => isFerryError(e, 'unauthenticated'));
    // B's cursors are signed with B's key: A's cursor means nothing there.
    for (let i = 0; i < 2; i++) await a.connectors.create('default', { type: 'memory', direction: 'source', config: { name: `x${i}` } });
    const page = await a.connectors.list('default', { limit: 1 });
    await expect(b.connectors.list('default', { cursor: page.next_cursor! })).rejects.toSatisfy((e) => isFerryError(e, 'invalid_cursor'));
    // Names are unique per workspace per engine: B may use the same name.
    const bs = await b.connectors.create('default', { type: 'memory', direction: 'source', config: { name: 'in' } });
    const bd = await b.connectors.create('default', { type: 'memory', direction: 'destination', config: { name: 'out' } });
    await b.pipelines.create('default', { name: 'shared-name', source_connector_id: bs.id, destination_connector_id: bd.id });

    expect(heardA.map((e) => e.type)).toEqual(['pipeline.created']);
    expect(heardB.map((e) => e.type)).toEqual(['pipeline.created']);
    expect(heardA[0]!.id).not.toBe(heardB[0]!.id);
  });

  it('on one Postgres database, two engines see the same state (scale-out), yet keep their own event bus', async () => {
    const url = await (await getSharedTestPostgres()).createDatabase('two_engines');
    const secretKey = generateSecretKey();
    const make = async () => {
      const engine = await createEngine({ storage: postgresStorage({ connectionString: url }), secretKey, clock: new VirtualClock(), plugins: [memory] });
      await engine.start();
      engines.push(engine);
      return engine;
    };
    const [a, b] = await Promise.all([make(), make()]);
    const heardB: PlatformEvent[] = [];
    b.on('*', (e) => heardB.push(e));
    const src = await a.connectors.create('default', { type: 'memory', direction: 'source', config: { name: 'in' } });
    expect((await b.connectors.get('default', src.id)).config).toEqual({ name: 'in' });
    expect(heardB).toEqual([]);
  });
});

import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { generateSecretKey } from '../crypto/index.js';
import { createEngine } from './engine.js';
import { isFerryError } from '../common/index.js';
import { defineConnector } from '../plugin-api/index.js';
import { sqliteStorage, postgresStorage } from '../storage/index.js';

const noop = defineConnector({ type: 'noop', version: '1.0.0', directions: ['source'], configSchema: Type.Object({}) });

async function codeOf(promise: Promise<unknown> | (() => unknown)): Promise<string | undefined> {
  try {
    await (typeof promise === 'function' ? promise() : promise);
  } catch (error) {
    return isFerryError(error) ? error.code : String(error);
  }
  return undefined;
}

describe('engine lifecycle', () => {
  it('refuses service calls before start and after stop, and start/stop are idempotent', async () => {
    const engine = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }), plugins: [noop] });
    expect(engine.state).toBe('created');
    expect(await codeOf(engine.connectors.list('default'))).toBe('unavailable');
    await engine.start();
    await engine.start();
    expect(engine.state).toBe('running');
    expect((await engine.connectors.create('default', { type: 'noop', direction: 'source', config: {} })).type).toBe('noop');
    await engine.stop();
    await engine.stop();
    expect(engine.state).toBe('stopped');
    expect(await codeOf(engine.connectors.list('default'))).toBe('unavailable');
    expect(await codeOf(engine.start())).toBe('unavailable');
  });

  it('stop lets changes in flight commit and reach listeners, then refuses new ones', async () => {
    const both = defineConnector({ type: 'both', version: '1.0.0', directions: ['source', 'destination'], configSchema: Type.Object({}) });
    const engine = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }), plugins: [both] });
    await engine.start();
    const src = await engine.connectors.create('default', { type: 'both', direction: 'source', config: {} });
    const dst = await engine.connectors.create('default', { type: 'both', direction: 'destination', config: {} });
    const heard: string[] = [];
    engine.on('pipeline.created', (e) => heard.push(String(e.data.pipeline_id)));
    // The create's transaction is under way when stop is called.
    const first = await engine.pipelines.create('default', { name: 'first', source_connector_id: src.id, destination_connector_id: dst.id });
    const creating = engine.pipelines.create('default', { name: 'p', source_connector_id: src.id, destination_connector_id: dst.id });
    // An update writes, then reads the pipeline back: both halves finish.
    const renaming = engine.pipelines.update('default', first.id, { name: 'renamed' });
    const stopping = engine.stop();
    expect(engine.state).toBe('stopping');
    expect(await codeOf(engine.pipelines.list('default'))).toBe('unavailable');
    const created = await creating;
    expect((await renaming).name).toBe('renamed');
    await stopping;
    expect(engine.state).toBe('stopped');
    expect(heard).toEqual([first.id, created.id]);
  });

  it('refuses calls outside running: a call rejects before the start and after the stop, never throws', async () => {
    const engine = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }), plugins: [noop] });
    let thrown: unknown;
    let listed: Promise<unknown> | undefined;
    try {
      listed = engine.pipelines.list('default');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeUndefined();
    await expect(listed).rejects.toThrow(/not started/);
    await engine.start();
    await expect(engine.pipelines.list('default')).resolves.toMatchObject({ data: [] });
    await engine.stop();
    await expect(engine.connectors.list('default')).rejects.toThrow(/shutting down/);
  });

  it('pings its database for a health check: true while it answers, false once stopped, never a throw', async () => {
    const engine = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }), plugins: [noop] });
    await engine.start();
    expect(await engine.ping()).toBe(true);
    await engine.stop();
    expect(await engine.ping()).toBe(false);
    const unreachable = await createEngine({ storage: postgresStorage({ connectionString: 'postgres://u:p@127.0.0.1:1/db' }), secretKey: generateSecretKey() });
    expect(await unreachable.ping()).toBe(false);
    await unreachable.stop();
  });

  it('requires a secret key unless the storage is in memory', async () => {
    expect(await codeOf(() => createEngine({ storage: sqliteStorage({ filename: '/tmp/never-created.db' }) }))).toBe('configuration_invalid');
    expect(await codeOf(() => createEngine({ storage: postgresStorage({ connectionString: 'postgres://u:p@127.0.0.1:1/db' }) }))).toBe('configuration_invalid');
    expect(await codeOf(() => createEngine({ storage: sqliteStorage({ filename: ':memory:' }), secretKey: 'too-short' }))).toBe('configuration_invalid');
    const engine = await createEngine({ storage: sqliteStorage({ filename: '/tmp/never-created.db' }), secretKey: generateSecretKey() });
    expect(engine.state).toBe('created');
  });

  it('refuses two plugins of the same connector type', async () => {
    expect(await codeOf(() => createEngine({ storage: sqliteStorage({ filename: ':memory:' }), plugins: [noop, noop] }))).toBe('configuration_invalid');
  });

  it('gives each engine its own services and event stream', async () => {
    const a = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }), plugins: [noop] });
    const b = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }), plugins: [noop] });
    expect(a.connectors).not.toBe(b.connectors);
    expect(a.platformEvents$).not.toBe(b.platformEvents$);
    expect(a.instanceId).not.toBe(b.instanceId);
  });

  it('reports an unreachable storage as unavailable at start', async () => {
    const engine = await createEngine({ storage: postgresStorage({ connectionString: 'postgres://u:p@127.0.0.1:1/db', pool: { max: 1 } }), secretKey: generateSecretKey() });
    const code = await codeOf(engine.start());
    expect(code).toBe('unavailable');
    expect(engine.state).toBe('created');
    await engine.stop();
  });
});

import { Type } from '@sinclair/typebox';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type PlatformEvent, isFerryError } from '../common/index.js';
import { NO_ENGINE_HOOKS } from '../context/index.js';
import { createEngine, engineContext, type Engine } from '../engine/index.js';
import { recoverRotations } from './connector-rotation.js';
import { openConnector } from './opened-connector.js';
import { ConnectorError, defineConnector, Secret } from '../plugin-api/index.js';
import { sqliteStorage } from '../storage/index.js';

let gate: Promise<void> | undefined;
const db = defineConnector({
  type: 'db',
  version: '1.0.0',
  directions: ['source', 'destination'],
  configSchema: Type.Object({ host: Type.String(), password: Secret(Type.String()) }, { additionalProperties: false }),
  check: async (ctx) => {
    await gate;
    if (ctx.config.password === 'wrong') throw new ConnectorError('auth_failed', 'password authentication failed', { retryable: false });
    return { health: 'healthy', latencyMs: 1 };
  },
  rotate: async (_ctx, input) => {
    rotateInputs.push(input.config ?? null);
    return input.config?.password ? { password: `${input.config.password}` } : { password: 'generated-secret' };
  },
});
const rotateInputs: Array<Record<string, unknown> | null> = [];
const fixed = defineConnector({ type: 'fixed', version: '1.0.0', directions: ['source'], configSchema: Type.Object({ token: Secret(Type.String()) }) });
const refuses = defineConnector({
  type: 'refuses',
  version: '1.0.0',
  directions: ['source'],
  configSchema: Type.Object({ token: Secret(Type.String()) }),
  rotate: async () => {
    throw new ConnectorError('no_admin', 'no admin connection configured', { retryable: false });
  },
});

let engine: Engine;
let events: PlatformEvent[];
async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
    return undefined;
  } catch (error) {
    return isFerryError(error) ? error.code : String(error);
  }
}
const password = async (id: string) => (await engineContext(engine).storage.repos.connectors.get('ws', id))!;
const opened = async (id: string) => (await openConnector(engineContext(engine), 'ws', id)) as { config: { password?: string } };

beforeEach(async () => {
  gate = undefined;
  engine = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }), plugins: [db, fixed, refuses] });
  await engine.start();
  events = [];
  engine.platformEvents$.subscribe((e) => events.push(e));
});
afterEach(() => engine.stop());

async function setup() {
  const shared = await engine.connectors.create('ws', { type: 'db', direction: 'source', config: { host: 'a', password: 'old' } });
  const dest = await engine.connectors.create('ws', { type: 'db', direction: 'destination', config: { host: 'b', password: 'x' } });
  const make = (name: string, activate: boolean) => engine.pipelines.create('ws', { name, source_connector_id: shared.id, destination_connector_id: dest.id, activate });
  const active1 = await make('a1', true);
  const active2 = await make('a2', true);
  const userPaused = await make('p', true);
  await engine.pipelines.pause('ws', userPaused.id);
  const draft = await make('d', false);
  return { shared, active1, active2, userPaused, draft };
}

describe('connector rotation', () => {
  it('rotates once for every pipeline, pausing and resuming exactly the active ones', async () => {
    const { shared, active1, active2, userPaused, draft } = await setup();
    events = [];
    const result = await engine.connectors.rotate('ws', shared.id, { config: { password: 'new' } });
    expect(result.rotation).toMatchObject({ status: 'completed', paused_pipeline_ids: [active1.id, active2.id] });
    expect(result.connector).toMatchObject({ rotation_status: null, health: 'healthy', config: { password: '********' } });
    expect((await opened(shared.id)).config.password).toBe('new');
    const states = await Promise.all([active1, active2, userPaused, draft].map(async (p) => (await engine.pipelines.get('ws', p.id)).state));
    expect(states).toEqual(['active', 'active', 'paused', 'draft']);
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['pipeline.paused', 'pipeline.activated', 'connector.rotated']));
    expect(events.filter((e) => e.type === 'connector.rotated')).toHaveLength(1);
    expect(JSON.stringify(events)).not.toContain('new');
  });

  it('generates credentials through the plugin without a body; a type that cannot is 400', async () => {
    const { shared } = await setup();
    await engine.connectors.rotate('ws', shared.id);
    expect((await opened(shared.id)).config.password).toBe('generated-secret');
    const other = await engine.connectors.create('ws', { type: 'fixed', direction: 'source', config: { token: 't' } });
    expect(await codeOf(engine.connectors.rotate('ws', other.id))).toBe('validation_failed');
    const refusing = await engine.connectors.create('ws', { type: 'refuses', direction: 'source', config: { token: 't' } });
    expect(await codeOf(engine.connectors.rotate('ws', refusing.id))).toBe('validation_failed');
    expect((await engine.connectors.get('ws', refusing.id)).rotation_status).toBeNull();
    expect(await codeOf(engine.connectors.rotate('ws', shared.id, { config: { host: 'elsewhere' } }))).toBe('validation_failed');
    expect(await codeOf(engine.connectors.rotate('ws', shared.id, { config: { password: '********' } }))).toBe('validation_failed');
    expect(await codeOf(engine.connectors.rotate('other-ws', shared.id))).toBe('not_found');
  });

  it('passes supplied credentials through the plugin, which may check or reshape them', async () => {
    const { shared } = await setup();
    rotateInputs.length = 0;
    await engine.connectors.rotate('ws', shared.id, { config: { password: 'supplied' } });
    expect(rotateInputs).toEqual([{ password: 'supplied' }]);
    expect((await opened(shared.id)).config.password).toBe('supplied');
  });

  it('rolls back on a failed check: old credentials, pipelines resumed, 409 rotation_failed', async () => {
    const { shared, active1 } = await setup();
    const before = (await password(shared.id)).secrets;
    expect(await codeOf(engine.connectors.rotate('ws', shared.id, { config: { password: 'wrong' } }))).toBe('rotation_failed');
    expect((await password(shared.id)).secrets).toBe(before);
    expect((await opened(shared.id)).config.password).toBe('old');
    expect((await engine.pipelines.get('ws', active1.id)).state).toBe('active');
    expect((await engine.connectors.get('ws', shared.id)).rotation_status).toBeNull();
    expect(events.some((e) => e.type === 'connector.error')).toBe(true);
    expect(events.some((e) => e.type === 'connector.rotated')).toBe(false);
  });

  it('refuses a second rotation and config changes while one runs; a user pause meanwhile wins', async () => {
    const { shared, active1 } = await setup();
    let open!: () => void;
    gate = new Promise<void>((resolve) => (open = resolve));
    const first = engine.connectors.rotate('ws', shared.id, { config: { password: 'new' } });
    await expect.poll(async () => (await engine.connectors.get('ws', shared.id)).rotation_status).toBe('rotating');
    expect(await codeOf(engine.connectors.rotate('ws', shared.id, { config: { password: 'newer' } }))).toBe('rotation_in_progress');
    expect(await codeOf(engine.connectors.update('ws', shared.id, { config: { host: 'z' } }))).toBe('rotation_in_progress');
    expect((await engine.connectors.get('ws', shared.id)).health).toBe('degraded');
    // The rotation holds it paused; the user activates then pauses it: their pause must stand.
    await engine.pipelines.activate('ws', active1.id);
    await engine.pipelines.pause('ws', active1.id);
    open();
    await first;
    expect((await engine.pipelines.get('ws', active1.id)).state).toBe('paused');
  });

  it('rolls back a rotation a crash interrupted, once it is stale', async () => {
    const { shared, active1 } = await setup();
    const row = await password(shared.id);
    const startedAt = new Date(Date.now() - 3_600_000).toISOString();
    await engineContext(engine).storage.repos.pipelines.update('ws', active1.id, { state: 'paused', paused_by: `rotation:${shared.id}` });
    await engineContext(engine).storage.repos.connectors.update('ws', shared.id, {
      rotation_status: 'rotating',
      rotation_started_at: startedAt,
      rotation_state: JSON.stringify({ previous_secrets: row.secrets, previous_health: 'healthy', paused_pipeline_ids: [active1.id] }),
      secrets: null,
    });
    expect(await recoverRotations(engineContext(engine), NO_ENGINE_HOOKS)).toBe(1);
    expect((await password(shared.id)).secrets).toBe(row.secrets);
    expect((await engine.pipelines.get('ws', active1.id)).state).toBe('active');
    expect(await recoverRotations(engineContext(engine), NO_ENGINE_HOOKS)).toBe(0);
  });
});

import { Type } from '@sinclair/typebox';
import { afterEach, expect, it } from 'vitest';
import { createEngine, type Engine } from '../engine/index.js';
import { defineConnector, Secret } from '../plugin-api/index.js';
import { sqliteStorage } from '../storage/index.js';

// A check's details are shown to whoever may check a connector: like its error message, they
// must never carry a secret, whatever the plugin put in them.
const talkative = defineConnector({
  type: 'talkative',
  version: '1.0.0',
  directions: ['source'],
  configSchema: Type.Object({ host: Type.String(), password: Secret(Type.String()) }, { additionalProperties: false }),
  check: async (ctx) => ({
    health: 'healthy',
    latencyMs: 2,
    details: { server: ctx.config.host, dsn: `postgres://ferry:${ctx.config.password}@${ctx.config.host}/db`, slots: [{ name: 'a', lag_bytes: 10 }] },
  }),
});

let engine: Engine | undefined;
afterEach(async () => {
  await engine?.stop();
});

it('returns a check\'s details with every secret value replaced', async () => {
  engine = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }), plugins: [talkative] });
  await engine.start();
  const connector = await engine.connectors.create('default', { type: 'talkative', direction: 'source', config: { host: 'db.example.com', password: 'hunter2-secret' } });
  const result = await engine.connectors.check('default', connector.id);
  expect(result).toEqual({
    health: 'healthy',
    latency_ms: 2,
    details: { server: 'db.example.com', dsn: 'postgres://ferry:********@db.example.com/db', slots: [{ name: 'a', lag_bytes: 10 }] },
  });
  expect(JSON.stringify(result)).not.toContain('hunter2-secret');
});

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { webhookHeaders } from '@ferry/core';
import { engineContext, generateApiKey } from '@ferry/core/internal';
import { parseServeSettings, startServer, type RunningServer } from '@ferry/server';
import { startWebhookReceiver, type WebhookReceiver } from '@ferry/testing';

const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serve(role: string, database: string, env: Record<string, string> = {}): Promise<RunningServer> {
  const server = await startServer(parseServeSettings(['--port', '0', '--database', database, '--log-level', 'silent', '--role', role, '--outbound-allow', '127.0.0.1'], env));
  cleanups.push(() => server.close());
  return server;
}

/** Polls `check` on real time (the servers run on the system clock) for at most 20 s. */
async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in 20 s');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

it('an API process and a worker process on one database: the API takes the request, the worker moves the event', async () => {
  const database = join(mkdtempSync(join(tmpdir(), 'ferry-roles-')), 'ferry.db');
  const key = generateApiKey().token;
  const receiver: WebhookReceiver = await startWebhookReceiver();
  cleanups.push(() => receiver.close());
  const api = await serve('api', database, { FERRY_BOOTSTRAP_API_KEY: key });
  const worker = await serve('worker', database);

  // The worker's port answers health and metrics only.
  expect((await fetch(`${worker.url}/healthz`)).status).toBe(200);
  expect((await fetch(`${worker.url}/metrics`)).status).toBe(200);
  const noApi = await fetch(`${worker.url}/v2/pipelines`, { headers: { authorization: `Bearer ${key}` } });
  expect(noApi.status).toBe(404);
  expect(noApi.headers.get('content-type')).toContain('application/problem+json');

  const call = async (path: string, body: unknown) => {
    const res = await fetch(`${api.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(res.status).toBe(201);
    return (await res.json()) as { id: string };
  };
  const source = await call('/v2/connectors', { type: 'webhook', direction: 'source', config: { signing_secret: SECRET } });
  const destination = await call('/v2/connectors', { type: 'webhook', direction: 'destination', config: { url: receiver.url } });
  const pipeline = await call('/v2/pipelines', { name: 'split', source_connector_id: source.id, destination_connector_id: destination.id, activate: true, flush_interval_ms: 100 });

  const body = JSON.stringify({ type: 'order.created', payload: { order: 42 } });
  const ingested = await fetch(`${api.url}/v2/ingest/${source.id}`, {
    method: 'POST',
    headers: { ...webhookHeaders({ id: 'msg_1', timestamp: Math.floor(Date.now() / 1000), body }, [SECRET]), 'content-type': 'application/json' },
    body,
  });
  expect(ingested.status).toBe(202);
  // Only the worker runs pipelines: the event reaches the receiver through it.
  await until(() => receiver.received.length > 0);
  expect((JSON.parse(receiver.received[0]!.body) as { events: unknown[] }).events).toMatchObject([{ type: 'order.created', payload: { order: 42 } }]);
  // The pipeline's lease is the worker's: the API process never took it up.
  const leases = (await engineContext(api.engine).storage.knex('leases').where('name', 'like', `%${pipeline.id}%`).select('holder')) as { holder: string }[];
  expect(leases.map((l) => l.holder)).toEqual([worker.engine.instanceId]);
});

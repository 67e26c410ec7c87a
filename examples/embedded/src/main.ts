/**
 * Embedding Ferry: an engine on a SQLite file, a connector type of our own, and the services
 * driven directly from code. Run it with `npm start` at the repository root.
 */
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { Type } from '@sinclair/typebox';
import { createEngine, defineConnector, generateSecretKey, Secret, sqlite, type PlatformEvent } from '@ferry/core';

/** A connector type defined by the application itself: events kept in an in-process array. */
export const inbox = () =>
  defineConnector({
    type: 'inbox',
    version: '1.0.0',
    directions: ['source', 'destination'],
    configSchema: Type.Object({ queue: Type.String({ minLength: 1 }), token: Secret(Type.String({ minLength: 8 })) }, { additionalProperties: false }),
    check: async () => ({ health: 'healthy', latencyMs: 0 }),
  });

/** What the example did, for the test that runs it. */
export interface ExampleSummary {
  connectorIds: string[];
  pipelineState: string;
  redactedToken: unknown;
  events: string[];
}

/** Runs the example against a SQLite file and returns what happened. */
export async function main(filename = 'ferry-example.db', log: (line: string) => void = console.log): Promise<ExampleSummary> {
  const engine = await createEngine({
    storage: sqlite({ filename }),
    plugins: [inbox()],
    // A real application reads this from its secret store (FERRY_SECRET_KEY); without the same
    // key a restarted engine cannot decrypt the connector secrets it stored.
    secretKey: process.env.FERRY_SECRET_KEY ?? generateSecretKey(),
  });
  const events: PlatformEvent[] = [];
  engine.on('*', (event) => events.push(event));
  await engine.start();
  try {
    const source = await engine.connectors.create('default', {
      type: 'inbox',
      direction: 'source',
      name: 'orders in',
      config: { queue: 'orders', token: 'source-token-123' },
    });
    const destination = await engine.connectors.create('default', {
      type: 'inbox',
      direction: 'destination',
      name: 'orders out',
      config: { queue: 'orders-copy', token: 'destination-token-456' },
    });
    log(`connector ${source.id} config: ${JSON.stringify(source.config)}`);

    const name = `orders-copy-${randomUUID().slice(0, 8)}`;
    const pipeline = await engine.pipelines.create('default', {
      name,
      source_connector_id: source.id,
      destination_connector_id: destination.id,
      transforms: [
        { type: 'filter', path: 'status', op: 'eq', value: 'paid' },
        { type: 'mask', path: 'customer.email' },
      ],
      schedule: '*/5 * * * *',
    });
    const active = await engine.pipelines.activate('default', pipeline.id);
    log(`pipeline ${active.name} is ${active.state}`);

    const health = await engine.connectors.check('default', source.id);
    log(`source check: ${health.health} in ${health.latency_ms} ms`);

    const page = await engine.pipelines.list('default', { limit: 10 });
    log(`${page.data.length} pipeline(s) in workspace "default"`);
    log(`platform events: ${events.map((e) => e.type).join(', ')}`);
    return {
      connectorIds: [source.id, destination.id],
      pipelineState: active.state,
      redactedToken: source.config.token,
      events: events.map((e) => e.type),
    };
  } finally {
    await engine.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}

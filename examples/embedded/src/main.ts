/**
 * Embedding Ferry: an engine on a SQLite file, a connector type of our own, and a pipeline run
 * end to end from code: events flow from one in-process queue to another through two transform
 * steps, a record the destination refuses is dead-lettered, fixed and replayed. Run it with
 * `npm run example --workspace @ferry/example-embedded`.
 */
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { Type } from '@sinclair/typebox';
import { ConnectorError, createEngine, defineConnector, generateSecretKey, Secret, sqliteStorage, type DestinationEvent, type JsonObject, type PlatformEvent } from '@ferry/core';

/** The application's own queues: what the `inbox` connector reads from and writes to. */
export const queues = new Map<string, JsonObject[]>();
/** What the `inbox` destination received, by queue. */
export const received = new Map<string, DestinationEvent[]>();
/** Orders without an id are refused until the application learns to accept them. */
let acceptOrdersWithoutId = false;

/** A connector type defined by the application itself: events kept in in-process arrays. */
export const inbox = () =>
  defineConnector({
    type: 'inbox',
    version: '1.0.0',
    directions: ['source', 'destination'],
    configSchema: Type.Object({ queue: Type.String({ minLength: 1 }), token: Secret(Type.String({ minLength: 8 })) }, { additionalProperties: false }),
    check: async () => ({ health: 'healthy', latencyMs: 0 }),
    // A pull source: the checkpoint is the index of the next message.
    source: (ctx) => ({
      read: async (checkpoint, max) => {
        const queue = queues.get(ctx.config.queue) ?? [];
        const from = typeof checkpoint === 'number' ? checkpoint : 0;
        const records = queue.slice(from, from + max).map((payload, i) => ({ position: String(from + i), type: 'order.created', payload }));
        return { records, checkpoint: from + records.length };
      },
    }),
    // A destination answers per event: a refused record is dead-lettered, the others land.
    destination: (ctx) => ({
      write: async (events) =>
        events.map((event) => {
          if (event.payload.order_id === undefined && !acceptOrdersWithoutId) {
            return { ok: false as const, error: new ConnectorError('missing_order_id', 'An order needs an order_id.', { retryable: false }) };
          }
          const out = received.get(ctx.config.queue) ?? [];
          out.push(event);
          received.set(ctx.config.queue, out);
          return { ok: true as const };
        }),
    }),
  });

/** What the example did, for the test that runs it. */
export interface ExampleSummary {
  redactedToken: unknown;
  delivered: JsonObject[];
  deadLettered: { stage: string; code: string } | null;
  replayedStatus: string;
  events: string[];
}

/** Runs the example against a SQLite file and returns what happened. */
export async function main(filename = 'ferry-example.db', log: (line: string) => void = console.log): Promise<ExampleSummary> {
  const engine = await createEngine({
    storage: sqliteStorage({ filename }),
    plugins: [inbox()],
    // A real application reads this from its secret store (FERRY_SECRET_KEY); without the same
    // key a restarted engine cannot decrypt the connector secrets it stored.
    secretKey: process.env.FERRY_SECRET_KEY ?? generateSecretKey(),
  });
  const events: PlatformEvent[] = [];
  engine.on('*', (event) => events.push(event));
  await engine.start();
  const suffix = randomUUID().slice(0, 8);
  queues.set(`orders-${suffix}`, [
    { order_id: 1, status: 'paid', customer: { email: 'ada@example.com' } },
    { order_id: 2, status: 'open', customer: { email: 'bob@example.com' } },
    { status: 'paid', customer: { email: 'cy@example.com' } },
    { order_id: 4, status: 'paid', customer: { email: 'di@example.com' } },
  ]);
  try {
    const source = await engine.connectors.create('default', { type: 'inbox', direction: 'source', config: { queue: `orders-${suffix}`, token: 'source-token-123' } });
    const destination = await engine.connectors.create('default', { type: 'inbox', direction: 'destination', config: { queue: `paid-${suffix}`, token: 'destination-token-456' } });
    log(`connector ${source.id} config: ${JSON.stringify(source.config)}`);

    // Streaming (no schedule): it starts consuming as soon as it is active.
    const deadLettered = new Promise<PlatformEvent>((resolve) => engine.once('event.dead_lettered', resolve));
    const pipeline = await engine.pipelines.create('default', {
      name: `paid-orders-${suffix}`,
      source_connector_id: source.id,
      destination_connector_id: destination.id,
      transforms: [
        { type: 'filter', path: 'status', op: 'eq', value: 'paid' },
        { type: 'mask', path: 'customer.email' },
      ],
      activate: true,
    });
    const dead = await deadLettered;
    log(`dead-lettered ${String(dead.data.event_id)} at ${String(dead.data.stage)}: ${String(dead.data.code)}`);

    const before = await engine.events.get('default', String(dead.data.event_id));
    // The cause is fixed; the event is replayed from the destination stage (the steps do not run again).
    acceptOrdersWithoutId = true;
    const replayed = new Promise<void>((resolve) => {
      const poll = setInterval(() => {
        void engine.events.get('default', String(dead.data.event_id)).then((e) => {
          if (e.status !== 'replaying') {
            clearInterval(poll);
            resolve();
          }
        });
      }, 20);
    });
    await engine.events.replay('default', String(dead.data.event_id));
    await replayed;

    const listed = await engine.events.list('default', pipeline.id, { limit: 10 });
    for (const e of listed.data) log(`event ${e.id} ${e.status} ${JSON.stringify(e.payload)}`);
    const delivered = (received.get(`paid-${suffix}`) ?? []).map((e) => e.payload);
    log(`${delivered.length} paid order(s) delivered, emails masked`);
    const paused = await engine.pipelines.pause('default', pipeline.id);
    log(`pipeline ${paused.name} is ${paused.state}`);
    log(`platform events: ${events.map((e) => e.type).join(', ')}`);
    const again = await engine.events.get('default', String(dead.data.event_id));
    const error = before.error;
    return {
      redactedToken: source.config.token,
      delivered,
      deadLettered: error ? { stage: error.stage, code: error.code } : null,
      replayedStatus: again.status,
      events: events.map((e) => e.type),
    };
  } finally {
    await engine.stop();
    acceptOrdersWithoutId = false;
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}

import { eventually, startWebhookReceiver, type WebhookReceiver } from '@ferry/testing';
import { startConsoleHost, type ConsoleHost } from './console-host.js';

/** A host whose engine holds what an operator's console shows on an ordinary day, and where. */
export interface DemoHost {
  host: ConsoleHost;
  /** The receiver of the webhook subscriptions (closed with {@link DemoHost.close}). */
  receiver: WebhookReceiver;
  ids: {
    /** Scheduled every minute; its destination refuses some records, so it has dead letters. */
    orders: string;
    /** Scheduled every two minutes, paused. */
    clicks: string;
    /** A draft. */
    refunds: string;
    /** Streaming, held: its destination is down. */
    invoices: string;
    /** A subscription whose receiver fails some deliveries. */
    alerts: string;
    /** A subscription the engine disabled: its receiver answered 410. */
    pager: string;
    /** A dead-lettered event of `orders`. */
    deadLetter: string;
  };
  close(): Promise<void>;
}

/** How many minutes of traffic the demo's engine has seen when it is returned. */
export const DEMO_MINUTES = 40;

/**
 * Starts a host and gives its engine 40 minutes of virtual traffic (the clock starts 41 minutes
 * before the wall time, so the page's "3 min ago" reads sensibly): four pipelines in each state
 * that matters (running on a schedule with dead letters, paused, draft, held on a destination
 * that is down), a connector that failed and recovered, two webhook subscriptions (one with
 * failed and retrying deliveries, one the engine disabled). What the console's pictures and
 * its layout tests look at.
 */
export async function startDemoHost(): Promise<DemoHost> {
  // eslint-disable-next-line no-restricted-properties -- the demo ends at the wall time, for readable pictures
  const host = await startConsoleHost('fastify', { clockStartMs: Math.floor(Date.now() / 60_000) * 60_000 - (DEMO_MINUTES + 1) * 60_000 });
  const { engine, hub, clock } = host;
  const receiver = await startWebhookReceiver({ clock });
  let calls = 0;
  receiver.reply((request) => (request.path.includes('pager') ? { status: 410, body: 'This endpoint was removed.' } : ++calls % 3 === 0 ? { status: 503, body: 'upstream timeout' } : { status: 204 }));
  const alerts = await engine.webhooks.create('default', {
    url: `${receiver.url}/ferry/alerts?team=data-platform&env=production`,
    events: ['event.dead_lettered', 'pipeline.failed', 'connector.error', 'connector.health_changed'],
    description: 'data-platform alerts',
  });
  const pager = await engine.webhooks.create('default', { url: `${receiver.url}/pager/v2/incidents`, events: ['pipeline.failed', 'event.dead_lettered'], description: 'on-call pager' });

  const connector = (name: string, direction: 'source' | 'destination', stream: string) => engine.connectors.create('default', { name, type: 'memory', direction, config: { name: stream } });
  const ordersDb = await connector('orders-db', 'source', 'orders');
  const warehouse = await connector('warehouse', 'destination', 'wh');
  const clickstream = await connector('clickstream', 'source', 'clicks');
  const lake = await connector('lake', 'destination', 'lake');
  const invoicesDb = await connector('invoices-db', 'source', 'invoices');
  const billing = await connector('billing-api', 'destination', 'billing');
  hub.sink('wh').reject((e) => (e.payload as { n: number }).n % 97 === 5);
  const orders = await engine.pipelines.create('default', { name: 'orders-to-warehouse', source_connector_id: ordersDb.id, destination_connector_id: warehouse.id, activate: true, schedule: '* * * * *' });
  const clicks = await engine.pipelines.create('default', { name: 'clicks-to-lake', source_connector_id: clickstream.id, destination_connector_id: lake.id, activate: true, schedule: '*/2 * * * *' });
  const refunds = await engine.pipelines.create('default', { name: 'refunds-backfill', source_connector_id: ordersDb.id, destination_connector_id: lake.id });

  const types = ['order.created', 'order.updated', 'order.created', 'order.payment_method.updated'];
  let n = 0;
  for (let m = 0; m < DEMO_MINUTES; m++) {
    // An outage of the lake a quarter of an hour in: the connector goes down and recovers.
    if (m === 15) hub.sink('lake').down(3 * 60_000);
    const k = 20 + Math.round(15 * Math.sin(m / 5) + ((m * 7) % 10));
    for (let i = 0; i < k; i++) hub.stream('orders').push({ type: types[i % types.length]!, payload: { n: n++, order_id: `ord_${1000 + n}`, total: (i * 3.5).toFixed(2), currency: 'EUR' } });
    for (let i = 0; i < k * 2; i++) hub.stream('clicks').push({ type: 'page.view', payload: { n: n++, path: `/products/${i % 12}` } });
    await clock.advance(60_000);
  }
  await engine.pipelines.pause('default', clicks.id);

  // The invoices stream to a billing API that is down: the flow holds, retrying.
  hub.sink('billing').down(6 * 60 * 60_000);
  const invoices = await engine.pipelines.create('default', { name: 'invoices-to-billing', source_connector_id: invoicesDb.id, destination_connector_id: billing.id, activate: true, batch_size: 100, flush_interval_ms: 10 });
  for (let i = 0; i < 12; i++) hub.stream('invoices').push({ type: 'invoice.finalized', payload: { invoice: `in_${5000 + i}`, amount: 1200 + i } });
  await eventually(clock, async () => ((await engine.pipelines.get('default', invoices.id)).held?.attempts ?? 0) >= 3, 5_000, 200);

  await eventually(clock, async () => (await engine.webhooks.get('default', pager.id)).enabled === false, 1_000, 200);
  // The engine's time meets the wall time, so that the page's "in 5 minutes" reads true.
  // eslint-disable-next-line no-restricted-properties -- see above
  if (clock.now() < Date.now()) await clock.advanceTo(Date.now());
  const deadLetter = (await engine.events.list('default', orders.id, { status: 'dead_lettered', order: 'desc', limit: 1 })).data[0]!;
  return {
    host,
    receiver,
    ids: { orders: orders.id, clicks: clicks.id, refunds: refunds.id, invoices: invoices.id, alerts: alerts.id, pager: pager.id, deadLetter: deadLetter.id },
    close: async () => {
      await receiver.close();
      await host.close();
    },
  };
}

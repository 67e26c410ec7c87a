// Draws docs/images/console-pipelines.png, the README's picture of the console: three pipelines
// with 40 minutes of virtual traffic. Run: node --import tsx --conditions=ferry-source scripts/console-readme-picture.mts
import { startConsoleHost } from '../test/console/console-host.js';
import { launchChromium } from '../test/console/chromium.js';
const host = await startConsoleHost('fastify', { clockStartMs: Math.floor(Date.now() / 60_000) * 60_000 - 41 * 60_000 });
const { engine, hub, clock } = host;
const mk = async (name: string, type: string, dir: 'source' | 'destination', stream: string) => engine.connectors.create('default', { name, type, direction: dir, config: { name: stream } });
const a = await mk('orders-db', 'memory', 'source', 'orders');
const b = await mk('warehouse', 'memory', 'destination', 'wh');
const c = await mk('clickstream', 'memory', 'source', 'clicks');
const d = await mk('lake', 'memory', 'destination', 'lake');
hub.sink('wh').reject((e) => (e.payload as { n: number }).n % 97 === 5);
const p1 = await engine.pipelines.create('default', { name: 'orders-to-warehouse', source_connector_id: a.id, destination_connector_id: b.id, activate: true, schedule: '* * * * *' });
const p2 = await engine.pipelines.create('default', { name: 'clicks-to-lake', source_connector_id: c.id, destination_connector_id: d.id, activate: true, schedule: '*/2 * * * *' });
await engine.pipelines.create('default', { name: 'refunds-backfill', source_connector_id: a.id, destination_connector_id: d.id });

let n = 0;
for (let m = 0; m < 40; m++) {
  const k = 20 + Math.round(15 * Math.sin(m / 5) + Math.random() * 10);
  for (let i = 0; i < k; i++) hub.stream('orders').push({ type: 'order.created', payload: { n: n++, total: (i * 3.5).toFixed(2) } });
  for (let i = 0; i < k * 2; i++) hub.stream('clicks').push({ type: 'page.view', payload: { n: n++ } });
  await clock.advance(60_000);
}

await engine.pipelines.pause('default', p2.id);
const browser = await launchChromium();
const page = await browser.newPage({ viewport: { width: 1280, height: 520 } });
await page.goto(`${host.consoleUrl}/`);
await page.getByLabel('API key').fill(host.key);
await page.getByRole('button', { name: 'Sign in' }).click();
await page.getByRole('link', { name: 'orders-to-warehouse' }).waitFor();
await page.waitForTimeout(500);
await page.screenshot({ path: 'docs/images/console-pipelines.png' });
await page.goto(`${host.consoleUrl}/pipelines/${p1.id}`);
await page.locator('tr[data-event-id]').first().waitFor();
await page.waitForTimeout(500);
await page.screenshot({ path: '.tmp/console-screenshots/overview-pipeline.png' });
await browser.close(); await host.close();

/// <reference lib="dom" />
// The callbacks of page.evaluate run in the page: they are typed against the DOM.
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { Type } from '@sinclair/typebox';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ConnectorError, defineConnector } from '@ferry/core';
import { engineContext } from '@ferry/core/internal';
import { eventually, startWebhookReceiver, type WebhookReceiver } from '@ferry/testing';
import { launchChromium, SCREENSHOTS } from './chromium.js';
import { ensureConsoleBuilt } from './console-assets-fresh.js';
import { startDemoHost, type DemoHost } from './console-demo.js';
import { startConsoleHost, type ConsoleHost } from './console-host.js';

/**
 * The console driven in a real headless Chromium, as its users drive it: by labels and roles,
 * with the keyboard where it matters. The engine's time is virtual and moved by the test; the
 * page polls the API on its own timers, and the test waits for what it shows.
 */

let browser: Browser;
beforeAll(async () => {
  ensureConsoleBuilt();
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

const hosts: ConsoleHost[] = [];
const receivers: WebhookReceiver[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((r) => r.close()));
  await Promise.all(hosts.splice(0).map((h) => h.close()));
});

/** What a page did that the console must never do: a request elsewhere, a CSP violation, a script error. */
interface PageWatch {
  foreignRequests: string[];
  problems: string[];
}

/** A new page, watched for requests to other origins, CSP reports and uncaught errors. */
async function openPage(host: ConsoleHost, viewport = { width: 1280, height: 800 }): Promise<{ page: Page; watch: PageWatch }> {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  const watch: PageWatch = { foreignRequests: [], problems: [] };
  page.on('request', (request) => {
    if (new URL(request.url()).origin !== host.origin) watch.foreignRequests.push(request.url());
  });
  page.on('pageerror', (error) => watch.problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) watch.problems.push(`csp: ${message.text()}`);
  });
  // Cumulative layout shift, as Chromium measures it: what moved after the first paint.
  await page.addInitScript(() => {
    const w = window as unknown as { __cls: number };
    w.__cls = 0;
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries() as unknown as Array<{ value: number; hadRecentInput: boolean }>) if (!entry.hadRecentInput) w.__cls += entry.value;
    }).observe({ type: 'layout-shift', buffered: true });
  });
  return { page, watch };
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

const layoutShift = (page: Page) => page.evaluate(() => (window as unknown as { __cls: number }).__cls);

/** Opens the console and submits `key` on its sign-in form; what follows is the caller's to check. */
async function submitKey(page: Page, host: ConsoleHost, key: string): Promise<void> {
  await page.goto(`${host.consoleUrl}/`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/**
 * Signs in with the host's key and waits until the console took it: the form tries the key on
 * the API before it keeps it, so a navigation straight after the click can outrun it.
 */
async function signIn(page: Page, host: ConsoleHost): Promise<void> {
  await submitKey(page, host, host.key);
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

/** A pipeline `orders` from memory `in` to memory `out`, whose sink refuses the event with n = 3. */
async function ordersPipeline(host: ConsoleHost) {
  const { engine } = host;
  const source = await engine.connectors.create('default', { name: 'orders-in', type: 'memory', direction: 'source', config: { name: 'in' } });
  const destination = await engine.connectors.create('default', { name: 'warehouse', type: 'memory', direction: 'destination', config: { name: 'out' } });
  host.hub.sink('out').reject((e) => (e.payload as { n: number }).n === 3);
  return engine.pipelines.create('default', { name: 'orders', source_connector_id: source.id, destination_connector_id: destination.id, activate: true, batch_size: 100, flush_interval_ms: 10 });
}

describe('the console on Fastify', () => {
  it('signs in, shows a pipeline and its events, replays a dead letter, checks a connector and redelivers a failed delivery', async () => {
    const host = await startConsoleHost('fastify');
    hosts.push(host);
    const { engine, clock, hub } = host;
    const receiver = await startWebhookReceiver({ clock });
    receivers.push(receiver);
    // The receiver is gone: the delivery fails at once and the subscription is disabled.
    receiver.reply(() => ({ status: 410, body: 'gone' }));
    const subscription = await engine.webhooks.create('default', { url: receiver.url, events: ['event.dead_lettered'], description: 'alerts' });
    const pipeline = await ordersPipeline(host);
    for (let n = 0; n < 8; n++) hub.stream('in').push({ type: n % 2 ? 'order.updated' : 'order.created', payload: { n, total: n * 10 } });
    await eventually(clock, async () => (await engine.events.list('default', pipeline.id)).data.length === 8, 1000);
    await eventually(clock, async () => (await engine.webhooks.listDeliveries('default', subscription.id)).data[0]?.status === 'failed', 1000);

    const { page, watch } = await openPage(host);

    // A wrong key: the API's own problem, its code and detail.
    await submitKey(page, host, 'fk_not-a-real-key');
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toContain('unauthenticated');
    expect(await alert.textContent()).toContain('HTTP 401');
    // Where a key comes from: the installed command, and the one of a clone of the repository.
    const help = (await page.locator('#api-key-help').textContent()) ?? '';
    expect(help).toContain('ferry keys create --name console');
    expect(help).toContain('npm run -s ferry -- keys create --name console');
    await shot(page, 'sign-in-wrong-key');

    // The right key: the pipelines, with the one created through the API.
    await page.getByLabel('API key').fill(host.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'orders' }) });
    await row.waitFor();
    expect(await row.textContent()).toMatch(/active.*streaming.*orders-in.*healthy.*warehouse.*healthy/s);
    await row.getByRole('link', { name: '1' }).waitFor(); // one dead-lettered event, linked to them
    expect(await row.textContent()).toContain('7 written');
    await shot(page, 'pipelines');
    expect(await layoutShift(page)).toBeLessThan(0.05);
    // The key is in this tab's sessionStorage only: never in the address, never in a cookie.
    expect(await page.evaluate(() => sessionStorage.getItem('ferry.console.api-key'))).toBe(host.key);
    expect(page.url()).not.toContain(host.key);
    expect(await page.context().cookies()).toEqual([]);

    // The pipeline: its events; a dead letter opened, its payload and error, replayed.
    await row.getByRole('link', { name: 'orders' }).click();
    await page.getByRole('heading', { level: 1, name: 'orders' }).waitFor();
    const dead = (await engine.events.list('default', pipeline.id, { status: 'dead_lettered' })).data[0]!;
    const deadRow = page.locator(`tr[data-event-id="${dead.id}"]`);
    await deadRow.getByText('dead lettered').waitFor();
    await deadRow.getByRole('button', { name: `Show event ${dead.id}` }).click();
    const detail = page.locator(`#event-${dead.id}`);
    expect(await detail.textContent()).toMatch(/Stage destination, code record_rejected/);
    expect(await detail.getByLabel(`Payload of event ${dead.id}`).textContent()).toContain('"total": 30');
    await shot(page, 'pipeline-events');
    hub.sink('out').acceptAll();
    await detail.getByRole('button', { name: 'Replay this event' }).click();
    await page.getByText(`Event ${dead.id} is being replayed.`).waitFor();
    await eventually(clock, async () => (await engine.events.get('default', dead.id)).status === 'delivered', 1000);
    await deadRow.getByText('delivered').waitFor();

    // The filters live in the address: a link opens the same listing.
    await page.getByLabel('Status').selectOption('delivered');
    await page.getByLabel('Type').fill('order.updated');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(/status=delivered/);
    expect(new URL(page.url()).searchParams.get('type')).toBe('order.updated');
    await page.locator('tbody tr[data-event-id]').first().waitFor();
    expect(await page.locator('tbody tr[data-event-id]').count()).toBe(4);

    await page.getByRole('link', { name: 'Runs' }).click();
    await page.getByRole('columnheader', { name: 'Trigger' }).waitFor();
    await page.getByRole('cell', { name: 'stream' }).first().waitFor();
    await shot(page, 'pipeline-runs');

    // Connectors: a live check, and its result.
    await page.getByRole('link', { name: 'Connectors' }).click();
    await page.getByRole('button', { name: 'Check warehouse' }).click();
    await page.getByText(/Check of warehouse: healthy in \d+ ms/).waitFor();
    await shot(page, 'connectors');

    // Webhooks: the failed delivery, its attempts, the subscription enabled again, redelivered.
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('link', { name: receiver.url }).click();
    const delivery = (await engine.webhooks.listDeliveries('default', subscription.id)).data[0]!;
    const deliveryRow = page.locator(`tr[data-delivery-id="${delivery.id}"]`);
    await deliveryRow.getByText('failed').waitFor();
    expect(await deliveryRow.textContent()).toContain('HTTP 410');
    await deliveryRow.getByRole('button', { name: `Attempts of delivery ${delivery.id}` }).click();
    await page.locator(`#delivery-${delivery.id}`).getByRole('cell', { name: 'gone', exact: true }).waitFor();
    await shot(page, 'webhook-deliveries');
    receiver.reply(() => ({ status: 204 }));
    await page.getByRole('button', { name: 'Enable' }).click();
    await page.getByText('The subscription is enabled').waitFor();
    await deliveryRow.getByRole('button', { name: `Redeliver event.dead_lettered delivery ${delivery.id}` }).click();
    await page.getByText(`Delivery ${delivery.id} of event.dead_lettered is pending again`).waitFor();
    await eventually(clock, async () => (await engine.webhooks.listDeliveries('default', subscription.id)).data[0]?.status === 'delivered', 1000);
    await deliveryRow.getByText('delivered').waitFor();
    expect(receiver.acknowledged.size).toBe(1);
    // Disabling drops open deliveries: it asks first, and Cancel leaves it enabled.
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByRole('dialog', { name: 'Disable the subscription' }).getByRole('button', { name: 'Cancel' }).click();
    expect((await engine.webhooks.get('default', subscription.id)).enabled).toBe(true);

    expect(watch.foreignRequests).toEqual([]);
    expect(watch.problems).toEqual([]);
  }, 120_000);
});

describe('the console on Express, mounted under prefixes', () => {
  it('finds the API under its prefix, keeps the key for the tab, and asks again when the key is revoked', async () => {
    const host = await startConsoleHost('express', { apiPrefix: '/api', consolePath: '/ops/console' });
    hosts.push(host);
    const pipeline = await ordersPipeline(host);
    const { page, watch } = await openPage(host);
    // A shared link to a view: sign-in first, then that view.
    await page.goto(`${host.consoleUrl}/pipelines/${pipeline.id}/runs`);
    await page.getByLabel('API key').fill(host.key);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'orders' }).waitFor();
    expect(await page.getByRole('link', { name: 'Runs' }).getAttribute('aria-current')).toBe('page');
    // A reload keeps the tab signed in.
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'orders' }).waitFor();

    // Revoked meanwhile: the next call's 401 signs the tab out, with the reason.
    const keyId = (await host.engine.apiKeys.list('default')).data[0]!.id;
    await host.engine.apiKeys.revoke('default', keyId);
    await page.getByRole('link', { name: 'Connectors' }).click();
    await page.getByText('The API no longer accepts the key of this tab').waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('ferry.console.api-key'))).toBeNull();
    expect(watch.foreignRequests).toEqual([]);
    expect(watch.problems).toEqual([]);
  }, 60_000);
});

describe('the console when the network fails', () => {
  it('tries an action again with the same Idempotency-Key when its first answer was lost, and a new one after an answer', async () => {
    const host = await startConsoleHost('fastify');
    hosts.push(host);
    await ordersPipeline(host);
    const { page } = await openPage(host);
    await signIn(page, host);
    await page.getByRole('link', { name: 'Connectors' }).click();
    const keys: string[] = [];
    let dropped = false;
    await page.route('**/v2/connectors/*/check', async (route) => {
      keys.push((await route.request().allHeaders())['idempotency-key'] ?? '');
      if (!dropped) {
        dropped = true;
        await route.abort('connectionreset');
      } else await route.continue();
    });
    await page.getByRole('button', { name: 'Check warehouse' }).click();
    await page.getByRole('alert').getByText('network_error').waitFor();
    await page.getByRole('button', { name: 'Check warehouse' }).click();
    await page.getByText(/Check of warehouse: healthy/).waitFor();
    // A new click after an answer is a new action.
    await page.getByRole('button', { name: 'Check warehouse' }).click();
    await expect.poll(() => keys.length).toBe(3);
    expect(keys[1]).toBe(keys[0]);
    expect(keys[2]).not.toBe(keys[1]);
  }, 60_000);
});

describe('the console for every user', () => {
  it('is reachable by keyboard alone: skip link, sections, actions, and a dialog that holds focus', async () => {
    const host = await startConsoleHost('fastify');
    hosts.push(host);
    const pipeline = await ordersPipeline(host);
    host.hub.stream('in').push({ type: 'order.created', payload: { n: 3 } });
    await eventually(host.clock, async () => (await host.engine.events.list('default', pipeline.id, { status: 'dead_lettered' })).data.length === 1, 1000);
    const { page } = await openPage(host);
    await signIn(page, host);
    await page.getByRole('link', { name: 'orders' }).waitFor();
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    // Tab through the page: every control it reaches is a link, a button or a field, and it
    // reaches the pipeline's actions.
    const reached: string[] = [];
    for (let i = 0; i < 20; i++) {
      await page.keyboard.press('Tab');
      reached.push(await page.evaluate(() => `${document.activeElement?.tagName}:${document.activeElement?.getAttribute('aria-label') ?? document.activeElement?.textContent?.trim()}`));
    }
    expect(reached).toContain('A:Pipelines');
    expect(reached).toContain('A:orders');
    expect(reached).toContain('BUTTON:Pause orders');
    // After the last control, focus leaves the page (BODY) and comes back to the top.
    expect(reached.filter((r) => !r.startsWith('BODY:')).every((r) => /^(A|BUTTON|INPUT|SELECT):/.test(r))).toBe(true);
    // Open a pipeline by keyboard: focus goes to the new view's heading (the link is gone with
    // the old view), then the bulk replay dialog: focus moves in, Escape closes it.
    await page.getByRole('link', { name: 'orders' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'orders' }).waitFor();
    await page.waitForFunction(() => document.activeElement?.tagName === 'H1');
    await page.getByRole('button', { name: 'Replay dead-lettered…' }).waitFor();
    await page.waitForFunction(() => !document.querySelector<HTMLButtonElement>('.bulk button')?.disabled);
    await page.getByRole('button', { name: 'Replay dead-lettered…' }).focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Replay dead-lettered events' });
    await dialog.waitFor();
    expect(await page.evaluate(() => document.activeElement?.closest('dialog') !== null)).toBe(true);
    await shot(page, 'pipeline-bulk-replay');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
  }, 60_000);

  it('says a held pipeline is held, in the list and at the top of its page, and no longer once it moves', async () => {
    const host = await startConsoleHost('fastify');
    hosts.push(host);
    const { engine, clock, hub } = host;
    hub.sink('out').down(60 * 60_000);
    const pipeline = await ordersPipeline(host);
    for (let n = 10; n < 15; n++) hub.stream('in').push({ type: 'order.created', payload: { n } });
    await eventually(clock, async () => ((await engine.pipelines.get('default', pipeline.id)).held?.attempts ?? 0) >= 2, 60_000);
    const { page, watch } = await openPage(host);
    await signIn(page, host);
    const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'orders' }) });
    await row.getByText(/held, \d+ attempts/).waitFor();
    await row.getByRole('link', { name: 'orders' }).click();
    const notice = page.getByRole('status', { name: 'Held' });
    await notice.waitFor();
    const text = (await notice.textContent()) ?? '';
    expect(text).toMatch(/Held since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/);
    expect(text).toContain('5 events wait');
    expect(text).toContain('connection_refused');
    expect(text).toMatch(/Next attempt \d{4}-/);
    await shot(page, 'pipeline-held');
    // The run that keeps retrying the batch says so in the Runs tab, with the failure's code.
    expect((await engine.pipelines.get('default', pipeline.id)).last_run?.held).not.toBeNull();
    await page.getByRole('link', { name: 'Runs' }).click();
    const running = page.getByRole('row').filter({ hasText: 'running' });
    await running.getByText(/held, \d+ attempts/).waitFor();
    expect(await running.getByText('connection_refused').count()).toBe(1);
    await page.getByRole('link', { name: 'Events' }).click();
    // The destination is back: the flow moves, and the notice goes with the next refresh.
    hub.sink('out').up();
    // Reloaded once the events are listed too: the hold may end a moment before the batch's
    // commit is visible, and the page would then open on an empty log until its next refresh.
    await eventually(clock, async () => (await engine.pipelines.get('default', pipeline.id)).held === null && (await engine.events.list('default', pipeline.id)).data.length === 5, 60_000);
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'orders' }).waitFor();
    await page.locator('tr[data-event-id]').first().waitFor();
    expect(await page.getByRole('status', { name: 'Held' }).count()).toBe(0);
    // The events open newest first, as the API lists them with order=desc.
    const newestFirst = (await engine.events.list('default', pipeline.id, { order: 'desc' })).data.map((e) => e.id);
    expect(await page.locator('tr[data-event-id]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-event-id')))).toEqual(newestFirst);

    // The destination failed and recovered: healthy, with its last error greyed as history.
    const warehouse = await engine.connectors.get('default', pipeline.destination_connector_id);
    expect(warehouse.health).toBe('healthy');
    expect(warehouse.last_error?.code).toBe('connection_refused');
    await page.getByRole('link', { name: 'Connectors' }).click();
    const warehouseRow = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: /warehouse/ }) });
    const lastError = warehouseRow.locator('.last-error');
    await lastError.waitFor();
    expect(await lastError.textContent()).toMatch(/^recovered connection_refused .*healthy again since\)$/);
    expect(await lastError.getAttribute('class')).not.toContain('error-text');
    // One still down is red, as before.
    hub.sink('out').down(60 * 60_000);
    await page.getByRole('button', { name: 'Check warehouse' }).click();
    await page.getByText(/Check of warehouse: down/).waitFor();
    await page.getByRole('button', { name: 'Refresh the connectors' }).click();
    await warehouseRow.locator('.last-error.error-text').waitFor();
    expect(await lastError.textContent()).not.toContain('recovered');
    expect(watch.problems).toEqual([]);
    expect(watch.foreignRequests).toEqual([]);
  }, 60_000);

  it('shows a pipeline\'s backfills with their progress, starts one with a table and a filter, says why one is refused, and cancels one', async () => {
    // A change-capturing source as the console sees one: its config names its tables, and it plans backfills.
    const capture = defineConnector({
      type: 'capture',
      version: '0.0.0-test',
      directions: ['source'],
      configSchema: Type.Object({ tables: Type.Array(Type.String()) }),
      source: () => ({ read: async (checkpoint) => ({ records: [], checkpoint }) }),
      planBackfill: async (ctx, input) => {
        if (Object.values(input.where ?? {}).some((w) => w.includes('nope'))) throw new ConnectorError('invalid_where', 'The where of public.items names "nope", which is not a column of the table.', { retryable: false });
        return { tables: (input.tables ?? ctx.config.tables).map((table) => ({ table, rowsEstimated: 10_000 })) };
      },
    });
    const host = await startConsoleHost('fastify', { plugins: [capture] });
    hosts.push(host);
    const { engine } = host;
    const source = await engine.connectors.create('default', { name: 'orders-db', type: 'capture', direction: 'source', config: { tables: ['public.orders', 'public.items'] } });
    const destination = await engine.connectors.create('default', { name: 'warehouse', type: 'memory', direction: 'destination', config: { name: 'out' } });
    const pipeline = await engine.pipelines.create('default', { name: 'orders-cdc', source_connector_id: source.id, destination_connector_id: destination.id });
    // One that ran for ten minutes of the page's time and read 4,000 of ~10,000 rows, and one done.
    const repos = engineContext(engine).storage.repos;
    // The page measures the rate against the wall clock, not the engine's.
    const tenMinutesAgo = new Date(Date.now() - 600_000).toISOString();
    const record = (id: string, state: 'running' | 'succeeded', rows: number) => ({
      id, workspace_id: 'default', pipeline_id: pipeline.id, state,
      tables: [{ table: 'public.orders', rows_read: rows, rows_estimated: 10_000, state: state === 'running' ? ('running' as const) : ('done' as const) }],
      where: null, chunk_size: null, rows_read: rows, error: null, created_at: tenMinutesAgo, started_at: tenMinutesAgo, finished_at: state === 'succeeded' ? tenMinutesAgo : null, updated_at: tenMinutesAgo,
    });
    await repos.backfills.insert(record('bfl_01JD0000000000000000000001', 'succeeded', 10_000));
    await repos.backfills.insert(record('bfl_01JD0000000000000000000002', 'running', 4_000));
    const { page, watch } = await openPage(host);
    await signIn(page, host);
    await page.goto(`${host.consoleUrl}/pipelines/${pipeline.id}/backfills`);
    const running = page.locator('tr[data-backfill-id="bfl_01JD0000000000000000000002"]');
    await running.waitFor();
    expect(await running.getByRole('progressbar').getAttribute('value')).toBe('0.4');
    expect(await running.textContent()).toContain('4,000 of ~10,000 rows');
    expect(await running.getByText(/^\d+\/s$/).count()).toBe(1);
    expect(await running.getByText(/min/).count()).toBeGreaterThan(0);
    const done = page.locator('tr[data-backfill-id="bfl_01JD0000000000000000000001"]');
    expect(await done.getByRole('progressbar').getAttribute('value')).toBe('1');
    expect(await done.getByRole('button', { name: /Cancel/ }).count()).toBe(0);
    await shot(page, 'pipeline-backfills');

    // A filter the source refuses: said in the dialog, nothing recorded.
    await page.getByRole('button', { name: 'Start a backfill…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Start a backfill' });
    await dialog.getByRole('checkbox', { name: 'public.items' }).check();
    await dialog.getByLabel('Filter of public.items').fill('nope > 1');
    await dialog.getByRole('button', { name: 'Start' }).click();
    await dialog.getByText(/invalid_where|not a column/).first().waitFor();
    expect((await engine.backfills.list('default', pipeline.id)).data).toHaveLength(2);
    await dialog.getByLabel('Filter of public.items').fill("region = 'eu'");
    await dialog.getByLabel('Rows per chunk').fill('500');
    await dialog.getByRole('button', { name: 'Start' }).click();
    await page.getByText(/Backfill bfl_\w+ is queued: public\.items\./).waitFor();
    const created = (await engine.backfills.list('default', pipeline.id, { order: 'desc' })).data[0]!;
    expect(created).toMatchObject({ state: 'queued', tables: [{ table: 'public.items' }], where: { 'public.items': "region = 'eu'" }, chunk_size: 500 });
    const queued = page.locator(`tr[data-backfill-id="${created.id}"]`);
    await queued.waitFor();
    expect(await queued.textContent()).toContain("where region = 'eu'");

    // Cancelled after a confirmation: for good.
    await queued.getByRole('button', { name: `Cancel backfill ${created.id}` }).click();
    await page.getByRole('dialog', { name: 'Cancel the backfill' }).getByRole('button', { name: 'Cancel the backfill' }).click();
    await queued.getByText('cancelled').waitFor();
    expect((await engine.backfills.get('default', created.id)).state).toBe('cancelled');
    expect(watch.problems).toEqual([]);
    expect(watch.foreignRequests).toEqual([]);
  }, 60_000);

  it('reflows at 400 % zoom (320 CSS pixels wide) with no sideways scrolling of the page, and nothing jumps as data arrives', async () => {
    const host = await startConsoleHost('fastify');
    hosts.push(host);
    const pipeline = await ordersPipeline(host);
    for (let n = 0; n < 4; n++) host.hub.stream('in').push({ type: 'order.created', payload: { n } });
    await eventually(host.clock, async () => (await host.engine.events.list('default', pipeline.id)).data.length === 4, 1000);
    // 1280 x 1024 at 400 %: 320 x 256 CSS pixels.
    const { page } = await openPage(host, { width: 320, height: 256 });
    await signIn(page, host);
    const views = [
      { path: '/pipelines', ready: () => page.getByRole('link', { name: 'orders' }).waitFor(), name: 'zoom-400-pipelines' },
      { path: `/pipelines/${pipeline.id}`, ready: () => page.locator('tr[data-event-id]').first().waitFor(), name: 'zoom-400-pipeline' },
      { path: '/connectors', ready: () => page.getByRole('button', { name: 'Check warehouse' }).waitFor(), name: 'zoom-400-connectors' },
      { path: '/webhooks', ready: () => page.getByText('No webhook subscriptions yet.').waitFor(), name: 'zoom-400-webhooks' },
    ];
    for (const view of views) {
      await page.goto(`${host.consoleUrl}${view.path}`);
      await view.ready();
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      expect(overflow, view.path).toBeLessThanOrEqual(0);
      expect(await layoutShift(page), view.path).toBeLessThan(0.05);
      await shot(page, view.name);
    }
  }, 60_000);
});


/** The ids of the event rows the page shows, top to bottom. */
const shownEventIds = (page: Page) => page.locator('tr[data-event-id]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-event-id')));

describe('the console’s listings', () => {
  it('opens events newest first and pages Older and Newer with the API’s cursors, back included, and reads again on Refresh', async () => {
    const host = await startConsoleHost('fastify');
    hosts.push(host);
    const { engine, clock, hub } = host;
    const pipeline = await ordersPipeline(host);
    hub.sink('out').acceptAll();
    for (let n = 0; n < 120; n++) hub.stream('in').push({ type: 'order.created', payload: { n } });
    await eventually(clock, async () => (await engine.pipelines.stats('default', pipeline.id)).per_minute.reduce((n, m) => n + m.events_written, 0) === 120, 1000);
    const pages: string[][] = [];
    let cursor: string | undefined;
    do {
      const answer = await engine.events.list('default', pipeline.id, { limit: 50, order: 'desc', ...(cursor ? { cursor } : {}) });
      pages.push(answer.data.map((e) => e.id));
      cursor = answer.has_more ? (answer.next_cursor ?? undefined) : undefined;
    } while (cursor);
    expect(pages.map((p) => p.length)).toEqual([50, 50, 20]);

    const { page, watch } = await openPage(host);
    await signIn(page, host);
    await page.goto(`${host.consoleUrl}/pipelines/${pipeline.id}`);
    await page.locator('tr[data-event-id]').first().waitFor();
    const pager = page.getByRole('navigation', { name: 'Pages' });
    // The newest page first: Newer has nowhere to go.
    expect(await shownEventIds(page)).toEqual(pages[0]);
    expect(await pager.getByRole('button', { name: 'Newer' }).isDisabled()).toBe(true);
    expect(await pager.textContent()).toContain('Page 1');

    const showsPage = async (i: number) => {
      await page.waitForFunction((first) => document.querySelector('tr[data-event-id]')?.getAttribute('data-event-id') === first, pages[i]![0]);
      expect(await shownEventIds(page)).toEqual(pages[i]);
      expect(await pager.textContent()).toContain(`Page ${i + 1}`);
    };
    await pager.getByRole('link', { name: 'Older' }).click();
    await showsPage(1);
    expect(new URL(page.url()).searchParams.get('cursor')).toBeTruthy();
    await pager.getByRole('link', { name: 'Older' }).click();
    await showsPage(2);
    expect(await pager.getByRole('button', { name: 'Older' }).isDisabled()).toBe(true);
    // Back: the cursor of the page before, remembered by the tab (a reload keeps it).
    await pager.getByRole('link', { name: 'Newer' }).click();
    await showsPage(1);
    await page.reload();
    await showsPage(1);
    await pager.getByRole('link', { name: 'Newer' }).click();
    await showsPage(0);
    expect(new URL(page.url()).searchParams.get('cursor')).toBeNull();

    // Refresh reads the listing now, without waiting for the next poll, and says when.
    const updated = page.locator('.freshness');
    expect(await updated.textContent()).toMatch(/Updated at \d\d:\d\d:\d\d UTC/);
    hub.stream('in').push({ type: 'order.refunded', payload: { n: 120 } });
    await eventually(clock, async () => (await engine.events.list('default', pipeline.id, { type: 'order.refunded' })).data.length === 1, 1000);
    const reads: string[] = [];
    page.on('request', (r) => {
      if (r.url().includes(`/v2/pipelines/${pipeline.id}/events`)) reads.push(r.url());
    });
    await page.getByRole('button', { name: 'Refresh the events' }).click();
    await page.locator('tr[data-event-id]').first().getByText('order.refunded').waitFor({ timeout: 5_000 });
    expect(reads.length).toBeGreaterThanOrEqual(1);
    expect(watch.problems).toEqual([]);
  }, 90_000);

  it('lists a subscription’s deliveries newest first, with no date to type', async () => {
    const host = await startConsoleHost('fastify');
    hosts.push(host);
    const { engine, clock } = host;
    const receiver = await startWebhookReceiver({ clock });
    receivers.push(receiver);
    const subscription = await engine.webhooks.create('default', { url: receiver.url, events: ['pipeline.paused', 'pipeline.activated'], description: 'changes' });
    const pipeline = await ordersPipeline(host);
    for (let i = 0; i < 3; i++) {
      await engine.pipelines.pause('default', pipeline.id);
      await engine.pipelines.activate('default', pipeline.id);
    }
    await eventually(clock, async () => {
      const all = (await engine.webhooks.listDeliveries('default', subscription.id)).data;
      return all.length >= 6 && all.every((d) => d.status === 'delivered');
    }, 1000);
    const newestFirst = (await engine.webhooks.listDeliveries('default', subscription.id, { order: 'desc' })).data.map((d) => d.id);
    const { page } = await openPage(host);
    await signIn(page, host);
    await page.goto(`${host.consoleUrl}/webhooks/${subscription.id}`);
    await page.locator('tr[data-delivery-id]').first().waitFor();
    expect(await page.locator('tr[data-delivery-id]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-delivery-id')))).toEqual(newestFirst);
    expect(await page.locator('main').textContent()).not.toMatch(/Oldest first|Narrow with a time/);
    expect(await page.getByText('Newest first, by when each delivery was made.').count()).toBe(1);
    // A delivery's id, found from anywhere, opens its subscription's deliveries (GET /v2/deliveries/{id}).
    await page.goto(`${host.consoleUrl}/pipelines`);
    const find = page.getByRole('search');
    await find.getByLabel('Find an event by id').fill(newestFirst[2]!);
    await find.getByRole('button', { name: 'Find' }).click();
    await page.waitForURL((url) => url.pathname.endsWith(`/webhooks/${subscription.id}`));
    await page.locator(`tr[data-delivery-id="${newestFirst[2]!}"]`).waitFor();
  }, 60_000);

  it('shows the URL’s filters in the form, offers to clear them only when one is set, and says what a replay does to the counts', async () => {
    const host = await startConsoleHost('fastify');
    hosts.push(host);
    const { engine, clock, hub } = host;
    const pipeline = await ordersPipeline(host);
    for (let n = 0; n < 8; n++) hub.stream('in').push({ type: n % 2 ? 'order.updated' : 'order.created', payload: { n } });
    await eventually(clock, async () => (await engine.events.list('default', pipeline.id)).data.length === 8, 1000);
    const dead = (await engine.events.list('default', pipeline.id, { status: 'dead_lettered' })).data[0]!;
    const { page, watch } = await openPage(host);
    await signIn(page, host);

    // The pipelines list links its dead-lettered count to the filtered listing: the form shows the filter.
    await page.getByRole('row').filter({ has: page.getByRole('link', { name: 'orders' }) }).getByRole('link', { name: '1' }).click();
    await page.waitForURL(/status=dead_lettered/);
    await page.locator(`tr[data-event-id="${dead.id}"]`).waitFor();
    expect(await page.getByLabel('Status').inputValue()).toBe('dead_lettered');
    expect(await page.locator('.filter-state').textContent()).toContain('Showing events with status dead lettered');

    // Replayed and delivered: nothing matches any more, and the page says which filter hides the rest.
    hub.sink('out').acceptAll();
    await page.getByRole('button', { name: `Show event ${dead.id}` }).click();
    await page.getByRole('button', { name: 'Replay this event' }).click();
    await eventually(clock, async () => (await engine.events.get('default', dead.id)).status === 'delivered', 1000);
    const empty = page.locator('.empty');
    await empty.getByText('No events match the filters.').waitFor();
    expect(await empty.textContent()).toContain('None with status dead lettered');
    // The replay is delivered: it counts as written in its minute (not as read), which the chart's note says.
    expect(await page.locator('.chart-note').textContent()).toContain('A replayed event counts as written');
    const minutes = (await engine.pipelines.stats('default', pipeline.id, { minutes: 60 })).per_minute;
    expect(minutes.reduce((n, m) => n + m.events_written, 0)).toBe(minutes.reduce((n, m) => n + m.events_read - m.events_dead_lettered - m.events_filtered, 0) + 1);
    await empty.getByRole('link', { name: 'Clear the filters' }).click();
    await page.waitForURL((url) => !url.search.includes('status'));
    await page.locator(`tr[data-event-id="${dead.id}"]`).getByText('delivered').waitFor();
    expect(await page.getByLabel('Status').inputValue()).toBe('');
    // Back to the filtered address: the form follows the URL again.
    await page.goBack();
    await page.waitForURL(/status=dead_lettered/);
    await empty.waitFor();
    expect(await page.getByLabel('Status').inputValue()).toBe('dead_lettered');
    // Typed but not applied, a field keeps what the user typed through the page's polls.
    await page.getByLabel('Type').fill('order.updated');
    await page.getByRole('button', { name: 'Refresh the events' }).click();
    await page.waitForTimeout(300);
    expect(await page.getByLabel('Type').inputValue()).toBe('order.updated');

    // A pipeline with no events and no filter: nothing to clear.
    const draft = await engine.pipelines.create('default', { name: 'quiet', source_connector_id: pipeline.source_connector_id, destination_connector_id: pipeline.destination_connector_id });
    await page.goto(`${host.consoleUrl}/pipelines/${draft.id}`);
    await page.getByText('No events yet.').waitFor();
    expect(await page.getByText('Clear the filters').count()).toBe(0);
    expect(watch.problems).toEqual([]);
  }, 60_000);

  it('draws Written dashed over Read, both visible, and says in the legend when they are equal', async () => {
    const host = await startConsoleHost('fastify');
    hosts.push(host);
    const { engine, clock, hub } = host;
    const source = await engine.connectors.create('default', { name: 'in', type: 'memory', direction: 'source', config: { name: 'in' } });
    const destination = await engine.connectors.create('default', { name: 'out', type: 'memory', direction: 'destination', config: { name: 'out' } });
    // A flush a second: the clock moves minutes at a time, firing each flush timer on its way.
    const pipeline = await engine.pipelines.create('default', { name: 'clean', source_connector_id: source.id, destination_connector_id: destination.id, activate: true, batch_size: 100, flush_interval_ms: 1000 });
    let pushed = 0;
    for (let minute = 0; minute < 4; minute++) {
      for (let n = 0; n < 5 + 3 * minute; n++, pushed++) hub.stream('in').push({ type: 'tick', payload: { n } });
      await clock.advance(60_000);
    }
    await eventually(clock, async () => (await engine.pipelines.stats('default', pipeline.id)).per_minute.reduce((n, m) => n + m.events_written, 0) === pushed, 1000);
    const { page } = await openPage(host);
    await signIn(page, host);
    await page.goto(`${host.consoleUrl}/pipelines/${pipeline.id}`);
    const legend = page.locator('.chart-legend');
    await legend.getByText('(equal to Read in every minute)').waitFor();
    expect(await page.locator('.chart[role="img"]').first().getAttribute('aria-label')).toContain('Written equals read in every minute.');
    expect(await legend.locator('.swatch-events_written').evaluate((e) => getComputedStyle(e).borderTopStyle)).toBe('dashed');
    // Both colours are on the canvas: the blue of Read shows between the green dashes of Written.
    await page.waitForTimeout(200);
    const colours = await page.locator('.chart:not(.chart-compact) canvas').evaluate((canvas: HTMLCanvasElement) => {
      const { data } = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height);
      const near = (i: number, [r, g, b]: number[]) => Math.abs(data[i]! - r!) < 40 && Math.abs(data[i + 1]! - g!) < 40 && Math.abs(data[i + 2]! - b!) < 40 && data[i + 3]! > 200;
      let read = 0;
      let written = 0;
      for (let i = 0; i < data.length; i += 4) {
        if (near(i, [31, 95, 191])) read++;
        if (near(i, [31, 122, 77])) written++;
      }
      return { read, written };
    });
    expect(colours.read).toBeGreaterThan(30);
    expect(colours.written).toBeGreaterThan(30);
    await shot(page, 'chart-written-equals-read');

    // With a dead letter, Written is below Read in a minute: no such word.
    const ordersIn = await engine.connectors.create('default', { name: 'orders-in', type: 'memory', direction: 'source', config: { name: 'orders' } });
    const warehouse = await engine.connectors.create('default', { name: 'warehouse', type: 'memory', direction: 'destination', config: { name: 'warehouse' } });
    hub.sink('warehouse').reject((e) => (e.payload as { n: number }).n === 3);
    const orders = await engine.pipelines.create('default', { name: 'orders', source_connector_id: ordersIn.id, destination_connector_id: warehouse.id, activate: true, batch_size: 100, flush_interval_ms: 10 });
    for (let n = 0; n < 5; n++) hub.stream('orders').push({ type: 'order.created', payload: { n } });
    await eventually(clock, async () => (await engine.events.list('default', orders.id)).data.length === 5, 1000);
    await page.goto(`${host.consoleUrl}/pipelines/${orders.id}`);
    await page.locator('tr[data-event-id]').first().waitFor();
    expect(await legend.textContent()).not.toContain('equal to Read');
  }, 60_000);
});

describe('the console’s look-up by id', () => {
  it('opens an event of any pipeline from the search box, replays it there, and says what it cannot open', async () => {
    const host = await startConsoleHost('fastify');
    hosts.push(host);
    const { engine, clock, hub } = host;
    const pipeline = await ordersPipeline(host);
    for (let n = 0; n < 5; n++) hub.stream('in').push({ type: 'order.created', payload: { n, total: n * 10 } });
    await eventually(clock, async () => (await engine.events.list('default', pipeline.id)).data.length === 5, 1000);
    const dead = (await engine.events.list('default', pipeline.id, { status: 'dead_lettered' })).data[0]!;
    const { page, watch } = await openPage(host);
    await signIn(page, host);

    const find = page.getByRole('search');
    await find.getByLabel('Find an event by id').fill(` ${dead.id} `);
    await find.getByRole('button', { name: 'Find' }).click();
    await page.getByRole('heading', { level: 1, name: 'Event order.created' }).waitFor();
    expect(page.url()).toBe(`${host.consoleUrl}/events/${dead.id}`);
    expect(await page.getByLabel(`Payload of event ${dead.id}`).textContent()).toContain('"total": 30');
    expect(await page.locator('.facts').textContent()).toMatch(/dead lettered/);
    await page.getByRole('link', { name: 'orders' }).waitFor();
    hub.sink('out').acceptAll();
    await page.getByRole('button', { name: 'Replay this event' }).click();
    await page.getByText(`Event ${dead.id} is being replayed.`).waitFor();
    await eventually(clock, async () => (await engine.events.get('default', dead.id)).status === 'delivered', 1000);
    await page.locator('.facts').getByText('delivered').waitFor();
    await shot(page, 'event');

    // An id no event has: the API's 404, and what such an id may be.
    await find.getByLabel('Find an event by id').fill('evt_01ARZ3NDEKTSV4RRFFQ69G5FAV');
    await find.getByRole('button', { name: 'Find' }).click();
    await page.getByRole('alert').getByText('not_found').waitFor();
    await page.getByText('The ids an ingest answers name the records it stored').waitFor();
    // A delivery's id no delivery has: said in words (one that exists opens its subscription, below).
    await find.getByLabel('Find an event by id').fill('dlv_01ARZ3NDEKTSV4RRFFQ69G5FAV');
    await find.getByRole('button', { name: 'Find' }).click();
    await page.getByText('No delivery of this workspace has the id dlv_01ARZ3NDEKTSV4RRFFQ69G5FAV.').waitFor();
    // A pipeline's id opens the pipeline.
    await find.getByLabel('Find an event by id').fill(pipeline.id);
    await find.getByRole('button', { name: 'Find' }).click();
    await page.getByRole('heading', { level: 1, name: 'orders' }).waitFor();
    // The events listing links each event to its page.
    await page.getByRole('link', { name: dead.id }).click();
    await page.getByRole('heading', { level: 1, name: 'Event order.created' }).waitFor();
    expect(watch.problems).toEqual([]);
  }, 60_000);
});

/**
 * Where the pictures of every view go: docs/images when FERRY_CONSOLE_PICTURES is set (to draw
 * the documentation's pictures again), else beside the other screenshots, so that an ordinary
 * run of the tests leaves the repository as it was.
 */
const PICTURES = process.env.FERRY_CONSOLE_PICTURES ? join(process.cwd(), 'docs', 'images') : SCREENSHOTS;

/** The tallest picture, in CSS pixels: a long listing is cut, its top is what a reader needs. */
const PICTURE_HEIGHT: Record<number, number> = { 1280: 1500, 390: 2600 };

/**
 * What a view must not do at any width: widen the page, clip a table's column (its box would
 * scroll), wrap a chip or cut one without its whole text in the tooltip, break a time, or break
 * a URL or an event type anywhere but at a separator.
 */
async function layoutFaults(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const faults: string[] = [];
    const root = document.documentElement;
    if (root.scrollWidth > root.clientWidth) faults.push(`the page scrolls sideways by ${root.scrollWidth - root.clientWidth} px`);
    for (const box of Array.from(document.querySelectorAll('.table-wrap'))) if (box.scrollWidth > box.clientWidth) faults.push(`a table is clipped by ${box.scrollWidth - box.clientWidth} px`);
    for (const chip of Array.from(document.querySelectorAll<HTMLElement>('.chip'))) {
      const style = getComputedStyle(chip);
      if (style.whiteSpace !== 'nowrap' || chip.getClientRects().length > 1 || chip.getBoundingClientRect().height > parseFloat(style.lineHeight || '20') * 1.6 + 4) faults.push(`chip ${chip.textContent} takes more than a line`);
      if (chip.scrollWidth > chip.clientWidth && chip.title !== chip.textContent) faults.push(`chip ${chip.textContent} is cut without its tooltip`);
    }
    for (const time of Array.from(document.querySelectorAll<HTMLElement>('time'))) if (time.getClientRects().length > 1) faults.push(`time ${time.textContent} is broken across lines`);
    for (const url of Array.from(document.querySelectorAll<HTMLElement>('.url, .event-type'))) {
      const text = url.textContent ?? '';
      const walker = document.createTreeWalker(url, NodeFilter.SHOW_TEXT);
      const chars: Array<[Text, number]> = [];
      for (let node = walker.nextNode() as Text | null; node; node = walker.nextNode() as Text | null) for (let i = 0; i < node.data.length; i++) chars.push([node, i]);
      let top: number | undefined;
      chars.forEach(([node, i], k) => {
        const range = document.createRange();
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        const at = range.getClientRects()[0]?.top;
        if (at === undefined) return;
        if (top !== undefined && at > top + 2 && !('/.&=-_:,;~'.includes(text[k - 1]!) || '?#'.includes(text[k]!))) faults.push(`${text} broken inside a word: ${text.slice(0, k)}|${text.slice(k)}`);
        top = at;
      });
    }
    return faults;
  });
}

describe('the console’s pictures', () => {
  let demo: DemoHost | undefined;
  afterEach(async () => {
    await demo?.close();
    demo = undefined;
  });

  it('draws every view at 1280 and at 390 pixels wide from a real server, nothing clipped, no chip wrapped, no word of a URL broken', async () => {
    demo = await startDemoHost();
    const { host, ids } = demo;
    const retrying = (await host.engine.webhooks.listDeliveries('default', ids.alerts, { status: 'retrying', order: 'desc' })).data[0];
    const views: Array<{ name: string; open: (page: Page) => Promise<void> }> = [
      { name: 'pipelines', open: async (page) => (await page.goto(`${host.consoleUrl}/pipelines`), await page.getByRole('link', { name: 'orders-to-warehouse' }).waitFor()) },
      { name: 'pipeline', open: async (page) => (await page.goto(`${host.consoleUrl}/pipelines/${ids.orders}`), await page.locator('tr[data-event-id]').first().waitFor()) },
      {
        name: 'pipeline-dead-letters',
        open: async (page) => {
          await page.goto(`${host.consoleUrl}/pipelines/${ids.orders}?status=dead_lettered`);
          await page.getByRole('button', { name: /^Show event / }).first().click();
          await page.getByRole('button', { name: 'Replay this event' }).first().waitFor();
        },
      },
      { name: 'runs', open: async (page) => (await page.goto(`${host.consoleUrl}/pipelines/${ids.orders}/runs`), await page.getByText('schedule').first().waitFor()) },
      { name: 'held', open: async (page) => (await page.goto(`${host.consoleUrl}/pipelines/${ids.invoices}`), await page.getByRole('status', { name: 'Held' }).waitFor()) },
      { name: 'event', open: async (page) => (await page.goto(`${host.consoleUrl}/events/${ids.deadLetter}`), await page.getByRole('button', { name: 'Replay this event' }).waitFor()) },
      { name: 'connectors', open: async (page) => (await page.goto(`${host.consoleUrl}/connectors`), await page.getByRole('button', { name: 'Check warehouse' }).waitFor()) },
      {
        name: 'connector-config',
        open: async (page) => {
          await page.goto(`${host.consoleUrl}/connectors`);
          await page.getByRole('button', { name: 'Config of lake' }).click();
          await page.getByLabel('Config of lake').waitFor();
        },
      },
      { name: 'webhooks', open: async (page) => (await page.goto(`${host.consoleUrl}/webhooks`), await page.getByText('data-platform alerts').waitFor()) },
      {
        name: 'webhook-deliveries',
        open: async (page) => {
          await page.goto(`${host.consoleUrl}/webhooks/${ids.alerts}`);
          await page.locator('tr[data-delivery-id]').first().waitFor();
          if (retrying) {
            await page.getByRole('button', { name: `Attempts of delivery ${retrying.id}` }).click();
            await page.locator(`#delivery-${retrying.id} table`).waitFor();
          }
        },
      },
    ];
    for (const width of [1280, 390]) {
      const { page, watch } = await openPage(host, { width, height: width === 1280 ? 800 : 844 });
      const picture = async (name: string) => {
        // The sparklines and the chart are drawn on the next frame after their data.
        await page.waitForTimeout(300);
        const height = Math.min(PICTURE_HEIGHT[width]!, await page.evaluate(() => document.documentElement.scrollHeight));
        await page.screenshot({ path: join(PICTURES, `console-${name}-${width}.png`), fullPage: true, clip: { x: 0, y: 0, width, height } });
      };
      await page.goto(`${host.consoleUrl}/`);
      await page.getByLabel('API key').waitFor();
      expect(await layoutFaults(page), `sign-in at ${width}`).toEqual([]);
      await picture('sign-in');
      await signIn(page, host);
      for (const view of views) {
        await view.open(page);
        expect(await layoutFaults(page), `${view.name} at ${width}`).toEqual([]);
        await picture(view.name);
      }
      if (width === 390) {
        // A phone: every column of a pipeline is on screen, its actions included.
        await page.goto(`${host.consoleUrl}/pipelines`);
        const pause = page.getByRole('button', { name: 'Pause orders-to-warehouse' });
        await pause.waitFor();
        const box = (await pause.boundingBox())!;
        expect(box.x + box.width).toBeLessThanOrEqual(390);
        const cells = await page
          .getByRole('row')
          .filter({ has: page.getByRole('link', { name: 'orders-to-warehouse' }) })
          .locator('td')
          .evaluateAll((tds) => tds.map((td) => ({ label: getComputedStyle(td, '::before').content, right: td.getBoundingClientRect().right, shown: td.getBoundingClientRect().height > 0 })));
        expect(cells.map((c) => c.label)).toEqual(['"State"', '"Source → destination"', '"Last run"', '"Last hour"', '"Dead-lettered"', '"Actions"']);
        expect(cells.every((c) => c.shown && c.right <= 390)).toBe(true);
      }
      expect(watch.problems).toEqual([]);
      expect(watch.foreignRequests).toEqual([]);
      await page.context().close();
    }
  }, 180_000);
});

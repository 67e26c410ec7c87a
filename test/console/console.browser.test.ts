/// <reference lib="dom" />
// The callbacks of page.evaluate run in the page: they are typed against the DOM.
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startWebhookReceiver, type WebhookReceiver } from '@ferry/testing';
import { launchChromium, SCREENSHOTS } from './chromium.js';
import { ensureConsoleBuilt } from './console-assets-fresh.js';
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


import { gzipSync } from 'node:zlib';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_CONTENT_SECURITY_POLICY } from '@ferry/console';
import { ensureConsoleBuilt } from './console-assets-fresh.js';
import { ADAPTERS, startConsoleHost, type ConsoleHost } from './console-host.js';

/** The page's budget: everything it loads, gzipped. */
const PAGE_BUDGET_BYTES = 150 * 1024;

beforeAll(ensureConsoleBuilt);

const hosts: ConsoleHost[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
});

describe.each(ADAPTERS)('the console mounted on %s', (adapter) => {
  it('answers its page at every view of its mount point, and its files, next to the API', async () => {
    const host = await startConsoleHost(adapter, { apiPrefix: '/api', consolePath: '/ops' });
    hosts.push(host);
    for (const path of ['/ops', '/ops/', '/ops/pipelines/pip_1?status=dead_lettered', '/ops/webhooks/whk_1']) {
      const res = await fetch(`${host.origin}${path}`);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(res.headers.get('content-security-policy')).toBe(CONSOLE_CONTENT_SECURITY_POLICY);
      const html = await res.text();
      expect(html).toContain('<meta name="ferry-console-base" content="/ops">');
      expect(html).toContain('<meta name="ferry-api-base" content="/api">');
    }
    const api = await fetch(`${host.origin}/api/v2/pipelines`, { headers: { authorization: `Bearer ${host.key}` } });
    expect(api.status).toBe(200);
    // The console adds no route to the API, and the API none to the console.
    expect((await fetch(`${host.origin}/ops/v2/pipelines`, { headers: { authorization: `Bearer ${host.key}` } })).headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect((await fetch(`${host.origin}/api/v2/console`, { headers: { authorization: `Bearer ${host.key}` } })).status).toBe(404);
  });

  it('sends its files with their types, gzipped on request, revalidated by ETag, within the page budget', async () => {
    const host = await startConsoleHost(adapter);
    hosts.push(host);
    let total = 0;
    for (const [file, type] of [
      ['console.js', 'text/javascript; charset=utf-8'],
      ['console.css', 'text/css; charset=utf-8'],
    ] as const) {
      const url = `${host.consoleUrl}/assets/${file}`;
      const plain = await fetch(url, { headers: { 'accept-encoding': 'identity' } });
      expect(plain.status).toBe(200);
      expect(plain.headers.get('content-type')).toBe(type);
      expect(plain.headers.get('x-content-type-options')).toBe('nosniff');
      const bytes = Buffer.from(await plain.arrayBuffer());
      total += gzipSync(bytes, { level: 9 }).length;
      // fetch inflates what it asked gzipped: the same bytes come back.
      const gzipped = await fetch(url, { headers: { 'accept-encoding': 'gzip' } });
      expect(gzipped.headers.get('content-encoding')).toBe('gzip');
      expect(Buffer.from(await gzipped.arrayBuffer()).equals(bytes)).toBe(true);
      const again = await fetch(url, { headers: { 'accept-encoding': 'identity', 'if-none-match': plain.headers.get('etag')! } });
      expect(again.status).toBe(304);
    }
    const html = await (await fetch(`${host.consoleUrl}/`)).text();
    total += gzipSync(html).length;
    expect(total).toBeLessThan(PAGE_BUDGET_BYTES);
    expect((await fetch(`${host.consoleUrl}/assets/other.js`)).status).toBe(404);
    const post = await fetch(`${host.consoleUrl}/pipelines`, { method: 'POST' });
    expect([404, 405]).toContain(post.status);
  });
});

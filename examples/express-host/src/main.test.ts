import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { startHost } from './main.js';

it('serves its own /hello, the Ferry API and the console side by side', async () => {
  const host = await startHost({ port: 0, filename: join(mkdtempSync(join(tmpdir(), 'ferry-express-host-')), 'ferry.db') });
  try {
    const hello = await fetch(`${host.url}/hello`);
    expect(await hello.json()).toEqual({ hello: 'world' });
    const list = await fetch(`${host.url}/v2/pipelines`, { headers: { authorization: `Bearer ${host.key}` } });
    expect(list.status).toBe(200);
    expect(await list.json()).toMatchObject({ data: [] });
    // The console beside them: its page, under a policy that allows this origin only.
    const page = await fetch(`${host.url}/console/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("connect-src 'self'");
    expect(await page.text()).toContain('<title>Ferry Console</title>');
    const anonymous = await fetch(`${host.url}/v2/pipelines`);
    expect(anonymous.status).toBe(401);
    // A header block over Node's 16 KiB limit: problem+json like every other answer.
    const big = await fetch(`${host.url}/v2/pipelines`, { headers: { 'x-big': 'a'.repeat(17 * 1024) } });
    expect(big.status).toBe(431);
    expect(big.headers.get('content-type')).toBe('application/problem+json');
    expect(await big.json()).toMatchObject({ code: 'headers_too_large' });
  } finally {
    await host.close();
  }
});

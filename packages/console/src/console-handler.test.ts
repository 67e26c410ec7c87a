import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { CONSOLE_CONTENT_SECURITY_POLICY, createConsoleHandler, type ConsoleRequest } from './console-handler.js';

const get = (path: string, extra: Partial<ConsoleRequest> = {}): ConsoleRequest => ({ method: 'GET', path, basePath: '/console', headers: {}, ...extra });

describe('the console handler', () => {
  it('answers the page for every view, with the mount point and the API base in meta elements', () => {
    const handle = createConsoleHandler({ apiBase: '/api/' });
    for (const path of ['/', '/pipelines', '/pipelines/pip_1/runs?cursor=x', '/no/such/view']) {
      const answer = handle(get(path));
      expect(answer.status).toBe(200);
      expect(answer.headers['content-type']).toBe('text/html; charset=utf-8');
      const html = answer.body!.toString();
      expect(html).toContain('<meta name="ferry-console-base" content="/console">');
      expect(html).toContain('<meta name="ferry-api-base" content="/api">');
      expect(html).toContain('<script type="module" src="/console/assets/console.js"></script>');
      // No inline script or style: the policy would refuse them.
      expect(html).not.toMatch(/<script>|<script(?![^>]*src=)[^>]*>|<style|style=/);
    }
  });

  it('sends the security headers on every answer, errors included', () => {
    const handle = createConsoleHandler();
    for (const answer of [handle(get('/')), handle(get('/favicon.svg')), handle(get('/', { method: 'POST' })), handle(get('/assets/nope.js'))]) {
      expect(answer.headers['content-security-policy']).toBe(CONSOLE_CONTENT_SECURITY_POLICY);
      expect(answer.headers['x-content-type-options']).toBe('nosniff');
      expect(answer.headers['x-frame-options']).toBe('DENY');
      expect(answer.headers['referrer-policy']).toBe('no-referrer');
    }
    expect(CONSOLE_CONTENT_SECURITY_POLICY).toContain("script-src 'self';");
    expect(CONSOLE_CONTENT_SECURITY_POLICY).toContain("connect-src 'self';");
    expect(CONSOLE_CONTENT_SECURITY_POLICY).not.toContain('unsafe-inline');
  });

  it('answers GET and HEAD only, and 404 for an asset it does not have', () => {
    const handle = createConsoleHandler();
    const post = handle(get('/pipelines', { method: 'POST' }));
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
    const head = handle(get('/', { method: 'HEAD' }));
    expect(head.status).toBe(200);
    expect(head.body).toBeUndefined();
    expect(Number(head.headers['content-length'])).toBe(handle(get('/')).body!.length);
    // Paths never reach the file system: a traversal is just a name it does not know.
    expect(handle(get('/assets/../../package.json')).status).toBe(404);
    expect(handle(get('/assets/%2e%2e%2fpackage.json')).status).toBe(404);
  });

  it('revalidates by ETag and gzips for clients that take it', () => {
    const handle = createConsoleHandler();
    const first = handle(get('/'));
    expect(first.headers['cache-control']).toBe('no-cache');
    const again = handle(get('/', { headers: { 'if-none-match': `W/${first.headers.etag}` } }));
    expect(again.status).toBe(304);
    expect(again.body).toBeUndefined();
    const gzipped = handle(get('/', { headers: { 'accept-encoding': 'br, gzip;q=0.8' } }));
    expect(gzipped.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gzipped.body!).equals(first.body!)).toBe(true);
    expect(gzipped.headers.etag).not.toBe(first.headers.etag);
    expect(handle(get('/', { headers: { 'accept-encoding': 'gzip', 'if-none-match': gzipped.headers.etag } })).status).toBe(304);
    expect(handle(get('/', { headers: { 'accept-encoding': 'gzip;q=0, br' } })).headers['content-encoding']).toBeUndefined();
  });

  it('escapes the mount point and refuses an API base on another origin', () => {
    const html = createConsoleHandler()(get('/', { basePath: '/a"><script>x</script>' })).body!.toString();
    expect(html).toContain('content="/a&quot;&gt;&lt;script&gt;x&lt;/script&gt;"');
    for (const bad of ['https://evil.example', '//evil.example', 'api', '/api"x']) expect(() => createConsoleHandler({ apiBase: bad })).toThrow(/apiBase must be a path on the console's own origin/);
  });
});

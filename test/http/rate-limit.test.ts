/**
 * Rate limits (docs/api.md, The HTTP protocol): a token bucket per API key, `RateLimit-Policy` and
 * `RateLimit` on every response, 429 `rate_limited` with `Retry-After`; time is the engine's
 * virtual clock, so refills are driven by advancing it.
 */
import { expect, it } from 'vitest';
import { describeMatrix } from './harness.js';
import { expectProblem } from './fixtures.js';

const POLICY = /^"[^"]+";q=(\d+);w=(\d+)$/;
const STATE = /^"[^"]+";r=(\d+);t=(\d+)$/;

describeMatrix('rate limits', (ctx) => {
  it('a key without its own limit gets the default policy, 600 per 60 s, on every answer', async () => {
    const key = await ctx.api.key(['write']);
    const ok = await ctx.api.request('GET', '/v2/connectors', { key });
    expect(ok.headers['ratelimit-policy']).toMatch(POLICY);
    expect(ok.headers['ratelimit-policy']!.match(POLICY)!.slice(1)).toEqual(['600', '60']);
    expect(ok.headers.ratelimit!.match(STATE)![1]).toBe('599');
    // Error answers carry them too.
    for (const [method, path, body] of [['GET', '/v2/connectors/con_nope'], ['GET', '/v2/connectors?limit=0'], ['POST', '/v2/connectors', { type: 'x' }]] as const) {
      const res = await ctx.api.request(method, path, body ? { key, body } : { key });
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.headers['ratelimit-policy'], `${method} ${path}`).toMatch(POLICY);
      expect(res.headers.ratelimit, `${method} ${path}`).toMatch(STATE);
    }
    const forbidden = await ctx.api.request('POST', '/v2/connectors', { key: await ctx.api.key(['read']), body: {} });
    expect(forbidden.status).toBe(403);
    expect(forbidden.headers['ratelimit-policy']).toMatch(POLICY);
  });

  it('RateLimit headers are on answers without a valid key too (401, unknown route, 405)', async () => {
    const answers = [
      await ctx.api.request('GET', '/v2/connectors', { key: null }),
      await ctx.api.request('GET', '/v2/nope'),
      await ctx.api.request('DELETE', '/v2/connectors'),
    ];
    for (const res of answers) {
      expect([401, 404, 405]).toContain(res.status);
      expect(res.headers['ratelimit-policy'], `status ${res.status}`).toMatch(POLICY);
      expect(res.headers.ratelimit, `status ${res.status}`).toMatch(STATE);
    }
  });

  it('a key over its own limit gets 429 rate_limited with Retry-After; advancing time refills', async () => {
    const key = await ctx.api.key(['write'], 'default', { requests: 3, per_seconds: 60 });
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await ctx.api.request('GET', '/v2/pipelines', { key });
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit-policy']!.match(POLICY)!.slice(1)).toEqual(['3', '60']);
      remaining.push(res.headers.ratelimit!.match(STATE)![1]!);
    }
    expect(remaining).toEqual(['2', '1', '0']);
    const limited = await ctx.api.request('GET', '/v2/pipelines', { key });
    expectProblem(limited, 429, 'rate_limited');
    expect(limited.headers['retry-after']).toBe('20');
    expect(limited.headers['ratelimit-policy']).toMatch(POLICY);
    expect(limited.headers.ratelimit!.match(STATE)![1]).toBe('0');
    // Every route shares the key's bucket, writes included.
    expectProblem(await ctx.api.request('POST', '/v2/connectors', { key, body: {} }), 429, 'rate_limited');
    // Another key is not affected.
    expect((await ctx.api.request('GET', '/v2/pipelines')).status).toBe(200);
    await ctx.clock.advance(19_000);
    expectProblem(await ctx.api.request('GET', '/v2/pipelines', { key }), 429, 'rate_limited');
    await ctx.clock.advance(1_000);
    const refilled = await ctx.api.request('GET', '/v2/pipelines', { key });
    expect(refilled.status, refilled.text).toBe(200);
    await ctx.clock.advance(60_000);
    const full = await ctx.api.request('GET', '/v2/pipelines', { key });
    expect(full.headers.ratelimit!.match(STATE)![1]).toBe('2');
  });
});

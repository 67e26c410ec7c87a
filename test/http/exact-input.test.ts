/**
 * What comes in is taken exactly or refused, on every adapter and storage: bodies are checked as
 * bytes before they are decoded (not UTF-8: 400 `invalid_encoding`; the CESU-8 bytes of a lone
 * surrogate: 400 `invalid_character`), never stored with replacement characters; nesting past 64
 * is `too_deep` on every route, ingest included, whatever the depth; ingest checks its signature
 * over the bytes received; query values and path segments follow the same rules; a date no
 * calendar has (`2026-02-30`) is a `format` error, never rolled over into March.
 */
import { expect, it } from 'vitest';
import { describeMatrix, signedHeaders, type TestResponse } from './harness.js';
import { createConnector, createPipeline, createWebhook, expectFieldError, expectPage, expectProblem, insertDelivery, insertEvents } from './fixtures.js';

const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const JSON_TYPE = { 'content-type': 'application/json' };

/** `{"<field>":"<bytes>"...rest}` as raw bytes: the invalid sequences cannot be written as a JS string. */
function withBytes(field: string, bytes: number[], rest = ''): Buffer {
  return Buffer.concat([Buffer.from(`{"${field}":"`), Buffer.from(bytes), Buffer.from(`"${rest}}`)]);
}

/** Byte sequences that are not UTF-8, each named. */
const NOT_UTF8: Array<[string, number[]]> = [
  ['an overlong slash', [0xc0, 0xaf]],
  ['a truncated three-byte sequence', [0x61, 0xe2, 0x82]],
  ['a stray continuation byte', [0x80]],
  ['a byte UTF-8 never uses', [0xff]],
  ['a code point above U+10FFFF', [0xf4, 0x90, 0x80, 0x80]],
];
/** The CESU-8 bytes of U+D800: how a lone surrogate looks on the wire. */
const SURROGATE = [0xed, 0xa0, 0x80];

describeMatrix('exact input', (ctx) => {
  const now = () => Math.floor(ctx.clock.now() / 1000);

  function ingest(connectorId: string, raw: Buffer | string, signedOver: Buffer | string = raw): Promise<TestResponse> {
    const headers = signedHeaders(SECRET, signedOver, now());
    return ctx.api.request('POST', `/v2/ingest/${connectorId}`, { key: null, raw, headers: { ...JSON_TYPE, ...headers } });
  }

  it('a body that is not UTF-8 is 400 invalid_encoding on every route that takes one, and nothing is stored', async () => {
    const pipeline = await createPipeline(ctx.api);
    const connectorsBefore = expectPage(await ctx.api.request('GET', '/v2/connectors?limit=100')).data.length;
    const writes: Array<[string, string, (bytes: number[]) => Buffer]> = [
      ['POST', '/v2/connectors', (b) => withBytes('name', b, ',"type":"webhook","direction":"source","config":{}')],
      ['POST', '/v2/pipelines', (b) => withBytes('name', b, `,"source_connector_id":"${pipeline.source_connector_id}","destination_connector_id":"${pipeline.destination_connector_id}"`)],
      ['POST', '/v2/webhooks', (b) => withBytes('description', b, ',"url":"https://hooks.example.com/x","events":["pipeline.failed"]')],
      ['PATCH', `/v2/connectors/${pipeline.source_connector_id}`, (b) => withBytes('name', b)],
      ['PATCH', `/v2/pipelines/${pipeline.id}`, (b) => withBytes('name', b)],
      ['POST', `/v2/pipelines/${pipeline.id}/events/replay`, (b) => withBytes('type', b)],
    ];
    for (const [method, path, body] of writes) {
      for (const [what, bytes] of NOT_UTF8) {
        const res = await ctx.api.request(method, path, { raw: body(bytes), headers: JSON_TYPE });
        expect(res.status, `${method} ${path} with ${what}: ${res.text}`).toBe(400);
        expectProblem(res, 400, 'invalid_encoding');
      }
      // A lone surrogate's bytes are the one invalid sequence with a name of its own.
      expectProblem(await ctx.api.request(method, path, { raw: body(SURROGATE), headers: JSON_TYPE }), 400, 'invalid_character');
    }
    expect(expectPage(await ctx.api.request('GET', '/v2/connectors?limit=100')).data).toHaveLength(connectorsBefore);
    const unchanged = await ctx.api.request('GET', `/v2/pipelines/${pipeline.id}`);
    expect(unchanged.body.name).toBe(pipeline.name);
    // Valid UTF-8 beyond ASCII is text like any other, and comes back as sent.
    const named = await ctx.api.request('PATCH', `/v2/pipelines/${pipeline.id}`, { raw: Buffer.from('{"name":"Züri \u{1F6A2} 東京"}'), headers: JSON_TYPE });
    expect(named.status, named.text).toBe(200);
    expect(named.body.name).toBe('Züri \u{1F6A2} 東京');
  });

  it('ingest refuses nesting past 64 at any depth with 400 too_deep, never a 500', async () => {
    const c = await createConnector(ctx.api, { type: 'webhook', direction: 'source', config: { signing_secret: SECRET } });
    const nested = (depth: number) => `{"type":"deep.one","payload":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}`;
    for (const depth of [64, 70, 5_000, 100_000]) {
      const res = await ingest(c.id, nested(depth));
      expectProblem(res, 400, 'validation_failed');
      expectFieldError(res, '', 'too_deep');
    }
    // The body's own object is one level: a payload nested 63 deep is 64 in all.
    const ok = await ingest(c.id, nested(62));
    expect(ok.status, ok.text).toBe(202);
  });

  it('ingest checks the signature over the bytes received, before decoding them', async () => {
    const c = await createConnector(ctx.api, { type: 'webhook', direction: 'source', config: { signing_secret: SECRET } });
    const bad = withBytes('type', [0x61, 0xff, 0x62], ',"payload":{}');
    // Signed over its bytes, as Standard Webhooks says: the signature holds, the encoding does not.
    expectProblem(await ingest(c.id, bad, bad), 400, 'invalid_encoding');
    // Signed over what a lenient decoder would make of it: not the bytes that were sent.
    expectProblem(await ingest(c.id, bad, bad.toString('utf8')), 401, 'unauthenticated');
    // Text beyond ASCII, signed over its bytes, is stored as sent.
    const text = Buffer.from('{"type":"order.created","payload":{"city":"Zürich","ship":"\u{1F6A2}"}}');
    const res = await ingest(c.id, text, text);
    expect(res.status, res.text).toBe(202);
  });

  it('query values are decoded exactly: a lone surrogate is invalid_character, other bad bytes or escapes invalid_encoding', async () => {
    const pipeline = await createPipeline(ctx.api);
    const events = `/v2/pipelines/${pipeline.id}/events`;
    for (const query of ['type=%ED%A0%80', 'type=%ED%BF%BF', 'type=a%ED%A0%80b']) {
      const res = await ctx.api.request('GET', `${events}?${query}`);
      expectProblem(res, 400, 'invalid_character');
      expectFieldError(res, '/type', 'invalid_character');
    }
    for (const query of ['type=%FF', 'type=%C0%AF', 'type=%E2%82', 'type=%zz', 'type=abc%', 'type=%4']) {
      const res = await ctx.api.request('GET', `${events}?${query}`);
      expectProblem(res, 400, 'invalid_encoding');
      expectFieldError(res, '/type', 'invalid_encoding');
    }
    expectProblem(await ctx.api.request('GET', '/v2/connectors?type=%FF'), 400, 'invalid_encoding');
    expectProblem(await ctx.api.request('GET', '/v2/pipelines?name=%ED%A0%80'), 400, 'invalid_character');
    // With another problem besides, both are listed under validation_failed.
    const mixed = await ctx.api.request('GET', `${events}?type=%FF&limit=0`);
    expectProblem(mixed, 400, 'validation_failed');
    expectFieldError(mixed, '/type', 'invalid_encoding');
    expectFieldError(mixed, '/limit', 'invalid_limit');
    // Form encoding still holds: `+` is a space, escapes of valid UTF-8 decode.
    await insertEvents(ctx.api, pipeline.id, [{ type: 'order placed', occurred_at: '2026-11-22T09:00:00.000Z' }, { type: 'größe.é', occurred_at: '2026-11-22T09:00:01.000Z' }]);
    expect(expectPage(await ctx.api.request('GET', `${events}?type=order+placed`)).data.map((e: { type: string }) => e.type)).toEqual(['order placed']);
    expect(expectPage(await ctx.api.request('GET', `${events}?type=${encodeURIComponent('größe.é')}`)).data).toHaveLength(1);
  });

  it('a path segment whose escapes are not UTF-8 is 400; one whose escapes are malformed names nothing (404)', async () => {
    for (const path of ['/v2/connectors/%ED%A0%80', '/v2/pipelines/pip_%ED%BF%BF/runs']) expectProblem(await ctx.api.request('GET', path), 400, 'invalid_character');
    for (const path of ['/v2/connectors/%FF', '/v2/connectors/con_%C0%AF', '/v2/pipelines/%E2%82/events']) expectProblem(await ctx.api.request('GET', path), 400, 'invalid_encoding');
    for (const path of ['/v2/connectors/%E0%A4%A', '/v2/connectors/%zz', '/v2/connectors/%']) expectProblem(await ctx.api.request('GET', path), 404, 'not_found');
  });

  it('impossible dates are a format error in listing filters and in bodies, never rolled over', async () => {
    const pipeline = await createPipeline(ctx.api);
    const webhook = await createWebhook(ctx.api);
    await insertDelivery(ctx.api, webhook.id, 'failed');
    const impossible = ['2026-02-30T00:00:00Z', '2026-02-29T00:00:00Z', '2026-04-31T10:00:00.000Z', '2026-11-22T24:00:00Z', '2026-11-22T10:60:00Z', '2026-13-01T00:00:00Z', '2026-11-22T10:00:00+24:00'];
    for (const at of impossible) {
      for (const path of [`/v2/pipelines/${pipeline.id}/events?since=${encodeURIComponent(at)}`, `/v2/pipelines/${pipeline.id}/events?until=${encodeURIComponent(at)}`, `/v2/webhooks/${webhook.id}/deliveries?since=${encodeURIComponent(at)}`]) {
        const res = await ctx.api.request('GET', path);
        expectProblem(res, 400, 'validation_failed');
        expect(res.body.errors.map((e: { code: string }) => e.code), `${path}`).toEqual(['format']);
      }
      expectFieldError(await ctx.api.request('POST', `/v2/pipelines/${pipeline.id}/events/replay`, { body: { since: at } }), '/since', 'format');
      expectFieldError(await ctx.api.request('POST', `/v2/webhooks/${webhook.id}/recover`, { body: { since: at } }), '/since', 'format');
    }
    // A real leap day and an offset are fine.
    expect((await ctx.api.request('GET', `/v2/pipelines/${pipeline.id}/events?since=2028-02-29T00:00:00Z`)).status).toBe(200);
    expect((await ctx.api.request('GET', `/v2/pipelines/${pipeline.id}/events?since=${encodeURIComponent('2026-11-22T11:00:00+01:00')}`)).status).toBe(200);
    // An ingested event's own time too.
    const c = await createConnector(ctx.api, { type: 'webhook', direction: 'source', config: { signing_secret: SECRET } });
    const res = await ingest(c.id, JSON.stringify({ type: 'a.b', occurred_at: '2026-02-30T00:00:00Z', payload: {} }));
    expectProblem(res, 400, 'validation_failed');
    expectFieldError(res, '/occurred_at', 'format');
  });
});

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import express, { type Request } from 'express';
import { Webhook } from 'standardwebhooks';
import { request } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FerryError, generateWebhookSecret, webhookHeaders, type WebhookVerificationError } from '@ferry/core';
import { verifyWebhooks, type WebhookReceiverOptions } from './webhook-receiver.js';

// The Standard Webhooks known-answer vector, and a clock that only moves when a test moves it.
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const ID = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
const TS = 1614265330;
const BODY = '{"test": 2432232314}';
const SIGNATURE = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';
// The subscription's new secret after a rotation; SECRET is the old one, still overlapping.
const ROTATED = generateWebhookSecret();
let now = TS * 1000;

interface Seen {
  body: unknown;
  webhook: unknown;
  raw: string | undefined;
}

/** Every request that reached a handler, and every rejection reason given to onRejected. */
let seen: Seen[] = [];
let rejected: string[] = [];

function signed(body: string, options: { secret?: string; id?: string; timestamp?: number } = {}): Record<string, string> {
  const id = options.id ?? ID;
  const timestamp = options.timestamp ?? Math.floor(now / 1000);
  // Signed by the reference implementation, not by the code under test.
  const signature = new Webhook(options.secret ?? SECRET).sign(id, new Date(timestamp * 1000), body);
  return { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature };
}

async function post(url: string, body: string | Buffer | Readable, headers: Record<string, string>) {
  const res = await request(url, { method: 'POST', headers, body });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers as Record<string, string | undefined>, text, json: /json/.test(String(res.headers['content-type'])) ? (JSON.parse(text) as Record<string, unknown>) : undefined };
}

function receiver(extra: Partial<WebhookReceiverOptions> = {}) {
  return verifyWebhooks({ secret: SECRET, now: () => now, onRejected: (error: WebhookVerificationError) => void rejected.push(error.reason), ...extra });
}

function handler(req: Request, res: express.Response): void {
  seen.push({ body: req.body as unknown, webhook: req.webhook, raw: req.rawBody?.toString('utf8') });
  res.status(204).end();
}

/**
 * A real server on 127.0.0.1, as `listenLoopback` of @ferry/testing starts one: the package
 * boundary rule keeps this package to @ferry/core and @ferry/http, tests included.
 */
async function listenLoopback(app: express.Express): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer(app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

let server: Awaited<ReturnType<typeof listenLoopback>>;
let base: string;

beforeAll(async () => {
  const app = express();
  app.post('/hooks', receiver(), handler);
  app.post('/small', receiver({ limit: 1024 }), handler);
  // Rotation overlap: the receiver knows the new secret and the old one.
  app.post('/rotating', receiver({ secret: [ROTATED, SECRET] }), handler);
  // Secrets looked up per request, here by a tenant in the path.
  const tenants: Record<string, string> = { acme: SECRET, other: generateWebhookSecret() };
  app.post('/tenants/:tenant/hooks', receiver({ secret: async (req) => tenants[String(req.params.tenant)] ?? [] }), handler);
  // Host body parsers mounted before the receiver.
  app.post('/after-json', express.json(), receiver(), handler);
  app.post('/after-json-keeping-raw', express.json({ verify: (req, _res, buf) => void ((req as Request).rawBody = Buffer.from(buf)) }), receiver(), handler);
  app.post('/after-raw', express.raw({ type: '*/*' }), receiver(), handler);
  // The rest of the app parses JSON as usual.
  app.use(express.json());
  app.post('/echo', (req, res) => void res.json({ got: req.body as unknown }));
  // The host's error handler: where a secret lookup's errors end up.
  app.use((error: unknown, _req: Request, res: express.Response, _next: express.NextFunction) => {
    void res.status(500).json({ host_error: error instanceof FerryError ? error.code : String(error) });
  });
  server = await listenLoopback(app);
  base = server.url;
});
afterAll(() => server.close());

beforeEach(() => {
  now = TS * 1000;
  seen = [];
  rejected = [];
});

async function expectRejected(path: string, body: string, headers: Record<string, string>, reason: string): Promise<void> {
  const reached = seen.length;
  const res = await post(`${base}${path}`, body, headers);
  expect(res.status).toBe(401);
  expect(res.headers['content-type']).toBe('application/problem+json');
  // The same answer whichever check failed.
  expect(res.json).toEqual({
    type: '/problems/unauthenticated',
    title: 'Unauthorized',
    status: 401,
    code: 'unauthenticated',
    detail: 'The webhook signature could not be verified.',
    request_id: res.headers['x-request-id'],
  });
  expect(seen).toHaveLength(reached);
  expect(rejected.at(-1)).toBe(reason);
}

describe('verifyWebhooks (Express)', () => {
  it('lets a delivery signed by the standardwebhooks package through, with the parsed body', async () => {
    const res = await post(`${base}/hooks`, BODY, signed(BODY));
    expect(res.status).toBe(204);
    expect(seen).toEqual([{ body: { test: 2432232314 }, webhook: { id: ID, timestamp: TS }, raw: BODY }]);
  });

  it('accepts the known-answer vector as sent, and x-service-signature in place of webhook-signature', async () => {
    const headers = { 'content-type': 'application/json', 'webhook-id': ID, 'webhook-timestamp': String(TS), 'x-service-signature': SIGNATURE };
    expect((await post(`${base}/hooks`, BODY, headers)).status).toBe(204);
    expect(seen).toHaveLength(1);
  });

  it('accepts Ferry-signed deliveries of any media type and size up to the limit', async () => {
    const body = JSON.stringify({ type: 'pipeline.failed', data: { note: 'é€😀'.repeat(1000), pad: 'x'.repeat(900_000) } });
    const headers = webhookHeaders({ id: 'evt_1', timestamp: TS, body }, [SECRET]);
    expect((await post(`${base}/hooks`, body, { ...headers, 'content-type': 'text/plain' })).status).toBe(204);
    expect(seen[0]!.body).toEqual(JSON.parse(body));
  });

  it('hands an empty signed body on as undefined', async () => {
    expect((await post(`${base}/hooks`, '', signed(''))).status).toBe(204);
    expect(seen).toEqual([{ body: undefined, webhook: { id: ID, timestamp: TS }, raw: '' }]);
  });

  it('rejects the Standard Webhooks negative cases with 401 before the handler', async () => {
    const good = signed(BODY);
    const without = (name: string) => Object.fromEntries(Object.entries(good).filter(([key]) => key !== name));
    await expectRejected('/hooks', BODY, without('webhook-id'), 'missing_headers');
    await expectRejected('/hooks', BODY, without('webhook-timestamp'), 'missing_headers');
    await expectRejected('/hooks', BODY, without('webhook-signature'), 'missing_headers');
    await expectRejected('/hooks', BODY, { 'content-type': 'application/json' }, 'missing_headers');
    await expectRejected('/hooks', BODY, { ...good, 'webhook-timestamp': 'hello' }, 'bad_timestamp');
    await expectRejected('/hooks', BODY, { ...good, 'webhook-signature': 'v1,dawfeoifkpqwoekfpqoekf' }, 'bad_signature');
    await expectRejected('/hooks', BODY, { ...good, 'webhook-signature': good['webhook-signature']!.slice(0, 8) }, 'bad_signature');
    await expectRejected('/hooks', BODY, { ...good, 'webhook-signature': 'v1,' }, 'bad_signature');
    await expectRejected('/hooks', BODY, { ...good, 'webhook-signature': good['webhook-signature']!.slice(0, -1) }, 'bad_signature');
    await expectRejected('/hooks', BODY, { ...good, 'webhook-signature': good['webhook-signature']!.replace('v1,', 'v2,') }, 'bad_signature');
    await expectRejected('/hooks', BODY, { ...good, 'webhook-signature': good['webhook-signature']!.replace('v1,', 'v1a,') }, 'bad_signature');
    await expectRejected('/hooks', BODY, signed(BODY, { secret: generateWebhookSecret() }), 'bad_signature');
    const others = ['v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=', good['webhook-signature']!.replace('v1,', 'v2,')];
    await expectRejected('/hooks', BODY, { ...good, 'webhook-signature': others.join(' ') }, 'bad_signature');
    await expectRejected('/hooks', BODY, { ...good, 'webhook-id': 'msg_other' }, 'bad_signature');
  });

  it('accepts several signatures when one matches', async () => {
    const good = signed(BODY);
    const sigs = ['v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=', 'v2,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=', good['webhook-signature']!];
    expect((await post(`${base}/hooks`, BODY, { ...good, 'webhook-signature': sigs.join(' ') })).status).toBe(204);
    expect(seen).toHaveLength(1);
  });

  it('rejects a re-serialized body', async () => {
    await expectRejected('/hooks', JSON.stringify(JSON.parse(BODY)), signed(BODY), 'bad_signature');
  });

  it('rejects stale and future timestamps beyond the default 300 s, accepts them within', async () => {
    const headers = signed(BODY);
    now = TS * 1000 + 301_000;
    await expectRejected('/hooks', BODY, headers, 'stale');
    now = TS * 1000 - 301_000;
    await expectRejected('/hooks', BODY, headers, 'stale');
    now = TS * 1000 + 300_000;
    expect((await post(`${base}/hooks`, BODY, headers)).status).toBe(204);
  });

  it('accepts either secret during a rotation overlap, and a delivery signed with both', async () => {
    const url = `${base}/rotating`;
    expect((await post(url, BODY, signed(BODY, { secret: SECRET }))).status).toBe(204);
    expect((await post(url, BODY, signed(BODY, { secret: ROTATED }))).status).toBe(204);
    // What Ferry sends during the overlap: one signature per secret.
    const both = webhookHeaders({ id: ID, timestamp: TS, body: BODY }, [ROTATED, SECRET]);
    expect((await post(url, BODY, both)).status).toBe(204);
    // A receiver still holding only the old secret accepts it too.
    expect((await post(`${base}/hooks`, BODY, both)).status).toBe(204);
    expect(seen).toHaveLength(4);
    await expectRejected('/rotating', BODY, signed(BODY, { secret: generateWebhookSecret() }), 'bad_signature');
  });

  it('looks secrets up per request with an async function', async () => {
    expect((await post(`${base}/tenants/acme/hooks`, BODY, signed(BODY))).status).toBe(204);
    await expectRejected('/tenants/other/hooks', BODY, signed(BODY), 'bad_signature');
    // An unknown tenant resolves to no secret: a configuration error, passed on to Express.
    const unknown = await post(`${base}/tenants/nobody/hooks`, BODY, signed(BODY));
    expect(unknown.status).toBe(500);
    expect(unknown.json).toEqual({ host_error: 'configuration_invalid' });
    expect(seen).toHaveLength(1);
  });

  it('answers a body over the limit with 413 before verifying, declared or chunked', async () => {
    const body = JSON.stringify({ pad: 'x'.repeat(2000) });
    const declared = await post(`${base}/small`, body, signed(body));
    expect(declared.status).toBe(413);
    expect(declared.headers['content-type']).toBe('application/problem+json');
    expect(declared.json).toMatchObject({ status: 413, code: 'payload_too_large' });
    async function* chunks() {
      for (let i = 0; i < 8; i++) yield Buffer.from(body.slice(i * 250, (i + 1) * 250) + (i === 7 ? body.slice(2000) : ''));
    }
    try {
      const chunked = await post(`${base}/small`, Readable.from(chunks()), signed(body));
      expect(chunked.status).toBe(413);
    } catch (error) {
      // The server may close before the client has sent everything.
      expect(String((error as Error & { code?: string }).code)).toMatch(/ECONNRESET|EPIPE|UND_ERR_SOCKET/);
    }
    // Over the default 1 MiB too.
    const large = JSON.stringify({ pad: 'x'.repeat(1024 * 1024) });
    try {
      expect((await post(`${base}/hooks`, large, signed(large))).status).toBe(413);
    } catch (error) {
      expect(String((error as Error & { code?: string }).code)).toMatch(/ECONNRESET|EPIPE|UND_ERR_SOCKET/);
    }
    expect(seen).toEqual([]);
  });

  it('answers a correctly signed body that is not JSON with 400', async () => {
    const body = '{"test":';
    const res = await post(`${base}/hooks`, body, signed(body));
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(res.json).toMatchObject({ status: 400, code: 'malformed_json' });
    expect(seen).toEqual([]);
  });

  it('answers 500 with the fix when express.json() consumed the body first, and works when it kept req.rawBody', async () => {
    const res = await post(`${base}/after-json`, BODY, signed(BODY));
    expect(res.status).toBe(500);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(res.json).toMatchObject({ status: 500, code: 'configuration_invalid', detail: expect.stringContaining('before any body parser') as unknown });
    expect(seen).toEqual([]);
    expect((await post(`${base}/after-json-keeping-raw`, BODY, signed(BODY))).status).toBe(204);
    await expectRejected('/after-json-keeping-raw', JSON.stringify(JSON.parse(BODY)), signed(BODY), 'bad_signature');
  });

  it('uses the Buffer of a host express.raw()', async () => {
    expect((await post(`${base}/after-raw`, BODY, signed(BODY))).status).toBe(204);
    expect(seen).toEqual([{ body: { test: 2432232314 }, webhook: { id: ID, timestamp: TS }, raw: BODY }]);
    await expectRejected('/after-raw', BODY + ' ', signed(BODY), 'bad_signature');
  });

  it('leaves the rest of the app alone', async () => {
    const res = await post(`${base}/echo`, '{"a":1}', { 'content-type': 'application/json' });
    expect(res.json).toEqual({ got: { a: 1 } });
  });

  it('refuses a static secret or option that is wrong when created, not on the first delivery', () => {
    for (const options of [{ secret: 'not-a-secret' }, { secret: [] }, { secret: SECRET, toleranceSeconds: Number.NaN }, { secret: SECRET, limit: -1 }] as WebhookReceiverOptions[]) {
      expect(() => verifyWebhooks(options), JSON.stringify(options)).toThrow(FerryError);
    }
  });
});


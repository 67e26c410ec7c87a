import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Clock, ClockTimer } from '../common/index.js';
import { guardedLookup, OutboundClient, type OutboundLookup, type OutboundResult } from './outbound-client.js';

/**
 * A clock whose time moves only on `advance` (core tests cannot import @ferry/testing's
 * VirtualClock: core depends on no other Ferry package). Settles the event loop around timers.
 */
class TestClock implements Clock {
  #now = 1_760_000_000_000;
  #timers: Array<{ due: number; fn: () => void }> = [];
  now(): number {
    return this.#now;
  }
  setTimeout(fn: () => void, ms: number): ClockTimer {
    const timer = { due: this.#now + Math.max(0, ms), fn };
    this.#timers.push(timer);
    return { cancel: () => void (this.#timers = this.#timers.filter((t) => t !== timer)) };
  }
  pending(): number {
    return this.#timers.length;
  }
  async advance(ms: number): Promise<void> {
    await settle();
    this.#now += ms;
    const due = this.#timers.filter((t) => t.due <= this.#now).sort((a, b) => a.due - b.due);
    this.#timers = this.#timers.filter((t) => t.due > this.#now);
    for (const t of due) {
      t.fn();
      await settle();
    }
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

interface Seen {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  raw: Buffer;
}

/** A loopback server that counts connections and requests, for asserting "no connection made". */
interface Loopback {
  url: string;
  port: number;
  connections: number;
  requests: Seen[];
  /** Resolves with the next request's response object once its body was read. */
  nextRequest(): Promise<{ req: IncomingMessage; res: ServerResponse }>;
  close(): Promise<void>;
}

async function loopback(handler: (seen: Seen, res: ServerResponse, req: IncomingMessage) => void): Promise<Loopback> {
  const waiters: Array<(r: { req: IncomingMessage; res: ServerResponse }) => void> = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const seen = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: raw.toString('utf8'), raw };
      state.requests.push(seen);
      handler(seen, res, req);
      waiters.shift()?.({ req, res });
    });
  });
  server.on('connection', () => {
    state.connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const state: Loopback = {
    url: `http://127.0.0.1:${port}`,
    port,
    connections: 0,
    requests: [],
    nextRequest: () => new Promise((resolve) => waiters.push(resolve)),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return state;
}

/** A lookup that answers from a table (or a sequence per name) and records every call. */
function fakeDns(table: Record<string, Array<Array<{ address: string; family: 4 | 6 }>>>): OutboundLookup & { calls: string[] } {
  const calls: string[] = [];
  const lookup = async (hostname: string) => {
    calls.push(hostname);
    const answers = table[hostname];
    if (!answers || answers.length === 0) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return answers.length > 1 ? answers.shift()! : answers[0]!;
  };
  return Object.assign(lookup, { calls });
}

const v4 = (address: string) => ({ address, family: 4 as const });
const v6 = (address: string) => ({ address, family: 6 as const });

const clients: OutboundClient[] = [];
function client(options: ConstructorParameters<typeof OutboundClient>[0] = {}): OutboundClient {
  const c = new OutboundClient(options);
  clients.push(c);
  return c;
}
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

let target: Loopback;
beforeAll(async () => {
  target = await loopback((_seen, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('reached'));
});
afterAll(async () => {
  await target.close();
});

describe('OutboundClient: refused before any connection (empty allow list)', () => {
  // Every spelling below is what a URL may say; the WHATWG parser normalizes most of them to a
  // blocked literal (noted), the rest are blocked IPv6 forms or localhost names.
  const loopbackSpellings = [
    '127.0.0.1',
    '127.255.0.9',
    '2130706433', // -> 127.0.0.1
    '0x7f000001', // -> 127.0.0.1
    '0X7F000001', // -> 127.0.0.1
    '0177.0.0.1', // -> 127.0.0.1
    '017700000001', // -> 127.0.0.1
    '127.1', // -> 127.0.0.1
    '0x7f.1', // -> 127.0.0.1
    '0x7f.0x0.0x0.0x1', // -> 127.0.0.1
    '127.000.000.001', // -> 127.0.0.1
    '127.0.0.1.', // -> 127.0.0.1
    '127.0.0.1..', // stays a "name"; the policy drops trailing dots
    '%31%32%37.0.0.1', // -> 127.0.0.1
    '127\u30020\u30020\u30021', // ideographic full stops -> 127.0.0.1
    '\uff11\uff12\uff17.0.0.1', // full-width digits -> 127.0.0.1
    '[::ffff:127.0.0.1]', // -> [::ffff:7f00:1]
    '[::FFFF:7F00:1]',
    '[0:0:0:0:0:ffff:7f00:1]',
    '[::127.0.0.1]', // IPv4-compatible
    '[::ffff:0:127.0.0.1]', // IPv4-translated
    '[64:ff9b::127.0.0.1]', // NAT64
    '[64:ff9b:1::7f00:1]', // local-use NAT64
    '[2002:7f00:1::]', // 6to4 of 127.0.0.1
    '[2001:0:4136:e378:8000:63bf:3fff:fdd2]', // Teredo
    'localhost',
    'LOCALHOST',
    'localhost.',
    'api.localhost',
    'api.localhost.',
    '0.0.0.0',
    '0',
  ];
  const otherBlocked = [
    ['private 10/8', '10.0.0.1'],
    ['private 172.16/12', '172.16.0.1'],
    ['private 172.31', '172.31.255.255'],
    ['private 192.168/16', '192.168.1.1'],
    ['link-local', '169.254.1.1'],
    ['metadata', '169.254.169.254'],
    ['metadata, hex', '0xa9fea9fe'],
    ['metadata, dotted hex', '0xa9.0xfe.0xa9.0xfe'],
    ['metadata, IPv4-mapped', '[::ffff:169.254.169.254]'],
    ['metadata, AWS IPv6', '[fd00:ec2::254]'],
    ['CGNAT', '100.64.0.1'],
    ['CGNAT top', '100.127.255.254'],
    ['IETF protocol assignments', '192.0.0.1'],
    ['documentation', '192.0.2.1'],
    ['documentation 2', '198.51.100.7'],
    ['documentation 3', '203.0.113.9'],
    ['benchmarking', '198.18.0.1'],
    ['6to4 relay', '192.88.99.1'],
    ['multicast', '224.0.0.1'],
    ['reserved', '240.0.0.1'],
    ['broadcast', '255.255.255.255'],
    ['broadcast, decimal', '4294967295'],
    ['IPv6 loopback', '[::1]'],
    ['IPv6 unspecified', '[::]'],
    ['IPv6 unique local', '[fc00::1]'],
    ['IPv6 unique local fd', '[fd12:3456::1]'],
    ['IPv6 link-local', '[fe80::1]'],
    ['IPv6 site-local', '[fec0::1]'],
    ['IPv6 multicast', '[ff02::1]'],
    ['IPv6 documentation', '[2001:db8::1]'],
    ['IPv6 documentation 3fff::/20', '[3fff::1]'],
    ['IPv6 benchmarking', '[2001:2::1]'],
    ['IPv6 discard', '[100::1]'],
    ['IPv6 unassigned', '[4000::1]'],
    ['6to4 of 10.0.0.1', '[2002:a00:1::]'],
    ['NAT64 of 10.0.0.1', '[64:ff9b::a00:1]'],
  ] as const;

  it.each(loopbackSpellings)('refuses https://%s with no connection and no DNS lookup', async (host) => {
    const dns = fakeDns({});
    const c = client({ lookup: dns });
    const before = target.connections;
    for (const scheme of ['https', 'http']) {
      const result = await c.send({ url: `${scheme}://${host}:${target.port}/hook`, method: 'POST', body: '{}', timeoutMs: 5000 });
      expect(result, `${scheme}://${host}`).toMatchObject({ kind: 'blocked', reason: expect.stringMatching(/not allowed/) });
    }
    expect(target.connections).toBe(before);
    expect(dns.calls).toEqual([]);
  });

  it.each(otherBlocked)('refuses %s (%s)', async (_name, host) => {
    const dns = fakeDns({});
    const result = await client({ lookup: dns }).send({ url: `https://${host}/latest/meta-data/`, method: 'GET', timeoutMs: 5000 });
    expect(result).toEqual({ kind: 'blocked', reason: 'The URL is not allowed: it points to a private, loopback or reserved address.' });
    expect(dns.calls).toEqual([]);
  });

  it('refuses http to a host that is not allowed, even a public one, before resolving it', async () => {
    const dns = fakeDns({ 'hooks.example.com': [[v4('93.184.215.14')]] });
    const result = await client({ lookup: dns, allow: ['other.example.com'] }).send({ url: 'http://hooks.example.com/', method: 'POST', timeoutMs: 5000 });
    expect(result).toEqual({ kind: 'blocked', reason: 'The URL is not allowed: it must use https.' });
    expect(dns.calls).toEqual([]);
  });

  it('refuses credentials in the URL, allowed host or not, without echoing them', async () => {
    const before = target.connections;
    for (const url of [`http://user:s3cr3t@127.0.0.1:${target.port}/`, `http://user@127.0.0.1:${target.port}/`]) {
      const result = await client({ allow: ['127.0.0.1'] }).send({ url, method: 'GET', timeoutMs: 5000 });
      expect(result).toEqual({ kind: 'blocked', reason: 'The URL is not allowed: it must not contain credentials.' });
    }
    expect(target.connections).toBe(before);
  });

  it.each(['ftp://example.com/', 'file:///etc/passwd', 'ws://example.com/', 'not a url', ''])('refuses %j even with everything allowed', async (url) => {
    const result = await client({ allow: ['*'] }).send({ url, method: 'GET', timeoutMs: 5000 });
    expect(result.kind).toBe('blocked');
  });
});

describe('OutboundClient: names checked on the addresses they resolve to, at connect time', () => {
  it.each([
    ['loopback', [v4('127.0.0.1')]],
    ['private', [v4('10.1.2.3')]],
    ['metadata', [v4('169.254.169.254')]],
    ['IPv6 loopback', [v6('::1')]],
    ['IPv4-mapped loopback', [v6('::ffff:127.0.0.1')]],
    ['AWS IPv6 metadata', [v6('fd00:ec2::254')]],
    ['only private ones among several', [v4('10.0.0.1'), v4('192.168.0.1'), v6('fe80::1'), v4('127.0.0.1')]],
  ] as const)('refuses a name that resolves to %s addresses, with no connection', async (_name, answers) => {
    const dns = fakeDns({ 'hooks.example.com': [[...answers]] });
    const before = target.connections;
    const result = await client({ lookup: dns }).send({ url: `https://hooks.example.com:${target.port}/`, method: 'POST', body: '{}', timeoutMs: 5000 });
    expect(result).toEqual({ kind: 'blocked', reason: 'The URL is not allowed: it resolves to a private, loopback or reserved address.' });
    expect(dns.calls).toEqual(['hooks.example.com']);
    expect(target.connections).toBe(before);
  });

  it('checks every new connection: a name rebinding from a permitted address to a private one is refused', async () => {
    // 127.0.0.1 stands for "public" here: the allow list permits it, so the first connection goes
    // ahead (https against a plain http server: the connection is made, TLS then fails); the
    // second lookup answers the metadata address and no second connection is made.
    const dns = fakeDns({ 'rebind.example.com': [[v4('127.0.0.1')], [v4('169.254.169.254')]] });
    const c = client({ lookup: dns, allow: ['127.0.0.1'] });
    const before = target.connections;
    const first = await c.send({ url: `https://rebind.example.com:${target.port}/`, method: 'GET', timeoutMs: 5000 });
    expect(first.kind).toBe('network');
    expect(target.connections).toBe(before + 1);
    const second = await c.send({ url: `https://rebind.example.com:${target.port}/`, method: 'GET', timeoutMs: 5000 });
    expect(second).toMatchObject({ kind: 'blocked' });
    expect(dns.calls).toEqual(['rebind.example.com', 'rebind.example.com']);
    expect(target.connections).toBe(before + 1);
    expect(target.requests.filter((r) => r.headers.host?.startsWith('rebind'))).toEqual([]);
  });

  it('connects to the permitted addresses of a mixed answer only', async () => {
    const dns = fakeDns({ 'mixed.example.com': [[v4('10.0.0.1'), v4('127.0.0.1'), v4('169.254.169.254')]] });
    const before = target.connections;
    const result = await client({ lookup: dns, allow: ['127.0.0.1'] }).send({ url: `https://mixed.example.com:${target.port}/`, method: 'GET', timeoutMs: 5000 });
    expect(result.kind).toBe('network');
    expect(target.connections).toBe(before + 1);
  });

  it('hands net only permitted answers, in order, and only of the family asked for', async () => {
    const answers = [v4('10.0.0.1'), v4('93.184.215.14'), v6('fd00::1'), v6('2606:4700::1111'), v4('169.254.169.254'), v4('1.1.1.1')];
    const lookup = guardedLookup(async () => answers, []);
    const call = (options: Parameters<typeof lookup>[1]) =>
      new Promise<{ error: NodeJS.ErrnoException | null; address: unknown; family?: number }>((resolve) =>
        lookup('mixed.example.com', options, (error, address, family) => resolve({ error, address, family })),
      );
    expect(await call({ all: true })).toMatchObject({ error: null, address: [v4('93.184.215.14'), v6('2606:4700::1111'), v4('1.1.1.1')] });
    expect(await call({ all: true, family: 6 })).toMatchObject({ error: null, address: [v6('2606:4700::1111')] });
    expect(await call({})).toMatchObject({ error: null, address: '93.184.215.14', family: 4 });
    expect(await call({ family: 'IPv6' })).toMatchObject({ error: null, address: '2606:4700::1111', family: 6 });
    const allPrivate = guardedLookup(async () => [v4('10.0.0.1'), v6('::1')], []);
    const refused = await new Promise<NodeJS.ErrnoException | null>((resolve) => allPrivate('x.example.com', { all: true }, (e) => resolve(e)));
    expect(refused?.code).toBe('ERR_FERRY_OUTBOUND_BLOCKED');
    // An allowed IP or CIDR permits names resolving into it; an allowed name trusts its DNS.
    const viaCidr = guardedLookup(async () => [v4('10.0.0.1'), v4('10.9.9.9')], ['10.0.0.0/24']);
    expect(await new Promise((resolve) => viaCidr('x.example.com', { all: true }, (_e, a) => resolve(a)))).toEqual([v4('10.0.0.1')]);
    const viaName = guardedLookup(async () => [v4('10.0.0.1')], ['x.example.com']);
    expect(await new Promise((resolve) => viaName('x.example.com', { all: true }, (_e, a) => resolve(a)))).toEqual([v4('10.0.0.1')]);
  });

  it('reports a name that does not resolve as a network error', async () => {
    const result = await client({ lookup: fakeDns({}), allow: ['nowhere.example.com'] }).send({ url: 'http://nowhere.example.com/', method: 'GET', timeoutMs: 5000 });
    expect(result).toMatchObject({ kind: 'network', code: 'ENOTFOUND' });
    const empty = await client({ lookup: async () => [] }).send({ url: 'https://empty.example.com/', method: 'GET', timeoutMs: 5000 });
    expect(empty).toMatchObject({ kind: 'network', code: 'ENOTFOUND' });
  });

  it('never follows a redirect, even to an address the allow list permits', async () => {
    const internal = await loopback((_seen, res) => res.writeHead(200).end('internal'));
    const redirecting = await loopback((_seen, res) => res.writeHead(302, { location: `${internal.url}/admin` }).end());
    try {
      const c = client({ allow: ['127.0.0.1'] });
      for (const method of ['GET', 'POST'] as const) {
        const result = await c.send({ url: `${redirecting.url}/hook`, method, body: method === 'POST' ? '{}' : undefined, timeoutMs: 5000 });
        expect(result).toMatchObject({ kind: 'response', status: 302, headers: { location: `${internal.url}/admin` } });
      }
      const toMetadata = await loopback((_seen, res) => res.writeHead(307, { location: 'http://169.254.169.254/latest/meta-data/' }).end());
      expect(await c.send({ url: toMetadata.url, method: 'GET', timeoutMs: 5000 })).toMatchObject({ kind: 'response', status: 307 });
      await toMetadata.close();
      expect(redirecting.requests).toHaveLength(2);
      expect(internal.requests).toHaveLength(0);
      expect(internal.connections).toBe(0);
    } finally {
      await internal.close();
      await redirecting.close();
    }
  });
});

describe('OutboundClient: allowed requests', () => {
  it('POSTs to an allowed loopback server with headers and body intact, and returns status, headers and body', async () => {
    const echo = await loopback((seen, res) => res.writeHead(201, { 'x-reply': 'yes', 'set-cookie': ['a=1', 'b=2'] }).end(`got ${seen.raw.length} bytes`));
    try {
      const body = JSON.stringify({ hello: 'wörld', n: [1, 2, 3] });
      const result = await client({ allow: ['127.0.0.1'] }).send({
        url: `${echo.url}/hooks/in?x=1&y=%20`,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'webhook-id': 'evt_1', authorization: 'Bearer t0ken' },
        body,
        timeoutMs: 5000,
      });
      expect(result).toMatchObject({ kind: 'response', status: 201, body: `got ${Buffer.byteLength(body)} bytes`, truncated: false });
      if (result.kind === 'response') {
        expect(result.headers['x-reply']).toBe('yes');
        expect(result.headers['set-cookie']).toBe('a=1, b=2');
      }
      expect(echo.requests).toHaveLength(1);
      expect(echo.requests[0]).toMatchObject({ method: 'POST', path: '/hooks/in?x=1&y=%20', body });
      expect(echo.requests[0]!.headers).toMatchObject({ 'content-type': 'application/json', 'webhook-id': 'evt_1', authorization: 'Bearer t0ken' });
    } finally {
      await echo.close();
    }
  });

  it('sends a Uint8Array body byte for byte, and PUT, GET and HEAD', async () => {
    const bytes = new Uint8Array([0, 1, 2, 250, 255]);
    const server = await loopback((_seen, res) => res.writeHead(200).end('body'));
    try {
      const c = client({ allow: ['127.0.0.0/8'] });
      expect(await c.send({ url: server.url, method: 'PUT', body: bytes, timeoutMs: 5000 })).toMatchObject({ kind: 'response', status: 200 });
      expect([...server.requests[0]!.raw]).toEqual([...bytes]);
      expect(server.requests[0]!.headers['content-length']).toBe('5');
      expect(await c.send({ url: server.url, method: 'GET', timeoutMs: 5000 })).toMatchObject({ kind: 'response', body: 'body' });
      expect(await c.send({ url: server.url, method: 'HEAD', timeoutMs: 5000 })).toMatchObject({ kind: 'response', status: 200, body: '' });
      expect(server.requests.map((r) => r.method)).toEqual(['PUT', 'GET', 'HEAD']);
    } finally {
      await server.close();
    }
  });

  it("lets '*', CIDRs and allowed names through, and an allowed name may resolve to loopback", async () => {
    const dns = fakeDns({ 'hooks.test': [[v4('127.0.0.1')]] });
    for (const allow of [['*'], ['127.0.0.0/8'], ['127.0.0.1']]) {
      expect((await client({ allow }).send({ url: `${target.url}/`, method: 'GET', timeoutMs: 5000 })).kind, allow.join()).toBe('response');
    }
    const byName = await client({ allow: ['hooks.test'], lookup: dns }).send({ url: `http://hooks.test:${target.port}/`, method: 'GET', timeoutMs: 5000 });
    expect(byName).toMatchObject({ kind: 'response', status: 200, body: 'reached' });
    // localhost by name needs its name allowed; its address alone does not make http or the name acceptable.
    expect((await client({ allow: ['127.0.0.1'] }).send({ url: `http://localhost:${target.port}/`, method: 'GET', timeoutMs: 5000 })).kind).toBe('blocked');
    expect((await client({ allow: ['localhost'] }).send({ url: `http://localhost:${target.port}/`, method: 'GET', timeoutMs: 5000 })).kind).toBe('response');
  });

  it('reads at most maxResponseBytes of a 50 MB response, closes the connection and keeps memory bounded', async () => {
    const total = 50 * 1024 * 1024;
    let produced = 0;
    const huge = await loopback((_seen, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(total) });
      const chunk = Buffer.alloc(64 * 1024, 'x');
      Readable.from(
        (function* () {
          while (produced < total) {
            produced += chunk.length;
            yield chunk;
          }
        })(),
      ).pipe(res);
    });
    try {
      const served = huge.nextRequest();
      const rssBefore = process.memoryUsage().rss;
      const result = await client({ allow: ['127.0.0.1'] }).send({ url: huge.url, method: 'GET', timeoutMs: 5000 });
      expect(result).toEqual({ kind: 'response', status: 200, headers: expect.any(Object), body: 'x'.repeat(4096), truncated: true });
      const { res } = await served;
      if (!res.closed) await once(res, 'close');
      // The server could push no more than the socket buffers took before the client hung up.
      expect(produced).toBeLessThan(total / 2);
      expect(process.memoryUsage().rss - rssBefore).toBeLessThan(total / 2);
    } finally {
      await huge.close();
    }
  });

  it('says truncated only when there was more, and cuts a character in two lossily', async () => {
    let reply = '';
    const server = await loopback((_seen, res) => res.writeHead(200).end(reply));
    try {
      const c = client({ allow: ['127.0.0.1'], maxResponseBytes: 8 });
      reply = '12345678';
      expect(await c.send({ url: server.url, method: 'GET', timeoutMs: 5000 })).toMatchObject({ body: '12345678', truncated: false });
      reply = '123456789';
      expect(await c.send({ url: server.url, method: 'GET', timeoutMs: 5000 })).toMatchObject({ body: '12345678', truncated: true });
      reply = '1234567€';
      expect(await c.send({ url: server.url, method: 'GET', timeoutMs: 5000 })).toMatchObject({ body: '1234567\ufffd', truncated: true });
    } finally {
      await server.close();
    }
  });
});

describe('OutboundClient: timeouts, failures and aborts', () => {
  it('times out on the injected clock a server that accepted the request and never answers, and lets the socket go', async () => {
    const silent = await loopback(() => undefined);
    try {
      const clock = new TestClock();
      const c = client({ allow: ['127.0.0.1'], clock });
      const served = silent.nextRequest();
      const sending = c.send({ url: silent.url, method: 'POST', body: '{}', timeoutMs: 15_000 });
      const { res } = await served;
      await clock.advance(14_999);
      let settled: OutboundResult | undefined;
      void sending.then((r) => (settled = r));
      await settle();
      expect(settled).toBeUndefined();
      await clock.advance(1);
      expect(await sending).toEqual({ kind: 'timeout' });
      if (!res.closed) await once(res, 'close');
      expect(clock.pending()).toBe(0);
    } finally {
      await silent.close();
    }
  });

  it('times out a server that trickles an endless body', async () => {
    const trickle = await loopback((_seen, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('a');
    });
    try {
      const clock = new TestClock();
      const served = trickle.nextRequest();
      const sending = client({ allow: ['127.0.0.1'], clock }).send({ url: trickle.url, method: 'GET', timeoutMs: 10_000 });
      const { res } = await served;
      await settle();
      res.write('b');
      await clock.advance(10_000);
      expect(await sending).toEqual({ kind: 'timeout' });
      if (!res.closed) await once(res, 'close');
    } finally {
      await trickle.close();
    }
  });

  it('runs a request on its own clock when it brings one', async () => {
    const silent = await loopback(() => undefined);
    try {
      const clientClock = new TestClock();
      const requestClock = new TestClock();
      const served = silent.nextRequest();
      const sending = client({ allow: ['127.0.0.1'], clock: clientClock }).send({ url: silent.url, method: 'GET', timeoutMs: 1000, clock: requestClock });
      await served;
      expect([clientClock.pending(), requestClock.pending()]).toEqual([0, 1]);
      await requestClock.advance(1000);
      expect(await sending).toEqual({ kind: 'timeout' });
    } finally {
      await silent.close();
    }
  });

  it('reports a refused connection as network ECONNREFUSED', async () => {
    const closed = await loopback(() => undefined);
    await closed.close();
    const result = await client({ allow: ['127.0.0.1'] }).send({ url: `${closed.url}/hook`, method: 'POST', body: '{}', timeoutMs: 5000 });
    expect(result).toMatchObject({ kind: 'network', code: 'ECONNREFUSED', message: expect.any(String) });
  });

  it('reports a connection reset mid-response as network', async () => {
    const rude = await loopback((_seen, res, req) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('partial');
      req.socket.destroy();
    });
    try {
      const result = await client({ allow: ['127.0.0.1'] }).send({ url: rude.url, method: 'GET', timeoutMs: 5000 });
      expect(result.kind).toBe('network');
    } finally {
      await rude.close();
    }
  });

  it("rethrows the caller's abort reason as is, not as a timeout", async () => {
    const silent = await loopback(() => undefined);
    try {
      const clock = new TestClock();
      const abort = new AbortController();
      const served = silent.nextRequest();
      const sending = client({ allow: ['127.0.0.1'], clock }).send({ url: silent.url, method: 'GET', timeoutMs: 1000, signal: abort.signal });
      await served;
      const reason = new Error('engine stopping');
      abort.abort(reason);
      await expect(sending).rejects.toBe(reason);
      expect(clock.pending()).toBe(0);
      const already = AbortSignal.abort(new Error('before'));
      await expect(client({ allow: ['127.0.0.1'] }).send({ url: silent.url, method: 'GET', timeoutMs: 1000, signal: already })).rejects.toThrow('before');
    } finally {
      await silent.close();
    }
  });

  it('refuses a timeout that is not a finite positive number', async () => {
    for (const timeoutMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      await expect(client().send({ url: 'https://example.com/', method: 'GET', timeoutMs })).rejects.toThrow(RangeError);
    }
  });

  it('reuses pooled connections for sequential requests to one origin, and fails as network once closed', async () => {
    const c = new OutboundClient({ allow: ['127.0.0.1'] });
    const before = target.connections;
    for (let i = 0; i < 6; i++) expect((await c.send({ url: target.url, method: 'GET', timeoutMs: 5000 })).kind).toBe('response');
    // undici may open a second connection while the first is finishing a response; never one per request.
    expect(target.connections - before).toBeLessThanOrEqual(2);
    await c.close();
    await c.close();
    expect((await c.send({ url: target.url, method: 'GET', timeoutMs: 5000 })).kind).toBe('network');
  });

  it('a client closed or destroyed before its first request answers every send as network', async () => {
    // The pool (and undici) is made by the first send: one closed before that must not open one.
    const closed = new OutboundClient({ allow: ['127.0.0.1'] });
    await closed.close();
    expect((await closed.send({ url: target.url, method: 'GET', timeoutMs: 5000 })).kind).toBe('network');
    const destroyed = new OutboundClient({ allow: ['127.0.0.1'] });
    await destroyed.destroy();
    expect((await destroyed.send({ url: target.url, method: 'GET', timeoutMs: 5000 })).kind).toBe('network');
    await destroyed.close();
  });

  it('destroy ends a request in flight at once as network, without the clock', async () => {
    const silent = await loopback(() => undefined);
    try {
      const clock = new TestClock();
      const c = new OutboundClient({ allow: ['127.0.0.1'], clock });
      const served = silent.nextRequest();
      const sending = c.send({ url: silent.url, method: 'GET', timeoutMs: 1000 });
      await served;
      await c.destroy();
      expect(await sending).toMatchObject({ kind: 'network', code: 'UND_ERR_DESTROYED' });
      await c.close();
      expect(clock.pending()).toBe(0);
    } finally {
      await silent.close();
    }
  });
});

describe('OutboundClient: options', () => {
  it('refuses options that cannot work', () => {
    expect(() => new OutboundClient({ maxResponseBytes: -1 })).toThrow(RangeError);
    expect(() => new OutboundClient({ connectTimeoutMs: 0 })).toThrow(RangeError);
    expect(() => new OutboundClient({ connectionsPerOrigin: 1.5 })).toThrow(RangeError);
  });

  it('reads nothing of the body with maxResponseBytes 0, and reports the status', async () => {
    const result = await client({ allow: ['127.0.0.1'], maxResponseBytes: 0 }).send({ url: target.url, method: 'GET', timeoutMs: 5000 });
    expect(result).toMatchObject({ kind: 'response', status: 200, body: '', truncated: true });
  });
});

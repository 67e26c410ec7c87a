import { once } from 'node:events';
import * as http from 'node:http';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { Type } from '@sinclair/typebox';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createConnectorOutbound, type ConnectorOutbound } from './connector-outbound.js';
import { createEngine } from '../engine/index.js';
import { isFerryError } from '../common/index.js';
import { ConnectorError, defineConnector } from '../plugin-api/index.js';
import { sqliteStorage } from '../storage/index.js';

/** A listener on 127.0.0.1 that counts connections and bytes, and answers HTTP 200 when asked to. */
async function trap(answerHttp = false) {
  const state = { connections: 0, bytes: 0 };
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    state.connections += 1;
    sockets.add(socket);
    socket.on('data', (chunk: Buffer) => {
      state.bytes += chunk.length;
      if (answerHttp) socket.end('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok');
    });
    socket.on('error', () => undefined);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    state,
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    }),
  };
}

const rebinding = async (name: string) => {
  if (name === 'rebind.example.com') return [{ address: '127.0.0.1', family: 4 as const }];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
};

/** Connects a socket and resolves with the error it ends with, or null once connected. */
function outcome(socket: Socket): Promise<Error | null> {
  return new Promise((resolve) => {
    socket.once('error', (error) => resolve(error));
    socket.once('connect', () => {
      socket.destroy();
      resolve(null);
    });
    socket.once('secureConnect', () => resolve(null));
  });
}

function expectRefusal(error: unknown): void {
  expect(error).toBeInstanceOf(ConnectorError);
  expect((error as ConnectorError).code).toBe('url_not_allowed');
  expect((error as ConnectorError).retryable).toBe(false);
}

let server: Awaited<ReturnType<typeof trap>>;
beforeEach(async () => {
  server = await trap();
});
afterEach(async () => {
  await server.close();
});

describe('ConnectorOutbound: hosts refused whatever DNS says', () => {
  const strict = createConnectorOutbound();

  it.each(['127.0.0.1', '2130706433', '0x7f.1', '0177.0.0.1', '127.1', '[::ffff:127.0.0.1]', '::1', '[::1]', '10.1.2.3', '169.254.169.254', 'fd00:ec2::254', 'localhost', 'db.localhost', 'LOCALHOST.', '', '/var/run/postgresql'])(
    'refuses %j',
    (host) => {
      expect(strict.hostProblem(host)).toMatch(/^The host is not allowed/);
      // At connect time a name is left to the lookup, which checks its addresses.
      if (/localhost/i.test(host)) expect(() => strict.assertHost(host, 5432)).not.toThrow();
      else expect(() => strict.assertHost(host, 5432)).toThrow(ConnectorError);
    },
  );

  it('connect time: `localhost` is refused by what it resolves to, unless that is allowed', async () => {
    const local = async () => [{ address: '127.0.0.1', family: 4 as const }];
    await expect(createConnectorOutbound({ lookup: local }).resolve('localhost')).rejects.toMatchObject({ code: 'url_not_allowed' });
    await expect(createConnectorOutbound({ lookup: local, allow: ['127.0.0.1'] }).resolve('localhost')).resolves.toEqual([{ address: '127.0.0.1', family: 4 }]);
  });

  it.each(['db.example.com', '8.8.8.8', '2606:4700:4700::1111'])('lets %j through (names are checked when connecting)', (host) => {
    expect(strict.hostProblem(host)).toBeNull();
  });

  it('allows what the list names, by name, address, CIDR or canonical spelling', () => {
    expect(createConnectorOutbound({ allow: ['127.0.0.1'] }).hostProblem('2130706433')).toBeNull();
    expect(createConnectorOutbound({ allow: ['10.0.0.0/8'] }).hostProblem('10.9.8.7')).toBeNull();
    expect(createConnectorOutbound({ allow: ['localhost'] }).hostProblem('localhost')).toBeNull();
    expect(createConnectorOutbound({ allow: ['*'] }).hostProblem('/tmp')).toBeNull();
  });

  it('urls: https unless allowed, no credentials, no refused host', () => {
    expect(strict.urlProblem('https://s3.example.com')).toBeNull();
    expect(strict.urlProblem('http://s3.example.com')).toMatch(/https/);
    expect(strict.urlProblem('https://[::ffff:7f00:1]:9000')).toMatch(/private, loopback/);
    expect(strict.urlProblem('https://u:p@s3.example.com')).toMatch(/credentials/);
    expect(createConnectorOutbound({ allow: ['127.0.0.1'] }).urlProblem('http://127.0.0.1:9000')).toBeNull();
    expect(() => strict.assertUrl('https://0x7f000001/')).toThrow(ConnectorError);
  });
});

describe('ConnectorOutbound: connect time', () => {
  const strict = createConnectorOutbound({ lookup: rebinding });
  const allowed = createConnectorOutbound({ allow: ['127.0.0.1'], lookup: rebinding });

  it('connect: a literal loopback address fails with the refusal and gets no connection', async () => {
    expectRefusal(await outcome(strict.connect({ host: '127.0.0.1', port: server.port })));
    expectRefusal(await outcome(strict.connect({ host: '127.0.0.1', port: server.port, tls: {} })));
    expect(server.state).toEqual({ connections: 0, bytes: 0 });
  });

  it('connect: a name resolving to loopback (DNS rebinding) is refused after resolution, before connecting', async () => {
    expectRefusal(await outcome(strict.connect({ host: 'rebind.example.com', port: server.port })));
    expectRefusal(await outcome(strict.connect({ host: 'rebind.example.com', port: server.port, tls: {} })));
    await expect(strict.resolve('rebind.example.com')).rejects.toMatchObject({ code: 'url_not_allowed' });
    expect(server.state).toEqual({ connections: 0, bytes: 0 });
  });

  it('connect: allowed, the same name and address connect', async () => {
    expect(await outcome(allowed.connect({ host: 'rebind.example.com', port: server.port }))).toBeNull();
    expect(await allowed.resolve('rebind.example.com')).toEqual([{ address: '127.0.0.1', family: 4 }]);
    expect(server.state.connections).toBe(1);
  });

  it('socket(): a driver calling connect(port, host) itself goes through the policy', async () => {
    expectRefusal(await outcome(strict.socket().connect(server.port, '127.0.0.1')));
    expectRefusal(await outcome(strict.socket().connect(server.port, 'rebind.example.com')));
    expectRefusal(await outcome(strict.socket().connect('/tmp/.s.PGSQL.5432')));
    expect(server.state).toEqual({ connections: 0, bytes: 0 });
    expect(await outcome(allowed.socket().connect(server.port, 'rebind.example.com'))).toBeNull();
  });

  const get = (outbound: ConnectorOutbound, url: string) =>
    new Promise<number>((resolve, reject) => {
      const request = http.get(url, { agent: outbound.agent('http:') }, (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      });
      request.on('error', reject);
    });

  it('agent(): requests through the agent are refused for literals and rebinding names, not one byte sent', async () => {
    await expect(get(strict, `http://127.0.0.1:${server.port}/`)).rejects.toMatchObject({ code: 'url_not_allowed' });
    await expect(get(strict, `http://rebind.example.com:${server.port}/`)).rejects.toMatchObject({ code: 'url_not_allowed' });
    await expect(get(strict, `http://[::ffff:127.0.0.1]:${server.port}/`)).rejects.toMatchObject({ code: 'url_not_allowed' });
    expect(server.state).toEqual({ connections: 0, bytes: 0 });
  });

  it('agent(): allowed, the request goes through', async () => {
    const answering = await trap(true);
    try {
      expect(await get(allowed, `http://rebind.example.com:${answering.port}/`)).toBe(200);
    } finally {
      await answering.close();
    }
  });

  it('refusal(): finds the refusal in a cause chain or in a wrapper that kept only its code', () => {
    const refusal = new ConnectorError('url_not_allowed', 'no', { retryable: false });
    expect(strict.refusal(new Error('wrapped', { cause: refusal }))).toBe(refusal);
    expect(strict.refusal(Object.assign(new Error('Connection error: no'), { code: 'url_not_allowed' }))?.code).toBe('url_not_allowed');
    expect(strict.refusal(new AggregateError([new Error('x'), refusal]))).toBe(refusal);
    expect(strict.refusal(new Error('ECONNREFUSED'))).toBeUndefined();
  });
});

describe('the engine applies its allow list to every connector config', () => {
  const plugin = defineConnector({
    type: 'db',
    version: '1.0.0',
    directions: ['source', 'destination'],
    configSchema: Type.Object({ host: Type.String(), other: Type.Optional(Type.String()) }),
    validateConfig: (config, _direction, outbound) => {
      const problems: { pointer: string; code: string; detail: string }[] = [];
      const why = outbound.hostProblem(config.host);
      if (why) problems.push({ pointer: '/host', code: 'url_not_allowed', detail: why });
      if (config.other === 'bad') problems.push({ pointer: '/other', code: 'invalid', detail: 'bad' });
      return problems;
    },
    async check(ctx) {
      ctx.outbound.assertHost(ctx.config.host);
      return { health: 'healthy', latencyMs: 0 };
    },
  });

  it('422 url_not_allowed on create and PATCH for a refused host; the allow list lets it through', async () => {
    const engine = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }), plugins: [plugin] });
    await engine.start();
    try {
      const create = engine.connectors.create('default', { type: 'db', direction: 'source', config: { host: '0x7f.1' } });
      await expect(create).rejects.toSatisfy((e) => isFerryError(e, 'url_not_allowed') && e.status === 422 && e.errors?.[0]?.pointer === '/config/host');
      // A refused host next to another problem: a 400 that lists both.
      const mixed = engine.connectors.create('default', { type: 'db', direction: 'source', config: { host: 'localhost', other: 'bad' } });
      await expect(mixed).rejects.toSatisfy((e) => isFerryError(e, 'validation_failed') && e.errors?.length === 2);
      const ok = await engine.connectors.create('default', { type: 'db', direction: 'source', config: { host: 'db.example.com' } });
      const patch = engine.connectors.update('default', ok.id, { config: { host: '[::1]' } });
      await expect(patch).rejects.toSatisfy((e) => isFerryError(e, 'url_not_allowed') && e.errors?.[0]?.pointer === '/config/host');
    } finally {
      await engine.stop();
    }
    const open = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }), plugins: [plugin], outboundAllow: ['127.0.0.1'] });
    await open.start();
    try {
      const made = await open.connectors.create('default', { type: 'db', direction: 'source', config: { host: '127.0.0.1' } });
      expect((await open.connectors.check('default', made.id)).health).toBe('healthy');
    } finally {
      await open.stop();
    }
  });
});

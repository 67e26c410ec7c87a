import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PullSource } from '@ferry/core';
import { createConnectorOutbound } from '@ferry/core/internal';
import { connectorContext, fixedLookup, listenByteTrap, type ByteTrap } from '@ferry/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { snowflake, type SnowflakeConfig } from './index.js';

// The outbound policy with the allow list unset, as an engine has it by default: an account URL
// at a loopback address, literal or behind a name, gets no connection and no byte; and no
// redirect is ever followed, not even to an allowed address.
const plugin = snowflake({ loginRetries: 0, loginTimeoutMs: 10_000 });
const noAllowList = createConnectorOutbound();
let trap: ByteTrap;
/** Answers every request with `status` and a Location at the trap; records what it got. */
let redirector: Server;
let redirectorUrl: string;
const redirected: Array<{ method: string; path: string; status: number }> = [];
let status = 307;

beforeAll(async () => {
  trap = await listenByteTrap();
  redirector = createServer((request: IncomingMessage, response) => {
    request.resume();
    redirected.push({ method: request.method ?? '', path: request.url ?? '', status });
    response.writeHead(status, { location: `http://127.0.0.1:${trap.port}${request.url ?? '/'}`, 'content-length': '0' });
    response.end();
  });
  redirector.listen(0, '127.0.0.1');
  await once(redirector, 'listening');
  redirectorUrl = `http://127.0.0.1:${(redirector.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await trap.close();
  redirector.closeAllConnections();
  await new Promise<void>((resolve) => redirector.close(() => resolve()));
});

const login = (access_url: string): SnowflakeConfig => ({ account: 'acct', username: 'loader', password: 'hunter22-secret', access_url, table: 'EVENTS' });
const rebinding = { outboundLookup: fixedLookup({ 'acct.privatelink.example.com': '127.0.0.1' }) };

describe('snowflake outbound policy', () => {
  it('refuses a loopback, private or metadata access_url, and http to a host not allowed, at validation', () => {
    for (const url of [`http://127.0.0.1:${trap.port}`, 'https://127.0.0.1', 'https://0x7f.1', 'https://[::ffff:7f00:1]', 'https://169.254.169.254', 'https://localhost', 'http://acct.snowflakecomputing.com']) {
      expect(plugin.validateConfig!(login(url), 'destination', noAllowList).map((p) => [p.pointer, p.code])).toEqual([['/access_url', 'url_not_allowed']]);
    }
    expect(plugin.validateConfig!(login('https://acct.privatelink.snowflakecomputing.com'), 'destination', noAllowList)).toEqual([]);
    expect(plugin.validateConfig!(login(`http://127.0.0.1:${trap.port}`), 'destination', createConnectorOutbound({ allow: ['127.0.0.1'] }))).toEqual([]);
  });

  it('a check of a literal loopback access_url is down with url_not_allowed, no connection made', async () => {
    const result = await plugin.check!(connectorContext(login(`http://127.0.0.1:${trap.port}`)));
    expect([result.health, result.error?.code]).toEqual(['down', 'url_not_allowed']);
    expect([trap.connections, trap.bytes]).toEqual([0, 0]);
  });

  it('a check of a name that resolves to loopback is down with url_not_allowed, not one byte sent', async () => {
    const result = await plugin.check!(connectorContext(login(`https://acct.privatelink.example.com:${trap.port}`), rebinding));
    expect([result.health, result.error?.code]).toEqual(['down', 'url_not_allowed']);
    expect(result.error?.message).not.toContain('hunter22-secret');
    expect([trap.connections, trap.bytes]).toEqual([0, 0]);
  });

  it('a source read fails with a non-retryable url_not_allowed', async () => {
    const source = (await plugin.source!(
      connectorContext({ ...login(`https://acct.privatelink.example.com:${trap.port}`), cursor_column: 'ID', type: 't' }, { ...rebinding, direction: 'source' }),
    )) as PullSource;
    await expect(source.read(null, 10, new AbortController().signal)).rejects.toMatchObject({ code: 'url_not_allowed', retryable: false });
    await source.close?.();
    expect([trap.connections, trap.bytes]).toEqual([0, 0]);
  });

  it.each([302, 307, 308])('does not follow a %i from an allowed server: the login body is not posted anywhere else', async (code) => {
    status = code;
    redirected.length = 0;
    // The redirect points at 127.0.0.1, which is allowed here: only not following it keeps the password in.
    const result = await plugin.check!(connectorContext(login(redirectorUrl), { outboundAllow: ['127.0.0.1'] }));
    expect(result.health).toBe('down');
    expect(result.error?.message ?? '').not.toContain('hunter22-secret');
    expect(redirected.filter((r) => r.path.startsWith('/session/v1/login-request')).length).toBeGreaterThanOrEqual(1);
    expect([trap.connections, trap.bytes]).toEqual([0, 0]);
  });
});

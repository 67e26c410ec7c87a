import type { PullSource } from '@ferry/core';
import { createConnectorOutbound } from '@ferry/core/internal';
import { connectorContext, fixedLookup, listenByteTrap, type ByteTrap } from '@ferry/testing';
import { getSharedTestPostgres } from '@ferry/test-servers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgres, type PostgresConfig } from './index.js';

// The outbound policy with the allow list unset, as an engine has it by default: a database at a
// loopback address, literal or behind a name, gets no connection and no byte.
const plugin = postgres({ connectTimeoutMs: 3000 });
const noAllowList = createConnectorOutbound();
let trap: ByteTrap;
beforeAll(async () => {
  trap = await listenByteTrap();
});
afterAll(async () => {
  await trap.close();
});

const rebinding = { outboundLookup: fixedLookup({ 'db.example.com': '127.0.0.1' }) };
const destination = (where: Partial<PostgresConfig>): PostgresConfig => ({ table: 'events', ...where });

describe('postgres outbound policy', () => {
  it('refuses a loopback, private or metadata host, localhost or a Unix socket at validation, pointing at the field', () => {
    const problems = (config: PostgresConfig) => plugin.validateConfig!(config, 'destination', noAllowList).map((p) => [p.pointer, p.code]);
    for (const host of ['127.0.0.1', '2130706433', '0x7f.1', '::1', '10.0.0.5', '169.254.169.254', 'localhost', '/var/run/postgresql']) {
      expect(problems(destination({ host, database: 'app', user: 'u' }))).toEqual([['/host', 'url_not_allowed']]);
    }
    for (const connection_string of [`postgres://u:p@127.0.0.1:${trap.port}/app`, 'postgres://u:p@[::ffff:127.0.0.1]/app', 'postgresql://u@db.example.com/app?host=/tmp', 'postgres:///app']) {
      expect(problems(destination({ connection_string }))).toEqual([['/connection_string', 'url_not_allowed']]);
    }
    expect(problems(destination({ connection_string: 'postgres://u:p@db.example.com/app', admin_connection_string: 'postgres://a:b@0x7f.1/app' }))).toEqual([['/admin_connection_string', 'url_not_allowed']]);
    expect(problems(destination({ host: 'db.example.com', database: 'app', user: 'u' }))).toEqual([]);
    const allowed = createConnectorOutbound({ allow: ['127.0.0.1'] });
    expect(plugin.validateConfig!(destination({ host: '127.0.0.1', database: 'app', user: 'u' }), 'destination', allowed)).toEqual([]);
  });

  it('a check of a literal loopback host is down with url_not_allowed, no connection made', async () => {
    for (const config of [destination({ host: '127.0.0.1', port: trap.port, database: 'app', user: 'u', password: 'pw' }), destination({ connection_string: `postgres://u:pw@127.0.0.1:${trap.port}/app` })]) {
      const result = await plugin.check!(connectorContext(config));
      expect([result.health, result.error?.code]).toEqual(['down', 'url_not_allowed']);
    }
    expect([trap.connections, trap.bytes]).toEqual([0, 0]);
  });

  it('a check of a name that resolves to loopback is down with url_not_allowed, not one byte sent (with or without TLS)', async () => {
    for (const ssl of [false, true]) {
      const result = await plugin.check!(connectorContext(destination({ host: 'db.example.com', port: trap.port, database: 'app', user: 'u', password: 'pw', ssl }), rebinding));
      expect([result.health, result.error?.code]).toEqual(['down', 'url_not_allowed']);
    }
    expect([trap.connections, trap.bytes]).toEqual([0, 0]);
  });

  it('a source read and a destination write fail with a non-retryable url_not_allowed', async () => {
    const at = { connection_string: `postgres://u:pw@db.example.com:${trap.port}/app` };
    const source = (await plugin.source!(connectorContext({ ...at, table: 'orders', cursor_column: 'id', type: 'order' }, { ...rebinding, direction: 'source' }))) as PullSource;
    await expect(source.read(null, 10, new AbortController().signal)).rejects.toMatchObject({ code: 'url_not_allowed', retryable: false });
    await source.close?.();
    const writer = await plugin.destination!(connectorContext(destination(at), rebinding));
    await expect(writer.write([{ id: 'evt_1', type: 't', occurredAt: '2026-01-01T00:00:00.000Z', payload: {} }], new AbortController().signal)).rejects.toMatchObject({ code: 'url_not_allowed', retryable: false });
    await writer.close?.();
    expect([trap.connections, trap.bytes]).toEqual([0, 0]);
  });

  it('with the allow list, the same name reaches the real server', async () => {
    const url = new URL(await (await getSharedTestPostgres()).createDatabase('plugin_postgres_outbound'));
    url.hostname = 'db.example.com';
    const result = await plugin.check!(
      connectorContext({ connection_string: url.toString(), table: 'missing' }, { outboundAllow: ['127.0.0.1'], outboundLookup: fixedLookup({ 'db.example.com': '127.0.0.1' }) }),
    );
    // Connected and asked: the table does not exist, which only the server can say.
    expect(result.error?.code).toBe('table_not_found');
  });
});

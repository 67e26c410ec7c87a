import type { ConnectorError } from '@ferry/core';
import { createConnectorOutbound } from '@ferry/core/internal';
import { connectorContext, fixedLookup, listenByteTrap, type ByteTrap } from '@ferry/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { s3, type S3Config } from './index.js';

// The outbound policy with the allow list unset, as an engine has it by default: a store at a
// loopback address, literal or behind a name, gets no connection and no byte.
const plugin = s3({ requestTimeoutMs: 5000 });
const noAllowList = createConnectorOutbound();
let trap: ByteTrap;
beforeAll(async () => {
  trap = await listenByteTrap();
});
afterAll(async () => {
  await trap.close();
});

const at = (endpoint: string): S3Config => ({ bucket: 'events', endpoint, force_path_style: true, access_key_id: 'AKIDEXAMPLE', secret_access_key: 'not-a-secret', checksums: 'when_required' });
const rebinding = { outboundLookup: fixedLookup({ 'store.example.com': '127.0.0.1' }) };

describe('s3 outbound policy', () => {
  it('refuses a loopback, private or metadata endpoint, and http to a host not allowed, at validation', () => {
    for (const endpoint of [`http://127.0.0.1:${trap.port}`, 'https://2130706433', 'https://[::ffff:127.0.0.1]:9000', 'https://169.254.169.254', 'https://localhost:9000', 'http://s3.example.com']) {
      expect(plugin.validateConfig!(at(endpoint), 'destination', noAllowList).map((p) => [p.pointer, p.code])).toEqual([['/endpoint', 'url_not_allowed']]);
    }
    expect(plugin.validateConfig!(at('https://s3.example.com'), 'destination', noAllowList)).toEqual([]);
    expect(plugin.validateConfig!(at(`http://127.0.0.1:${trap.port}`), 'destination', createConnectorOutbound({ allow: ['127.0.0.1'] }))).toEqual([]);
  });

  it('a check of a literal loopback endpoint is down with url_not_allowed', async () => {
    const result = await plugin.check!(connectorContext(at(`http://127.0.0.1:${trap.port}`)));
    expect([result.health, result.error?.code]).toEqual(['down', 'url_not_allowed']);
    expect([trap.connections, trap.bytes]).toEqual([0, 0]);
  });

  it('a check of a name that resolves to loopback is down with url_not_allowed, not one byte sent', async () => {
    const result = await plugin.check!(connectorContext(at(`https://store.example.com:${trap.port}`), rebinding));
    expect([result.health, result.error?.code]).toEqual(['down', 'url_not_allowed']);
    expect([trap.connections, trap.bytes]).toEqual([0, 0]);
  });

  it('a destination write and a source read fail with a non-retryable url_not_allowed', async () => {
    const destination = await plugin.destination!(connectorContext(at(`https://store.example.com:${trap.port}`), rebinding));
    const write = destination.write([{ id: 'evt_1', type: 't', occurredAt: '2026-01-01T00:00:00.000Z', payload: {} }], new AbortController().signal);
    const error = (await write.then(() => null, (e: unknown) => e)) as ConnectorError | null;
    const results = error ? null : await write;
    // Either the whole batch throws or every record is refused; both say url_not_allowed, not retryable.
    const refusal = error ?? (results?.[0] && !results[0].ok ? results[0].error : null);
    expect([refusal?.code, refusal?.retryable]).toEqual(['url_not_allowed', false]);
    await destination.close?.();
    const source = await plugin.source!(connectorContext(at(`https://store.example.com:${trap.port}`), { ...rebinding, direction: 'source' }));
    if (!('read' in source)) throw new Error('the s3 source is pulled');
    await expect(source.read(null, 10, new AbortController().signal)).rejects.toMatchObject({ code: 'url_not_allowed', retryable: false });
    await source.close?.();
    expect([trap.connections, trap.bytes]).toEqual([0, 0]);
  });

  it('opening a source or destination at a refused endpoint fails at once with url_not_allowed', async () => {
    // Refused before the client exists, so before any connection.
    await expect(Promise.resolve().then(() => plugin.destination!(connectorContext(at('http://s3.example.com'))))).rejects.toMatchObject({ code: 'url_not_allowed', retryable: false });
    await expect(Promise.resolve().then(() => plugin.source!(connectorContext(at('http://s3.example.com'))))).rejects.toMatchObject({ code: 'url_not_allowed', retryable: false });
  });
});

import { ConnectorError, generateWebhookSecret, type Clock } from '@ferry/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhook, type WebhookConfig } from './index.js';
import { connectorContext, fixedLookup, listenByteTrap, VirtualClock } from '@ferry/testing';
import { startReceiver, type TestReceiver } from './test-receiver.js';

const plugin = webhook({ allowHttp: ['127.0.0.1'] });

const ctx = (config: WebhookConfig, clock?: Clock) => connectorContext(config, { connectorId: 'con_1', ...(clock ? { clock } : {}) });

let receiver: TestReceiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});

describe('webhook check', () => {
  it('is healthy for a source: its endpoint is the engine own', async () => {
    expect(await plugin.check!(ctx({ signing_secret: generateWebhookSecret() }))).toEqual({ health: 'healthy', latencyMs: 0 });
  });

  it('is healthy when the receiver answers anything, even 405, to a HEAD', async () => {
    receiver.reply(() => ({ status: 405 }));
    const before = receiver.requests.length;
    const result = await plugin.check!(ctx({ url: receiver.url }));
    expect(result.health).toBe('healthy');
    expect(result.latencyMs).toBeGreaterThanOrEqual(0);
    expect(result.error).toBeUndefined();
    expect(receiver.requests.slice(before).map((r) => r.method)).toEqual(['HEAD']);
  });

  it('is down with `unreachable` when nothing listens', async () => {
    const closed = await startReceiver();
    await closed.close();
    const result = await plugin.check!(ctx({ url: closed.url, headers: { Authorization: 'Bearer s3cret' } }));
    expect(result.health).toBe('down');
    expect(result.error?.code).toBe('unreachable');
    expect(result.error?.message).not.toContain('s3cret');
  });

  it('is down with `timeout` when the receiver never answers within timeout_ms of the context clock', async () => {
    receiver.reply(() => 'hang');
    const clock = new VirtualClock(undefined, { settleRealMs: 1 });
    const before = receiver.requests.length;
    const checking = plugin.check!(ctx({ url: receiver.url, timeout_ms: 1000 }, clock));
    await new Promise<void>((resolve) => {
      const poll = () => (receiver.requests.length > before ? resolve() : setImmediate(poll));
      poll();
    });
    await clock.advance(1000);
    const result = await checking;
    expect([result.health, result.error?.code, result.latencyMs]).toEqual(['down', 'timeout', 1000]);
    receiver.reply(() => ({ status: 200 }));
  });

  it('is down with `url_not_allowed` when the policy refuses the url', async () => {
    const result = await webhook().check!(ctx({ url: receiver.url }));
    expect([result.health, result.error?.code]).toEqual(['down', 'url_not_allowed']);
  });

  it("applies the engine's allow list from the context, without an allow list of its own", async () => {
    receiver.reply(() => ({ status: 200 }));
    const result = await webhook().check!(connectorContext({ url: receiver.url }, { outboundAllow: ['127.0.0.1'] }));
    expect(result.health).toBe('healthy');
  });

  it('sends not one byte to a name that resolves to loopback (DNS rebinding), nor to a literal loopback url', async () => {
    const trap = await listenByteTrap();
    try {
      const plugin = webhook({ lookup: fixedLookup({ 'hooks.example.com': '127.0.0.1' }) });
      // https to a public-looking name passes validation; the address it resolves to is checked when connecting.
      const named = await plugin.check!(ctx({ url: `https://hooks.example.com:${trap.port}/hook` }));
      expect([named.health, named.error?.code]).toEqual(['down', 'url_not_allowed']);
      const literal = await plugin.check!(ctx({ url: `https://127.0.0.1:${trap.port}/hook` }));
      expect([literal.health, literal.error?.code]).toEqual(['down', 'url_not_allowed']);
      expect([trap.connections, trap.bytes]).toEqual([0, 0]);
    } finally {
      await trap.close();
    }
  });
});

describe('webhook rotate', () => {
  it('generates a new signing secret without input', async () => {
    const old = generateWebhookSecret();
    const rotated = await plugin.rotate!(ctx({ signing_secret: old }), {});
    expect(rotated.signing_secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(rotated.signing_secret).not.toBe(old);
    expect(Object.keys(rotated)).toEqual(['signing_secret']);
  });

  it('accepts a well-formed supplied secret and refuses a malformed one without echoing it', async () => {
    const given = `whsec_${Buffer.alloc(24, 1).toString('base64')}`;
    expect(await plugin.rotate!(ctx({}), { config: { signing_secret: given } })).toEqual({ signing_secret: given });
    for (const bad of ['whsec_tooShort', 'plain-text-secret', `whsec_${Buffer.alloc(65).toString('base64')}`]) {
      const error = await plugin.rotate!(ctx({}), { config: { signing_secret: bad } }).then(() => null, (e: unknown) => e);
      expect(error).toBeInstanceOf(ConnectorError);
      expect([(error as ConnectorError).code, (error as ConnectorError).retryable]).toEqual(['invalid_secret', false]);
      expect((error as Error).message).not.toContain(bad);
    }
  });
});

import { generateWebhookSecret, webhookSecretBytes, type ConnectorDirection } from '@ferry/core';
import { createConnectorOutbound, schemaErrors } from '@ferry/core/internal';
import { describe, expect, it } from 'vitest';
import { webhook, type WebhookConfig } from './index.js';

const secret = generateWebhookSecret();
/** The engine's policy with no allow list, as `createEngine` makes it by default. */
const noAllowList = createConnectorOutbound();
const plugin = webhook();
/** Validation as an engine allowing 127.0.0.1 runs it. */
const validate = (config: WebhookConfig, direction: ConnectorDirection) => plugin.validateConfig!(config, direction, createConnectorOutbound({ allow: ['127.0.0.1'] }));

describe('webhook config', () => {
  it('accepts a minimal source config and a full destination config', () => {
    expect(schemaErrors(plugin.configSchema, {})).toEqual([]);
    expect(validate({}, 'source')).toEqual([]);
    const full = { signing_secret: secret, url: 'https://example.com/hook', batch_size: 1, concurrency: 32, headers: { Authorization: 'Bearer t0ken' }, timeout_ms: 1000, retries: 10 };
    expect(schemaErrors(plugin.configSchema, full)).toEqual([]);
    expect(validate(full, 'destination')).toEqual([]);
    expect(validate(full, 'bidirectional')).toEqual([]);
  });

  it('refuses unknown fields and out-of-range numbers', () => {
    const errors = schemaErrors(plugin.configSchema, { url: 'https://example.com', batch_size: 1001, concurrency: 33, timeout_ms: 999, retries: 11, extra: 1 });
    expect(errors.map((e) => [e.pointer, e.code])).toEqual(
      expect.arrayContaining([['/batch_size', 'out_of_range'], ['/concurrency', 'out_of_range'], ['/timeout_ms', 'out_of_range'], ['/retries', 'out_of_range'], ['/extra', 'unknown_field']]),
    );
    expect(schemaErrors(plugin.configSchema, { retries: -1 }).map((e) => e.code)).toEqual(['out_of_range']);
    expect(schemaErrors(plugin.configSchema, { retries: 0 })).toEqual([]);
    expect(schemaErrors(plugin.configSchema, { retries: 1.5 }).length).toBeGreaterThan(0);
    expect(schemaErrors(plugin.configSchema, { batch_size: 0 }).map((e) => e.code)).toEqual(['out_of_range']);
    expect(schemaErrors(plugin.configSchema, { concurrency: 0 }).map((e) => e.code)).toEqual(['out_of_range']);
    expect(schemaErrors(plugin.configSchema, { concurrency: 2.5 }).length).toBeGreaterThan(0);
    expect(schemaErrors(plugin.configSchema, { headers: { a: 1 } }).length).toBeGreaterThan(0);
  });

  it('requires a url for a destination or bidirectional connector, not for a source', () => {
    expect(validate({}, 'destination')).toEqual([{ pointer: '/url', code: 'required', detail: expect.any(String) }]);
    expect(validate({}, 'bidirectional').map((e) => e.pointer)).toEqual(['/url']);
    expect(validate({}, 'source')).toEqual([]);
  });

  it('applies the outbound policy to the url', () => {
    const strict = (config: WebhookConfig) => plugin.validateConfig!(config, 'destination', noAllowList);
    for (const url of ['http://example.com/hook', 'ftp://example.com', 'not a url', 'https://127.0.0.1/hook', 'https://2130706433/hook', 'https://[::ffff:127.0.0.1]/hook', 'https://user:pw@example.com/']) {
      expect(strict({ url }).map((e) => [e.pointer, e.code])).toEqual([['/url', 'url_not_allowed']]);
    }
    expect(validate({ url: 'http://127.0.0.1:8080/hook' }, 'destination')).toEqual([]);
    expect(validate({ url: 'http://10.0.0.1/hook' }, 'destination').map((e) => e.code)).toEqual(['url_not_allowed']);
    // The plugin's own allowHttp adds to the engine's list.
    expect(webhook({ allowHttp: true }).validateConfig!({ url: 'http://10.0.0.1/hook' }, 'destination', noAllowList)).toEqual([]);
    expect(webhook({ allowHttp: ['10.0.0.1'] }).validateConfig!({ url: 'http://127.0.0.1/hook' }, 'destination', createConnectorOutbound({ allow: ['127.0.0.1'] }))).toEqual([]);
  });

  it('refuses a malformed signing secret without echoing it', () => {
    for (const bad of ['whsec_short', 'secret', `whsec_${Buffer.alloc(65).toString('base64')}`]) {
      const errors = validate({ signing_secret: bad }, 'source');
      expect(errors.map((e) => [e.pointer, e.code])).toEqual([['/signing_secret', 'format']]);
      expect(errors[0]!.detail).not.toContain(bad);
    }
    expect(validate({ signing_secret: `whsec_${Buffer.alloc(24, 7).toString('base64')}` }, 'source')).toEqual([]);
  });

  it('refuses static headers that would override the signature or framing, or cannot be sent', () => {
    const errors = validate({ headers: { 'Webhook-Signature': 'v1,forged', 'content-type': 'text/plain', 'bad name': 'x', ok: 'line\nbreak', 'X-Fine': 'yes' } }, 'source');
    expect(errors.map((e) => e.pointer).sort()).toEqual(['/headers/Webhook-Signature', '/headers/bad name', '/headers/content-type', '/headers/ok']);
    expect(JSON.stringify(errors)).not.toContain('forged');
  });

  it('prepareConfig generates a signing secret when omitted and keeps a given one, without touching its input', () => {
    const input = { url: 'https://example.com/hook' };
    const prepared = plugin.prepareConfig(input, 'destination');
    expect(input).toEqual({ url: 'https://example.com/hook' });
    expect(prepared.url).toBe(input.url);
    expect(webhookSecretBytes(prepared.signing_secret!)?.length).toBe(32);
    expect(plugin.prepareConfig(input, 'destination').signing_secret).not.toBe(prepared.signing_secret);
    expect(plugin.prepareConfig({ signing_secret: secret }, 'source')).toEqual({ signing_secret: secret });
  });

  it('declares its type and directions; as a source it reads the inbox the ingest endpoint fills', async () => {
    expect(plugin.type).toBe('webhook');
    expect(plugin.directions).toEqual(['source', 'destination', 'bidirectional']);
    const batch = { records: [{ position: '1', type: 't', payload: {} }], checkpoint: 1 };
    const asked: unknown[] = [];
    const source = (await plugin.source!({ inbox: { read: async (checkpoint: unknown, max: number) => (asked.push([checkpoint, max]), batch) } } as never)) as { read(c: unknown, m: number): Promise<unknown> };
    expect(await source.read(null, 10)).toBe(batch);
    expect(asked).toEqual([[null, 10]]);
  });
});

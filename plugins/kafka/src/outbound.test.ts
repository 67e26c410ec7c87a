import type { PushSource } from '@ferry/core';
import { createConnectorOutbound } from '@ferry/core/internal';
import { connectorContext, fixedLookup, listenByteTrap, type ByteTrap } from '@ferry/testing';
import { Value } from '@sinclair/typebox/value';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kafka, kafkaConfigSchema, type KafkaConfig } from './index.js';

// The outbound policy with the allow list unset, as an engine has it by default: a broker at a
// loopback address, literal or behind a name, gets no connection and no byte.
const plugin = kafka({ retries: 0 });
const noAllowList = createConnectorOutbound();
let trap: ByteTrap;
beforeAll(async () => {
  trap = await listenByteTrap();
});
afterAll(async () => {
  await trap.close();
});

const config = (brokers: string[], extra: Partial<KafkaConfig> = {}) => Value.Default(kafkaConfigSchema, { brokers, topic: 'events', ...extra }) as KafkaConfig;
const rebinding = { outboundLookup: fixedLookup({ 'broker.example.com': '127.0.0.1' }) };

describe('kafka outbound policy', () => {
  it('refuses a broker at a loopback, private or metadata address or localhost at validation, pointing at it', () => {
    const brokers = ['broker.example.com:9092', `127.0.0.1:${trap.port}`, '2130706433:9092', '[::1]:9092', '10.0.0.7:9092', '169.254.169.254:80', 'localhost:9092'];
    expect(plugin.validateConfig!(config(brokers), 'destination', noAllowList).map((p) => [p.pointer, p.code])).toEqual(
      brokers.slice(1).map((_, i) => [`/brokers/${i + 1}`, 'url_not_allowed']),
    );
    expect(plugin.validateConfig!(config([`127.0.0.1:${trap.port}`]), 'destination', createConnectorOutbound({ allow: ['127.0.0.1'] }))).toEqual([]);
  });

  it('a check of a literal loopback broker is down with url_not_allowed, no connection made', async () => {
    const result = await plugin.check!(connectorContext(config([`127.0.0.1:${trap.port}`])));
    expect([result.health, result.error?.code]).toEqual(['down', 'url_not_allowed']);
    expect([trap.connections, trap.bytes]).toEqual([0, 0]);
  });

  it('a check of a broker name that resolves to loopback is down with url_not_allowed, not one byte sent', async () => {
    const result = await plugin.check!(connectorContext(config([`broker.example.com:${trap.port}`]), rebinding));
    expect([result.health, result.error?.code]).toEqual(['down', 'url_not_allowed']);
    const tls = await plugin.check!(connectorContext(config([`broker.example.com:${trap.port}`], { ssl: true }), rebinding));
    expect([tls.health, tls.error?.code]).toEqual(['down', 'url_not_allowed']);
    expect([trap.connections, trap.bytes]).toEqual([0, 0]);
  });

  it('a destination write and a source consumption fail with a non-retryable url_not_allowed', async () => {
    const destination = await plugin.destination!(connectorContext(config([`broker.example.com:${trap.port}`]), rebinding));
    const write = destination.write([{ id: 'evt_1', type: 't', occurredAt: '2026-01-01T00:00:00.000Z', payload: {} }], new AbortController().signal);
    await expect(write).rejects.toMatchObject({ code: 'url_not_allowed', retryable: false });
    await destination.close?.();
    const sourceConfig = config([`broker.example.com:${trap.port}`], { topics: ['events'], topic: undefined });
    const source = (await plugin.source!(connectorContext(sourceConfig, { ...rebinding, direction: 'source' }))) as PushSource;
    await expect(source.consume(null, async () => undefined, new AbortController().signal)).rejects.toMatchObject({ code: 'url_not_allowed', retryable: false });
    await source.close?.();
    expect([trap.connections, trap.bytes]).toEqual([0, 0]);
  });
});

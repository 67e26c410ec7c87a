import { generateWebhookSecret, type JsonObject } from '@ferry/core';
import { startWebhookReceiver, type WebhookReceiver } from '@ferry/testing';
import { runConnectorSuite } from '@ferry/testing/suites';
import { afterAll, beforeAll } from 'vitest';
import { webhook } from './index.js';

// The destination against a real HTTP receiver on loopback; the source reads the inbox the
// engine's ingest endpoint fills (the suite's stand-in: test/runtime/webhook-source.test.ts runs
// the real endpoint).
let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await startWebhookReceiver();
  // A receiver that refuses one record: the event whose payload has n = -1.
  // (The connector's check is a HEAD without a body.)
  receiver.reply((r) => (r.body !== '' && (JSON.parse(r.body) as { payload?: { n?: number } }).payload?.n === -1 ? { status: 422 } : { status: 204 }));
});
afterAll(() => receiver.close());

let next = 0;
/** Each destination posts to its own path, so what landed is told apart. */
const landedAt = (config: JsonObject) => {
  const path = new URL(String(config.url)).pathname;
  const ids = new Set<string>();
  for (const request of receiver.received.filter((r) => r.path === path && r.status === 204)) {
    const body = JSON.parse(request.body) as { id: string } | { events: { id: string }[] };
    for (const event of 'events' in body ? body.events : [body]) ids.add(event.id);
  }
  // A receiver keeps one copy per event id (it dedupes on it, as docs/api.md asks of receivers).
  return [...ids].map((id) => ({ id }));
};

runConnectorSuite('webhook', {
  plugin: webhook(),
  secretFields: ['signing_secret', 'headers'],
  serverless: ['source'],
  source: {
    config: async () => ({ signing_secret: generateWebhookSecret() }),
    produce: async (_config, from, count, inbox) => {
      for (let n = from; n < from + count; n++) inbox.append({ type: 'suite.record', payload: { n } });
    },
  },
  destination: {
    // One event per request: a refusal is then one record's.
    config: async () => ({ signing_secret: generateWebhookSecret(), url: `${receiver.url}/${next++}`, batch_size: 1 }),
    landed: async (config) => landedAt(config),
    rejectable: async () => ({ id: 'evt_suite_bad', type: 'suite.event', occurredAt: '2026-01-01T00:00:00.000Z', payload: { n: -1 } }),
  },
  unreachable: async () => ({ signing_secret: generateWebhookSecret(), url: 'http://127.0.0.1:1/closed', batch_size: 1 }),
  rotation: { config: async () => ({ signing_secret: generateWebhookSecret(), url: `${receiver.url}/rotated` }) },
});

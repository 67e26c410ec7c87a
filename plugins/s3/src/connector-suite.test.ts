import { PutObjectCommand } from '@aws-sdk/client-s3';
import type { JsonObject } from '@ferry/core';
import { closedPort } from '@ferry/testing';
import { runConnectorSuite } from '@ferry/testing/suites';
import { afterAll, beforeAll } from 'vitest';
import { s3 } from './index.js';
import { freshConfig, linesUnder, startStore, type TestStore } from './test-store.js';

let store: TestStore;
beforeAll(async () => {
  store = await startStore();
});
afterAll(async () => {
  await store?.stop();
});

let objects = 0;

runConnectorSuite('s3', {
  plugin: s3({ requestTimeoutMs: 5000 }),
  secretFields: ['access_key_id', 'secret_access_key', 'session_token'],
  source: {
    config: () => freshConfig(store, { type: 'suite.line' }),
    async produce(config, from, count) {
      // Each call its own object, named so that objects sort in the order they were written.
      const lines = Array.from({ length: count }, (_, i) => JSON.stringify({ n: from + i }));
      const key = `${String(config.prefix)}part-${String(objects++).padStart(6, '0')}.jsonl`;
      await store.client.send(new PutObjectCommand({ Bucket: String(config.bucket), Key: key, Body: `${lines.join('\n')}\n` }));
    },
  },
  destination: {
    // Small objects: the suite's records are split over several, and a big record is refused.
    config: () => freshConfig(store, { max_batch_bytes: 2048 }),
    async landed(config) {
      return (await linesUnder(store, config)).map((line) => ({ id: String(line.id), type: String(line.type), payload: line.payload as JsonObject }));
    },
    async rejectable() {
      return { id: 'evt_too_large', type: 'suite.event', occurredAt: '2026-01-01T00:00:00.000Z', payload: { blob: 'x'.repeat(4096) } };
    },
    idempotence: 'batch',
  },
  async unreachable() {
    return { bucket: 'nowhere', endpoint: `http://127.0.0.1:${await closedPort()}`, force_path_style: true, access_key_id: 'AKIDEXAMPLE', secret_access_key: 'suite-secret', checksums: 'when_required', type: 't' };
  },
  rotation: {
    config: () => freshConfig(store),
    async supplied() {
      // s3rver knows one key pair: the "new" keys are the same ones, which must pass a check.
      return { access_key_id: store.server.accessKeyId, secret_access_key: store.server.secretAccessKey };
    },
  },
});

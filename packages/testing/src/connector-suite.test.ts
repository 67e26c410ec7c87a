import { MemoryHub, memoryConnector } from './memory-connector.js';
import { runConnectorSuite } from './connector-suite.js';

// The suite on the memory connector: it must pass on a plugin that behaves, which keeps the
// suite itself honest (a check that cannot pass would fail here first).
const hub = new MemoryHub();
let next = 0;
const fresh = () => `suite-${next++}`;

runConnectorSuite('memory', {
  plugin: memoryConnector(hub),
  secretFields: ['token'],
  // In memory: no connection for the outbound policy to refuse.
  network: false,
  source: {
    config: async () => ({ name: fresh(), token: 'source-token' }),
    produce: async (config, from, count) => {
      for (let n = from; n < from + count; n++) hub.stream(String(config.name)).push({ type: 'suite.record', payload: { n } });
    },
  },
  destination: {
    config: async () => ({ name: fresh(), token: 'destination-token' }),
    landed: async (config) => [...hub.sink(String(config.name)).events.values()].map((e) => ({ id: e.id, type: e.type, payload: e.payload })),
    rejectable: async (config) => {
      hub.sink(String(config.name)).reject((e) => e.payload.n === -1, { retryable: false, code: 'record_rejected' });
      return { id: 'evt_suite_bad', type: 'suite.event', occurredAt: '2026-01-01T00:00:00.000Z', payload: { n: -1 } };
    },
  },
  unreachable: async () => {
    const name = fresh();
    hub.stream(name).down(3_600_000);
    hub.sink(name).down(3_600_000);
    return { name, token: 'unreachable-token' };
  },
});

/**
 * @ferry/testing: what Ferry's own tests use, published for plugin authors and embedders: a
 * virtual clock, a connector context, a memory connector, loopback HTTP servers and a webhook
 * receiver. Pure JavaScript, for any platform, and loadable with `import` or `require`.
 *
 * The conformance suites, which register vitest tests, are the ESM-only entry
 * `@ferry/testing/suites`; real servers of the connectors' protocols (Postgres, S3, Snowflake,
 * Kafka) are the separate package `@ferry/test-servers`.
 *
 * @packageDocumentation
 */
export { VirtualClock } from './virtual-clock.js';
export { eventually } from './eventually.js';
export { connectorContext, type ConnectorContextOptions } from './connector-context.js';
export { MemoryHub, MemoryStream, MemorySink, memoryConnector, memoryConfigSchema, type MemoryHubOptions, type MemoryRecordInput } from './memory-connector.js';
export { listenLoopback, closedPort, type LoopbackServer } from './loopback-server.js';
export { listenByteTrap, fixedLookup, type ByteTrap } from './byte-trap.js';
export { startWebhookReceiver, type ReceivedWebhook, type WebhookReceiver, type WebhookReply } from './webhook-receiver.js';

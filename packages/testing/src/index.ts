/**
 * @ferry/testing: what Ferry's own tests use, published for plugin authors and embedders: a
 * virtual clock, an embedded Postgres, loopback HTTP servers, and the storage conformance suite.
 *
 * @packageDocumentation
 */
export { VirtualClock } from './virtual-clock.js';
export { eventually } from './eventually.js';
export { startTestS3, type TestS3Server } from './s3-server.js';
export { startTestSnowflake, type TestSnowflake, type TestSnowflakeOptions, type TestSnowflakeUser } from './snowflake-server.js';
export { startKafkaMock, RDKAFKA_MOCK_HEADER, type KafkaMock, type KafkaMockOptions } from './kafka-mock.js';
export { startTestPostgres, getSharedTestPostgres, type TestPostgres } from './embedded-postgres.js';
export { runStorageSuite, connectorRow, pipelineRow, type StorageFactory } from './storage-suite.js';
export { runEngineStorageSuite } from './engine-storage-suite.js';
export { connectorContext, type ConnectorContextOptions } from './connector-context.js';
export { runConnectorSuite, type ConnectorSuiteOptions, type SourceHarness, type DestinationHarness, type LandedEvent } from './connector-suite.js';
export { MemoryHub, MemoryStream, MemorySink, memoryConnector, memoryConfigSchema, type MemoryHubOptions, type MemoryRecordInput } from './memory-connector.js';
export { listenLoopback, closedPort, type LoopbackServer } from './loopback-server.js';
export { listenByteTrap, fixedLookup, type ByteTrap } from './byte-trap.js';
export { startWebhookReceiver, type ReceivedWebhook, type WebhookReceiver, type WebhookReply } from './webhook-receiver.js';

/**
 * `@ferry/testing/suites`: the conformance suites every storage dialect and every connector
 * plugin must pass. Each registers vitest `describe` blocks when called, so this entry imports
 * vitest and is ESM only, as vitest is; the rest of the kit is the package's main entry.
 *
 * @packageDocumentation
 */
export { runStorageSuite, connectorRow, pipelineRow, type StorageFactory } from './storage-suite.js';
export { runEngineStorageSuite } from './engine-storage-suite.js';
export { runConnectorSuite, type ConnectorSuiteOptions, type SourceHarness, type DestinationHarness, type LandedEvent } from './connector-suite.js';

/**
 * @ferry/example-custom-connector: a connector type written outside Ferry, against
 * `@ferry/core`'s public entry only: events in JSON Lines files.
 *
 * @packageDocumentation
 */
export { jsonlFile, jsonlFileConfigSchema, UNPARSED_TYPE, type JsonlFileConfig } from './jsonl-file.js';

/**
 * @ferry/snowflake: the `snowflake` connector type. As a destination it merges event batches into
 * a table with a VARIANT payload, idempotently by event id; as a source it reads a table or
 * query incrementally by a cursor column.
 *
 * @packageDocumentation
 */
export { snowflake, SNOWFLAKE_PLUGIN_VERSION, type SnowflakeOptions, type SnowflakeConnector } from './snowflake-connector.js';
export {
  snowflakeConfigSchema,
  validateSnowflakeConfig,
  DEFAULT_SOURCE_BATCH_SIZE,
  DESTINATION_COLUMNS,
  type SnowflakeConfig,
  type ConfigProblem,
} from './config.js';
export { MAX_ROWS_PER_MERGE, MAX_ROWS_PER_INSERT, MAX_PAYLOAD_BYTES, MAX_STATEMENT_BYTES } from './destination.js';

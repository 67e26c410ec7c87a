/**
 * @ferry/postgres: the `postgres` connector type. As a source it reads a table or query
 * incrementally by a cursor column; as a destination it writes event batches into a table,
 * idempotently by event id.
 *
 * @packageDocumentation
 */
export { postgres, POSTGRES_PLUGIN_VERSION, type PostgresOptions, type PostgresConnector } from './postgres-connector.js';
export {
  postgresConfigSchema,
  validatePostgresConfig,
  DEFAULT_PORT,
  DEFAULT_STATEMENT_TIMEOUT_MS,
  DEFAULT_SOURCE_BATCH_SIZE,
  DEFAULT_POLL_INTERVAL_MS,
  type PostgresConfig,
  type ConfigProblem,
} from './config.js';

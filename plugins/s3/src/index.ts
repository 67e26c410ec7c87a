/**
 * The `s3` connector type for Ferry: JSON Lines objects on S3 or an S3-compatible store.
 * @packageDocumentation
 */
export { s3, S3_PLUGIN_VERSION, type S3Connector, type S3Options } from './s3-connector.js';
export { s3ConfigSchema, validateS3Config, DEFAULT_MAX_BATCH_BYTES, type S3Config } from './config.js';
export { DEFAULT_SOURCE_TYPE, type S3Position } from './source.js';

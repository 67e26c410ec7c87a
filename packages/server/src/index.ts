/**
 * @ferry/server: the reference server and the `ferry` CLI (docs/operations.md). `startServer`
 * runs the /v2 API on Fastify over an engine with every connector plugin, `/healthz` and
 * `/metrics`; `runCli` is the command line (`serve`, `migrate`, `keys`).
 *
 * @packageDocumentation
 */
export { startServer, storageOf, type RunningServer, type StartServerOptions } from './serve.js';
export { runCli, type CliIo } from './cli.js';
export { parseServeSettings, parseDatabase, SettingsError, type ServerSettings, type ServerRole, type DatabaseSetting } from './settings.js';
export { resolveSecretKey, secretKeyPath } from './secret-key-file.js';
export { createMetrics, type ServerMetrics } from './metrics.js';
export { createLogger, REDACTED_PATHS } from './logger.js';
export { serverPlugins } from './plugins.js';

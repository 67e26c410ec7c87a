/**
 * Storage: SQLite and Postgres behind one dialect seam, the repositories (one per table), named
 * leases and the leased queue, migrations, and the SQLite writer thread.
 */
export { type StorageDialect } from './dialect.js';
export { BatchCommits, type BatchCommit, type QueuedCommit } from './batch-commits.js';
export { FerryStorage, openStorage } from './ferry-storage.js';
export { Repositories } from './repositories.js';
export { type KeysetResult } from './keyset.js';
export { LeasedQueue, LeasesRepo, type Claim, type ClaimOptions, type Fence, type LeaseGrant, type LeasedQueueSpec } from './leases.js';
export { type ApiKeyRow } from './repositories/api-keys-repo.js';
export { type BackfillPatch, type BackfillRow } from './repositories/backfills-repo.js';
export { type ConnectorRow } from './repositories/connectors-repo.js';
export { type AttemptOutcome, type DeliveryAttemptRow, type DeliveryRow } from './repositories/deliveries-repo.js';
export { type DeadLetterRow, type EventFilters, type EventRow } from './repositories/events-repo.js';
export { type IdempotencyBegin, type IdempotencyRecord } from './repositories/idempotency-repo.js';
export { type InboxEntry, type InboxRow } from './repositories/inbox-repo.js';
export { type OutboxRow } from './repositories/outbox-repo.js';
export { type PipelineHoldRow } from './repositories/pipeline-holds-repo.js';
export { type MinuteCounts, type PipelineMinuteRow } from './repositories/pipeline-minutes-repo.js';
export { type PipelineRow } from './repositories/pipelines-repo.js';
export { type NewRun, type RunRow } from './repositories/runs-repo.js';
export { type CountsBy, type StorageStats } from './repositories/stats-repo.js';
export { type WebhookRow } from './repositories/webhooks-repo.js';
export { type WorkspaceRow } from './repositories/workspaces-repo.js';
export { affected, isUniqueViolation, type Db } from './sql-helpers.js';
export { postgresStorage, sqliteStorage, type Dialect, type PostgresOptions, type SqliteOptions, type StorageConfig } from './storage-config.js';
export { isStorageUnavailable, translateStorageError } from './storage-errors.js';
export { migrationSource, MIGRATIONS_TABLE } from './migrations/index.js';

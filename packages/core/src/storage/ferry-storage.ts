import knexFactory, { type Knex } from 'knex';
import { FerryError, silentLogger, type Logger } from '../common/index.js';
import { migrationSource, MIGRATIONS_TABLE } from './migrations/index.js';
import { connectionDb, hasDirectTransactions, SqliteIdleReader } from './sqlite-direct.js';
import { SqliteWriterThread } from './sqlite-writer-thread.js';
import { BatchCommits } from './batch-commits.js';
import { Repositories } from './repositories.js';
import type { StorageConfig } from './storage-config.js';
import { storageDialect, type StorageDialect } from './dialect.js';

/**
 * The engine's storage: one knex instance, the migrations, and the repositories. The same code
 * runs on SQLite and on Postgres; only lease claims differ (see `LeasedQueue`).
 *
 * Embedders rarely need it directly (the engine opens its own); it is public for tools and for
 * the storage conformance suite of `@ferry/testing`.
 */
export class FerryStorage {
  readonly knex: Knex;
  /** What differs between SQLite and Postgres (see `StorageDialect`); `dialect.name` says which. */
  readonly dialect: StorageDialect;
  readonly description: string;
  /** Repositories outside any transaction. */
  readonly repos: Repositories;
  /** SQLite on a file: the thread that commits pipeline batches off the event loop (see {@link SqliteWriterThread}). */
  readonly writer: SqliteWriterThread | undefined;
  private closed = false;
  private readonly idle: SqliteIdleReader | undefined;
  private readonly knexPool: { max?: unknown } | undefined;

  constructor(config: StorageConfig, options: { logger?: Logger } = {}) {
    this.dialect = storageDialect(config.dialect);
    this.description = config.description;
    const logger = (options.logger ?? silentLogger).child({ component: 'storage' });
    // knex writes its own warnings to the console unless given a logger; route them to ours.
    const log = (level: 'warn' | 'error' | 'debug') => (message: unknown) => logger[level]({ detail: String(message) }, `knex ${level}`);
    this.knex = knexFactory({ ...config.knex, log: { warn: log('warn'), error: log('error'), debug: log('debug'), deprecate: log('warn') } });
    this.idle = this.dialect.inProcess ? new SqliteIdleReader(this.knex) : undefined;
    this.repos = new Repositories(this.knex, this.dialect, this.idle);
    this.knexPool = config.knex.pool as { max?: unknown } | undefined;
    this.writer = config.sqliteWriter ? new SqliteWriterThread(config.sqliteWriter) : undefined;
  }

  /**
   * One pipeline's batch commits, in order (see {@link BatchCommits}): the event log, checkpoint,
   * counters and notifications of each batch in one transaction, on the writer thread or not.
   */
  batchCommits(pipelineId: string): BatchCommits {
    return new BatchCommits(this, pipelineId);
  }

  /** Applies pending migrations (idempotent; safe to call from several engines at once). */
  async migrate(): Promise<void> {
    const run = () => this.knex.migrate.latest({ migrationSource, tableName: MIGRATIONS_TABLE });
    try {
      await this.dialect.migrate(this.knex, run, (this.knexPool?.max as number | undefined) ?? 10);
      await this.idle?.prime();
    } catch (error) {
      throw new FerryError('unavailable', `Storage migrations failed on ${this.description}.`, { cause: error, retryAfterSeconds: 5 });
    }
  }

  /**
   * Runs `fn` in one transaction with repositories bound to it; commits when it resolves and
   * rolls back when it throws. On SQLite it holds the write lock from the start (`BEGIN IMMEDIATE`),
   * on the pooled connection directly (see `DirectTransactions`).
   */
  async transaction<T>(fn: (repos: Repositories) => Promise<T>): Promise<T> {
    const client = this.knex.client as unknown;
    if (hasDirectTransactions(client)) return client.runTransaction((conn) => fn(new Repositories(connectionDb(this.knex, conn), this.dialect)));
    return this.knex.transaction((trx) => fn(new Repositories(trx, this.dialect)));
  }

  /** True when the database answers a trivial query. */
  async ping(): Promise<boolean> {
    try {
      await this.knex.raw('select 1');
      return true;
    } catch {
      return false;
    }
  }

  /** Closes every connection. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.idle?.release();
    await this.writer?.close();
    await this.knex.destroy();
  }
}

/**
 * Opens storage and applies migrations.
 *
 * @example
 * ```ts
 * const storage = await openStorage(sqliteStorage({ filename: ':memory:' }));
 * await storage.repos.workspaces.ensure('default', new Date().toISOString());
 * await storage.close();
 * ```
 */
export async function openStorage(config: StorageConfig, options: { logger?: Logger } = {}): Promise<FerryStorage> {
  const storage = new FerryStorage(config, options);
  try {
    await storage.migrate();
  } catch (error) {
    await storage.close();
    throw error;
  }
  return storage;
}

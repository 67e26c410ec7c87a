import knexFactory, { type Knex } from 'knex';
import { FerryError } from '../errors.js';
import { migrationSource, MIGRATIONS_TABLE } from './migrations/index.js';
import { ApiKeysRepo } from './repositories/api-keys-repo.js';
import { CheckpointsRepo } from './repositories/checkpoints-repo.js';
import { ConnectorsRepo } from './repositories/connectors-repo.js';
import { DeliveriesRepo } from './repositories/deliveries-repo.js';
import { EventsRepo } from './repositories/events-repo.js';
import { IdempotencyRepo } from './repositories/idempotency-repo.js';
import { InboxRepo } from './repositories/inbox-repo.js';
import { OutboxRepo } from './repositories/outbox-repo.js';
import { PipelinesRepo } from './repositories/pipelines-repo.js';
import { RunsRepo } from './repositories/runs-repo.js';
import { WebhooksRepo } from './repositories/webhooks-repo.js';
import { WorkspacesRepo } from './repositories/workspaces-repo.js';
import { LeasesRepo } from './leases.js';
import type { Db } from './sql-helpers.js';
import type { Dialect, StorageConfig } from './storage-config.js';

/** Every repository, bound to one connection or transaction. */
export class Repositories {
  readonly workspaces: WorkspacesRepo;
  readonly apiKeys: ApiKeysRepo;
  readonly connectors: ConnectorsRepo;
  readonly pipelines: PipelinesRepo;
  readonly runs: RunsRepo;
  readonly checkpoints: CheckpointsRepo;
  readonly events: EventsRepo;
  readonly webhooks: WebhooksRepo;
  readonly deliveries: DeliveriesRepo;
  readonly outbox: OutboxRepo;
  readonly idempotency: IdempotencyRepo;
  readonly leases: LeasesRepo;
  readonly inbox: InboxRepo;

  constructor(readonly db: Db, readonly dialect: Dialect) {
    this.workspaces = new WorkspacesRepo(db);
    this.apiKeys = new ApiKeysRepo(db);
    this.connectors = new ConnectorsRepo(db);
    this.pipelines = new PipelinesRepo(db);
    this.runs = new RunsRepo(db, dialect);
    this.checkpoints = new CheckpointsRepo(db);
    this.events = new EventsRepo(db, dialect);
    this.webhooks = new WebhooksRepo(db);
    this.deliveries = new DeliveriesRepo(db, dialect);
    this.outbox = new OutboxRepo(db);
    this.idempotency = new IdempotencyRepo(db);
    this.leases = new LeasesRepo(db, dialect);
    this.inbox = new InboxRepo(db);
  }
}

/**
 * The engine's storage: one knex instance, the migrations, and the repositories. The same code
 * runs on SQLite and on Postgres; only lease claims differ (see `LeasedQueue`).
 *
 * Embedders rarely need it directly (the engine opens its own); it is public for tools and for
 * the storage conformance suite of `@ferry/testing`.
 */
export class FerryStorage {
  readonly knex: Knex;
  readonly dialect: Dialect;
  readonly description: string;
  /** Repositories outside any transaction. */
  readonly repos: Repositories;
  private closed = false;

  constructor(config: StorageConfig) {
    this.dialect = config.dialect;
    this.description = config.description;
    this.knex = knexFactory(config.knex);
    this.repos = new Repositories(this.knex, this.dialect);
  }

  /** Applies pending migrations (idempotent; safe to call from several engines at once). */
  async migrate(): Promise<void> {
    try {
      await this.knex.migrate.latest({ migrationSource, tableName: MIGRATIONS_TABLE });
    } catch (error) {
      throw new FerryError('unavailable', `Storage migrations failed on ${this.description}.`, { cause: error, retryAfterSeconds: 5 });
    }
  }

  /**
   * Runs `fn` in one transaction with repositories bound to it; commits when it resolves and
   * rolls back when it throws. On SQLite it holds the write lock from the start (`BEGIN IMMEDIATE`).
   */
  async transaction<T>(fn: (repos: Repositories, trx: Knex.Transaction) => Promise<T>): Promise<T> {
    return this.knex.transaction((trx) => fn(new Repositories(trx, this.dialect), trx));
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
    await this.knex.destroy();
  }
}

/**
 * Opens storage and applies migrations.
 *
 * @example
 * ```ts
 * const storage = await openStorage(sqlite({ filename: ':memory:' }));
 * await storage.repos.workspaces.ensure('default', new Date().toISOString());
 * await storage.close();
 * ```
 */
export async function openStorage(config: StorageConfig): Promise<FerryStorage> {
  const storage = new FerryStorage(config);
  try {
    await storage.migrate();
  } catch (error) {
    await storage.close();
    throw error;
  }
  return storage;
}

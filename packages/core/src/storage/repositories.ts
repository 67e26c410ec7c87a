import type { Db } from './sql-helpers.js';
import type { StorageDialect } from './dialect.js';
import type { SqliteIdleReader } from './sqlite-direct.js';
import { ApiKeysRepo } from './repositories/api-keys-repo.js';
import { BackfillsRepo } from './repositories/backfills-repo.js';
import { CheckpointsRepo } from './repositories/checkpoints-repo.js';
import { ConnectorsRepo } from './repositories/connectors-repo.js';
import { DeliveriesRepo } from './repositories/deliveries-repo.js';
import { EventsRepo } from './repositories/events-repo.js';
import { IdempotencyRepo } from './repositories/idempotency-repo.js';
import { InboxRepo } from './repositories/inbox-repo.js';
import { StatsRepo } from './repositories/stats-repo.js';
import { OutboxRepo } from './repositories/outbox-repo.js';
import { PipelineMinutesRepo } from './repositories/pipeline-minutes-repo.js';
import { PipelineHoldsRepo } from './repositories/pipeline-holds-repo.js';
import { PipelinesRepo } from './repositories/pipelines-repo.js';
import { RunsRepo } from './repositories/runs-repo.js';
import { WebhooksRepo } from './repositories/webhooks-repo.js';
import { WorkspacesRepo } from './repositories/workspaces-repo.js';
import { LeasesRepo } from './leases.js';

/** Every repository, bound to one connection or transaction. */
export class Repositories {
  readonly workspaces: WorkspacesRepo;
  readonly apiKeys: ApiKeysRepo;
  readonly connectors: ConnectorsRepo;
  readonly pipelines: PipelinesRepo;
  readonly pipelineMinutes: PipelineMinutesRepo;
  readonly pipelineHolds: PipelineHoldsRepo;
  readonly runs: RunsRepo;
  readonly backfills: BackfillsRepo;
  readonly checkpoints: CheckpointsRepo;
  readonly events: EventsRepo;
  readonly webhooks: WebhooksRepo;
  readonly deliveries: DeliveriesRepo;
  readonly outbox: OutboxRepo;
  readonly idempotency: IdempotencyRepo;
  readonly leases: LeasesRepo;
  readonly inbox: InboxRepo;
  readonly stats: StatsRepo;

  /**
   * @param idle - SQLite only, for repositories outside a transaction: the direct read path of
   *   the hottest lookups (see {@link SqliteIdleReader}).
   */
  constructor(readonly db: Db, readonly dialect: StorageDialect, idle?: SqliteIdleReader) {
    this.workspaces = new WorkspacesRepo(db);
    this.apiKeys = new ApiKeysRepo(db, idle);
    this.connectors = new ConnectorsRepo(db);
    this.pipelines = new PipelinesRepo(db, idle);
    this.pipelineMinutes = new PipelineMinutesRepo(db);
    this.pipelineHolds = new PipelineHoldsRepo(db);
    this.runs = new RunsRepo(db, dialect, idle);
    this.backfills = new BackfillsRepo(db);
    this.checkpoints = new CheckpointsRepo(db, dialect);
    this.events = new EventsRepo(db, dialect);
    this.webhooks = new WebhooksRepo(db);
    this.deliveries = new DeliveriesRepo(db, dialect);
    this.outbox = new OutboxRepo(db, dialect);
    this.idempotency = new IdempotencyRepo(db);
    this.leases = new LeasesRepo(db, dialect);
    this.inbox = new InboxRepo(db);
    this.stats = new StatsRepo(db);
  }
}

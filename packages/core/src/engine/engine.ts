import { randomUUID } from 'node:crypto';
import type { Observable } from 'rxjs';
import type { DependencyContainer } from 'tsyringe';
import { guardedClock, systemClock, type Backfill, type Clock, type EventRecord, type PlatformEvent, type Run, type PlatformEventType, FerryError, IdGenerator, silentLogger, type Logger, CursorCodec } from '../common/index.js';
import { createEngineContainer } from './container.js';
import { generateSecretKey, parseSecretKey, SecretBox } from '../crypto/index.js';
import { EventLogFeed, eventsStream, type EventsStreamOptions, EventsService, IngestService } from '../events/index.js';
import { recoverRotations, ConnectorsService } from '../connectors/index.js';
import { BackfillFeed, BackfillsService } from '../backfills/index.js';
import { PlatformEventBus, TransactionScope, type BackfillProgress, type EngineContext, type EngineHooks, type PlatformEventListener, type ServiceSettings } from '../context/index.js';
import { PluginRegistry, type FerryPlugin } from '../plugin-api/index.js';
import { ApiKeysService, IdempotencyService, WorkspacesService } from '../access/index.js';
import { PipelinesService, PipelineRuntime, resolveRuntimeOptions, type RuntimeOptionsInput, builtinTransforms, RunFeed, runsStream, storedRuns, type RunsStreamOptions } from '../pipelines/index.js';
import { WebhooksService, resolveDeliveryOptions, type DeliveryOptionsInput, WebhookDelivery } from '../webhooks/index.js';
import { OutboundClient } from '../net/index.js';
import { RETENTION_OFF, RetentionJob, resolveRetentionOptions, type RetentionOptionsInput } from './retention.js';
import { FerryStorage, type StorageConfig, translateStorageError } from '../storage/index.js';

/** Each engine's context: for Ferry's own packages and tests, through {@link engineContext}. */
const contexts = new WeakMap<Engine, EngineContext>();
const idempotencies = new WeakMap<Engine, IdempotencyService>();

/**
 * The engine's context (its storage, clock, registry, secret box...): for Ferry's own packages
 * and its tests, exported by `@ferry/core/internal` only. Unstable.
 */
export function engineContext(engine: Engine): EngineContext {
  const context = contexts.get(engine);
  if (!context) throw new Error('Not an engine built by createEngine.');
  return context;
}

/**
 * The engine's `Idempotency-Key` records, their stored answers sealed: for HTTP layers such as
 * @ferry/http (an application calling the services directly has no use for them). Like the
 * services, it refuses calls unless the engine is running.
 */
export function idempotencyRecords(engine: Engine): IdempotencyService {
  const records = idempotencies.get(engine);
  if (!records) throw new Error('Not an engine built by createEngine.');
  return records;
}

/** Options of {@link createEngine}. */
export interface EngineOptions {
  /** Where state lives: `sqliteStorage({ filename })` or `postgresStorage({ connectionString })`. */
  storage: StorageConfig;
  /** Connector and transform plugins, registered explicitly. */
  plugins?: readonly FerryPlugin[];
  /**
   * The key-encryption key for connector and webhook secrets: 32 bytes, as raw bytes, 64 hex
   * characters or base64(url). Required, except for an in-memory SQLite database, where an
   * ephemeral key is generated (nothing outlives the process there anyway).
   */
  secretKey?: string | Uint8Array;
  /** Source of time; tests pass a virtual clock. Default: the wall clock. */
  clock?: Clock;
  /** A pino-compatible logger. Default: silent. */
  logger?: Logger;
  /**
   * Identifies this instance as a lease holder (default: a random UUID). An engine given the id
   * of one that has exited (a supervisor starting a crashed worker again) ends that one's leases
   * when it starts, so its pipelines, runs, replays and deliveries are taken up at once instead
   * of after the lease time. Give an id to one running engine at a time: two engines sharing one
   * take each other's leases at start (fencing keeps the data safe, but work moves for nothing).
   */
  instanceId?: string;
  /**
   * Hosts or CIDRs that webhooks and connectors may reach over plain http and despite being
   * private or loopback (local development and tests). `*` allows everything.
   */
  outboundAllow?: readonly string[];
  /** Defaults of new pipelines. */
  pipelineDefaults?: Partial<ServiceSettings['pipelineDefaults']>;
  /**
   * Tuning of the pipeline runtime (polling, leases, backoff, retry budgets), or `false` for an
   * engine that serves the API but runs no pipeline (another instance on the same Postgres does).
   */
  runtime?: RuntimeOptionsInput | false;
  /**
   * How long delivered events, finished runs and deliveries, fanned-out platform events and the
   * pipelines' per-minute counts are kept (see {@link RetentionOptions}); each kind is kept for
   * ever unless given, but for the per-minute counts (7 days). The job runs in engines that run
   * pipelines (not with `runtime: false`).
   */
  retention?: RetentionOptionsInput;
  /**
   * Tuning of webhook delivery (retry schedule, timeout, concurrency, leases), or `false` for an
   * engine that sends no deliveries (another instance on the same Postgres does). Default: on,
   * with the schedule of docs/api.md, Webhook delivery.
   */
  webhookDelivery?: DeliveryOptionsInput | false;
}

/** Lifecycle state of an engine. */
export type EngineState = 'created' | 'starting' | 'running' | 'stopping' | 'stopped';

/**
 * One Ferry engine: services over one storage, with its own plugins, clock and event bus.
 * Create it with {@link createEngine}, then `start()` it.
 */
export class Engine {
  /** Connectors: CRUD, checks. */
  readonly connectors: ConnectorsService;
  /** Pipelines: CRUD, state machine, runs. */
  readonly pipelines: PipelinesService;
  /** The per-pipeline event log and replay. */
  readonly events: EventsService;
  /** Webhook subscriptions and their deliveries. */
  readonly webhooks: WebhooksService;
  /** API keys. */
  readonly apiKeys: ApiKeysService;
  /** Events received for webhook source connectors (`POST /v2/ingest/{connector_id}`). */
  readonly ingest: IngestService;
  /** Workspaces. */
  readonly workspaces: WorkspacesService;
  /** Backfills: re-reads of what a pipeline's source holds (docs/api.md, Backfills). */
  readonly backfills: BackfillsService;
  /** Every platform event this engine records, after commit, as an RxJS stream. */
  readonly platformEvents$: Observable<PlatformEvent>;
  /** This instance's id as a lease holder. */
  readonly instanceId: string;
  /** Whether the host named this instance: then it may be a previous process's, whose leases it takes back. */
  private readonly instanceIdGiven: boolean;
  private readonly lag = new Map<string, number>();
  private readonly progress = new Map<string, BackfillProgress>();
  private readonly eventLog = new EventLogFeed();
  private readonly runFeed = new RunFeed();
  private readonly backfillFeed = new BackfillFeed();
  private readonly hooks: EngineHooks;
  // Its storage stays inside: Ferry's own packages and tests reach it through engineContext().
  private readonly storage: FerryStorage;
  /** The engine's clock. */
  readonly clock: Clock;
  /** The engine's logger. */
  readonly logger: Logger;

  private lifecycle: EngineState = 'created';
  private readonly inFlight = new Set<Promise<unknown>>();
  private stopping: Promise<void> | undefined;
  private readonly bus: PlatformEventBus;
  private readonly container: DependencyContainer;
  private readonly runtime: PipelineRuntime;
  private readonly delivery: WebhookDelivery;
  private readonly retention: RetentionJob;

  /** @internal Use {@link createEngine}. */
  constructor(options: EngineOptions) {
    this.logger = options.logger ?? silentLogger;
    // Every engine timer runs guarded: an error thrown in a callback is logged, never left to
    // end the process (and every other workspace's pipelines with it).
    this.clock = guardedClock(options.clock ?? systemClock, (error) =>
      this.logger.error({ err: error instanceof Error ? error.message : String(error) }, 'an engine timer callback failed'),
    );
    this.instanceId = options.instanceId ?? randomUUID();
    this.instanceIdGiven = options.instanceId !== undefined;
    if (options.secretKey === undefined && !options.storage.ephemeral) {
      throw new FerryError('configuration_invalid', 'secretKey is required: it encrypts connector and webhook secrets at rest.');
    }
    const box = new SecretBox(parseSecretKey(options.secretKey ?? generateSecretKey()));
    const registry = new PluginRegistry(options.plugins ?? [], builtinTransforms);
    this.storage = new FerryStorage(options.storage, { logger: this.logger });
    this.bus = new PlatformEventBus(this.logger);
    this.platformEvents$ = this.bus.events$;
    const context: EngineContext = {
      storage: this.storage,
      clock: this.clock,
      logger: this.logger,
      ids: new IdGenerator(this.clock),
      box,
      cursors: new CursorCodec(box.deriveKey('ferry/cursor/v1'), this.clock),
      registry,
      bus: this.bus,
      instanceId: this.instanceId,
      sourceLag: this.lag,
      backfills: this.progress,
      eventLog: this.eventLog,
      runFeed: this.runFeed,
      backfillFeed: this.backfillFeed,
      currentTransaction: new TransactionScope(),
      settings: {
        outboundAllow: options.outboundAllow ?? [],
        pipelineDefaults: { batch_size: 500, flush_interval_ms: 1000, max_attempts: 3, ...options.pipelineDefaults },
      },
      assertRunning: () => {
        if (this.lifecycle !== 'running' && this.lifecycle !== 'stopping') {
          throw new FerryError('unavailable', this.lifecycle === 'created' ? 'The engine is not started.' : 'The engine is shutting down.', { retryAfterSeconds: 5 });
        }
      },
    };
    contexts.set(this, context);
    // The workers first, from the context alone; then the services, each told of them through
    // its constructor (see EngineHooks).
    this.runtime = new PipelineRuntime(context, resolveRuntimeOptions(options.runtime));
    const outbound = new OutboundClient({ allow: context.settings.outboundAllow, clock: this.clock });
    this.delivery = new WebhookDelivery(context, outbound, resolveDeliveryOptions(options.webhookDelivery));
    // An engine that runs no pipelines deletes nothing, not even by default: those that run them do.
    this.retention = new RetentionJob(context, options.runtime === false ? RETENTION_OFF : resolveRetentionOptions(options.retention));
    this.hooks = {
      drain: (pipelineId) => this.runtime.drain(pipelineId),
      pipelineChanged: (pipelineId) => this.runtime.changed(pipelineId),
      replayRequested: () => this.runtime.replayRequested(),
      releaseSource: (row) => this.runtime.releaseSource(row),
      deliveriesDue: () => this.delivery.poke(),
    };
    this.container = createEngineContainer(context, this.hooks);
    this.connectors = this.guard(this.container.resolve(ConnectorsService));
    this.pipelines = this.guard(this.container.resolve(PipelinesService));
    this.events = this.guard(this.container.resolve(EventsService));
    this.webhooks = this.guard(this.container.resolve(WebhooksService));
    this.apiKeys = this.guard(this.container.resolve(ApiKeysService));
    this.workspaces = this.guard(this.container.resolve(WorkspacesService));
    this.ingest = this.guard(this.container.resolve(IngestService));
    this.backfills = this.guard(this.container.resolve(BackfillsService));
    idempotencies.set(this, this.guard(this.container.resolve(IdempotencyService)));
  }

  /**
   * The engine's boundary around a service: a call is refused unless the engine is running, and
   * an accepted call is tracked until it settles, so `stop()` lets it finish (its writes commit,
   * its events reach listeners, its trailing reads answer) before storage closes.
   */
  private guard<T extends object>(service: T): T {
    return new Proxy(service, {
      get: (target, property, receiver) => {
        const value = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        const isAsync = value.constructor.name === 'AsyncFunction';
        return (...args: unknown[]) => {
          if (this.lifecycle !== 'running') {
            const why = this.lifecycle === 'created' || this.lifecycle === 'starting' ? 'The engine is not started.' : 'The engine is shutting down.';
            const error = new FerryError('unavailable', why, { retryAfterSeconds: 5 });
            // An async method rejects, a plain one throws: the caller gets the error the way it expects.
            if (isAsync) return Promise.reject(error);
            throw error;
          }
          let result: unknown;
          try {
            result = (value as (...a: unknown[]) => unknown).apply(target, args);
          } catch (error) {
            throw translateStorageError(error);
          }
          if (result instanceof Promise) {
            // A storage outage reaches the caller as `unavailable` (503), not as a driver error.
            const settled = result.then(undefined, (error: unknown) => {
              throw translateStorageError(error);
            });
            this.inFlight.add(settled);
            const forget = () => this.inFlight.delete(settled);
            settled.then(forget, forget);
            return settled;
          }
          return result;
        };
      },
    });
  }

  /** Ends the leases a previous process with this instance id held (see `EngineOptions.instanceId`). */
  private async takeBackLeases(): Promise<void> {
    const repos = this.storage.repos;
    const now = this.clock.now();
    const ended = [
      await repos.leases.expireHeldBy(this.instanceId, now),
      await repos.runs.queue.expireHeldBy(this.instanceId, now),
      await repos.events.replays.expireHeldBy(this.instanceId, now),
      await repos.deliveries.queue.expireHeldBy(this.instanceId, now),
    ].reduce((a, b) => a + b, 0);
    if (ended > 0) this.logger.info({ instance_id: this.instanceId, leases: ended }, 'took back the leases this instance id held in a previous process');
  }

  /** Current lifecycle state. */
  get state(): EngineState {
    return this.lifecycle;
  }

  /** Applies migrations and starts the engine's work. Idempotent while running. */
  async start(): Promise<void> {
    if (this.lifecycle === 'running') return;
    if (this.lifecycle !== 'created') throw new FerryError('unavailable', `An engine cannot start from ${this.lifecycle}.`);
    this.lifecycle = 'starting';
    try {
      await this.storage.migrate();
    } catch (error) {
      this.lifecycle = 'created';
      throw error;
    }
    this.lifecycle = 'running';
    if (this.instanceIdGiven) await this.takeBackLeases();
    await recoverRotations(engineContext(this), this.hooks);
    await this.runtime.start();
    this.delivery.start();
    this.retention.start();
    this.logger.info({ storage: this.storage.description, instance_id: this.instanceId }, 'ferry engine started');
  }

  /**
   * Stops gracefully: refuses new work, lets every pipeline finish its batch in flight (streaming
   * pipelines release their leases, runs go back to the queue), lets the changes in flight commit
   * (and their events reach listeners), then closes storage. Idempotent; concurrent calls wait for the same stop.
   */
  async stop(): Promise<void> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  private async shutdown(): Promise<void> {
    this.lifecycle = 'stopping';
    await this.retention.stop();
    await this.runtime.stop();
    await Promise.allSettled([...this.inFlight]);
    // The sends in flight finish and their outcomes are recorded before storage closes; events
    // not fanned out yet stay in the outbox for the next start (or another engine).
    await this.delivery.stop();
    this.bus.close();
    this.container.clearInstances();
    await this.storage.close();
    this.lifecycle = 'stopped';
    this.logger.info({ instance_id: this.instanceId }, 'ferry engine stopped');
  }

  /**
   * A pipeline's event log as an RxJS stream: every event recorded so far (optionally only those
   * that occurred `since` a time, or of one `type`), in the listing's order, then each event as
   * this engine records it, live: a new one once its batch commits, a replayed one with its new
   * outcome. Ends with an error when the listing refuses (`not_found`, `unavailable`...), and
   * never on its own: unsubscribe to stop. Events that other engines sharing the storage record
   * appear in the listing, not in the live part.
   */
  events$(workspaceId: string, pipelineId: string, options: EventsStreamOptions = {}): Observable<EventRecord> {
    return eventsStream((params) => this.events.list(workspaceId, pipelineId, params), this.eventLog, workspaceId, pipelineId, options);
  }

  /**
   * A pipeline's runs as an RxJS stream: the runs it has, oldest first (only those created at or
   * after `since`, if given), then a new snapshot of a run each time this engine commits a change
   * of it: queued by the schedule or by `pipelines.triggerRun`, started, a batch counted, ended.
   * Completes when the pipeline is deleted; ends with an error when the pipeline does not exist
   * (`not_found`) or the replay's read fails. Unsubscribe to stop. Changes other engines sharing
   * the storage commit appear in the replay, not in the live part.
   */
  runs$(workspaceId: string, pipelineId: string, options: RunsStreamOptions = {}): Observable<Run> {
    return runsStream(engineContext(this), storedRuns(engineContext(this), workspaceId, pipelineId), pipelineId, workspaceId, options);
  }

  /**
   * A pipeline's backfills as an RxJS stream of their progress: each one it has (up to the 100
   * newest, oldest first), then a new snapshot each time this engine commits a change of one:
   * asked for, started, a batch of rows (at most once a second), ended, cancelled. The same as
   * `engine.backfills.changes$`. Unsubscribe to stop.
   */
  backfills$(workspaceId: string, pipelineId: string): Observable<Backfill> {
    return this.backfills.changes$(workspaceId, pipelineId);
  }

  /**
   * Whether the engine's database answers (`select 1`): for a host's health endpoint. False while
   * it does not, and once the engine stopped; never throws.
   */
  async ping(): Promise<boolean> {
    if (this.lifecycle === 'stopped') return false;
    return this.storage.ping();
  }

  /**
   * What each source this engine has open holds back in its system, in bytes, by pipeline id:
   * the last value the source reported (a change-capturing Postgres source: the WAL its slot
   * retains). Pipelines whose source reports nothing, or that run elsewhere, are absent.
   */
  sourceLag(): ReadonlyMap<string, number> {
    return new Map(this.lag);
  }

  /**
   * How far each backfill running in a source this engine has open has come, by pipeline id: the
   * source's last report, as of its last committed batch (its id, the table being read, rows
   * read, tables remaining), for metrics. Pipelines without a backfill under way, or that run
   * elsewhere, are absent. The records themselves are `engine.backfills`.
   */
  backfillProgress(): ReadonlyMap<string, { readonly id: string; readonly table: string; readonly rowsRead: number; readonly tablesRemaining: number }> {
    return new Map(this.progress);
  }

  /** Listens to one platform event type (or `*` for all), in process, after commit. */
  on<T extends PlatformEventType>(type: T | '*', listener: PlatformEventListener<T>): this {
    this.bus.on(type, listener);
    return this;
  }

  /** Like {@link on}, for the next event only. */
  once<T extends PlatformEventType>(type: T | '*', listener: PlatformEventListener<T>): this {
    this.bus.once(type, listener);
    return this;
  }

  /** Removes a listener added with {@link on} or {@link once}. */
  off<T extends PlatformEventType>(type: T | '*', listener: PlatformEventListener<T>): this {
    this.bus.off(type, listener);
    return this;
  }
}

/**
 * Creates an engine. Nothing touches storage until `start()`.
 *
 * @example
 * ```ts
 * const engine = await createEngine({ storage: sqliteStorage({ filename: 'ferry.db' }), secretKey: process.env.FERRY_SECRET_KEY });
 * await engine.start();
 * const connector = await engine.connectors.create('default', { type: 'postgres', direction: 'source', config: { ... } });
 * await engine.stop();
 * ```
 */
export async function createEngine(options: EngineOptions): Promise<Engine> {
  return new Engine(options);
}

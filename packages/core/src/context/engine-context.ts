import type { TransactionScope } from './transaction-scope.js';
import type { BackfillChanges, EventLogRecorder, RunChanges } from './feeds.js';
import { type Clock, type PlatformEvent, type PlatformEventType, FerryError, type IdGenerator, type Logger, type CursorCodec } from '../common/index.js';
import type { SecretBox } from '../crypto/index.js';
import type { PlatformEventBus } from './platform-event-bus.js';
import type { JsonObject, PluginRegistry } from '../plugin-api/index.js';
import type { FerryStorage, Repositories } from '../storage/index.js';

/** How far the backfill running in a source has come, from its last report (`reportBackfill`): for `/metrics`. */
export interface BackfillProgress {
  readonly id: string;
  /** The table being read: the first not read to its end. */
  readonly table: string;
  /** Rows handed over and committed so far, all tables. */
  readonly rowsRead: number;
  /** Tables not yet read to their end, the one being read included. */
  readonly tablesRemaining: number;
}

/** Settings the services read, resolved from the engine options. */
export interface ServiceSettings {
  /** Hosts (or `*`) webhook URLs may use plain http and private addresses for. */
  outboundAllow: readonly string[];
  /** Defaults of new pipelines. */
  pipelineDefaults: { batch_size: number; flush_interval_ms: number; max_attempts: number };
}

/** What every service of one engine shares. Private to the engine: plugins get typed contexts. */
export interface EngineContext {
  readonly storage: FerryStorage;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly ids: IdGenerator;
  readonly box: SecretBox;
  readonly cursors: CursorCodec;
  readonly registry: PluginRegistry;
  readonly bus: PlatformEventBus;
  readonly settings: ServiceSettings;
  /** Identifies this engine instance as a lease holder. */
  readonly instanceId: string;
  /** What each open source last reported it holds back, in bytes, by pipeline id. */
  readonly sourceLag: Map<string, number>;
  /** How far each open source's backfill has come, as it last reported, by pipeline id. */
  readonly backfills: Map<string, BackfillProgress>;
  /** The event-log entries this engine commits, for `engine.events$`. */
  readonly eventLog: EventLogRecorder;
  /** Changes of runs this engine commits, for `engine.runs$`. */
  readonly runFeed: RunChanges;
  /** Changes of backfills this engine commits, for `engine.backfills.changes$`. */
  readonly backfillFeed: BackfillChanges;
  /** The transaction the current async flow runs in, if any (see {@link transact}). */
  readonly currentTransaction: TransactionScope<OpenTransaction>;
  /**
   * Throws `unavailable` unless storage is open: the engine is running, or stopping while the
   * calls that started before the stop finish. New calls are refused at the engine's boundary.
   */
  assertRunning(): void;
}

/** A transaction in progress, as the code running inside it sees it. */
export interface OpenTransaction {
  repos: Repositories;
  emit: Emit;
  /** Called once the transaction committed, in order; dropped if it rolls back. */
  committed: (() => void)[];
}

/** Records a platform event inside the current transaction. */
export type Emit = (workspaceId: string, type: PlatformEventType, data: JsonObject) => PlatformEvent;

/**
 * Runs a state change and the platform events it causes in one transaction (the outbox rule:
 * an event exists if and only if its cause committed), then publishes them in process.
 *
 * Called while a transaction is already open in the same async flow (a runtime batch that
 * records a connector's health, say), it joins that transaction instead of opening another:
 * on SQLite's single connection a second one would wait forever for the first.
 */
export async function transact<T>(ctx: EngineContext, fn: (repos: Repositories, emit: Emit) => Promise<T>): Promise<T> {
  ctx.assertRunning();
  const outer = ctx.currentTransaction.getStore();
  if (outer) return fn(outer.repos, outer.emit);
  const recorded: PlatformEvent[] = [];
  const committed: (() => void)[] = [];
  const emit: Emit = (workspaceId, type, data) => {
    const event = newPlatformEvent(ctx, workspaceId, type, data);
    recorded.push(event);
    return event;
  };
  const result = await ctx.storage.transaction((repos) =>
    ctx.currentTransaction.run({ repos, emit, committed }, async () => {
      const value = await fn(repos, emit);
      // Written last, still inside the transaction: they commit or roll back with their cause.
      await repos.outbox.appendMany(recorded);
      return value;
    }),
  );
  ctx.bus.publish(recorded);
  for (const fn of committed) fn();
  return result;
}

/**
 * A platform event, not yet recorded: with its id and this moment's time. For a commit that
 * writes its own outbox rows (a pipeline batch's); everything else emits inside {@link transact}.
 */
export function newPlatformEvent(ctx: Pick<EngineContext, 'ids' | 'clock'>, workspaceId: string, type: PlatformEventType, data: JsonObject): PlatformEvent {
  return { id: ctx.ids.create('event'), type, occurred_at: new Date(ctx.clock.now()).toISOString(), data, workspace_id: workspaceId };
}

/**
 * Runs `fn` once what the current async flow changed is committed: at the end of the transaction
 * it runs in (not at all if that rolls back), or now outside one. For news published in process
 * (a run changed): a listener that reads it back must find it committed.
 */
export function afterCommit(ctx: Pick<EngineContext, 'currentTransaction'>, fn: () => void): void {
  const open = ctx.currentTransaction.getStore();
  if (open) open.committed.push(fn);
  else fn();
}

/** Repositories for reads: those of the transaction in progress in this flow, if any. */
export function reader(ctx: EngineContext): Repositories {
  ctx.assertRunning();
  return ctx.currentTransaction.getStore()?.repos ?? ctx.storage.repos;
}

/** The engine's time as ISO 8601. */
export function nowIso(ctx: Pick<EngineContext, 'clock'>): string {
  return new Date(ctx.clock.now()).toISOString();
}

const WORKSPACE_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/** Validates a workspace id (letters, digits, `_` and `-`, 1..64, not starting with a symbol). */
export function assertWorkspaceId(workspaceId: string): void {
  if (typeof workspaceId !== 'string' || !WORKSPACE_ID.test(workspaceId)) {
    throw new FerryError('validation_failed', 'Invalid workspace id.', {
      errors: [{ pointer: '/workspace', code: 'pattern', detail: 'A workspace id is 1 to 64 letters, digits, "_" or "-".' }],
    });
  }
}

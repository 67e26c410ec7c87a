import { randomUUID } from 'node:crypto';
import { FerryError, type PlatformEvent } from '../common/index.js';
import type { Checkpoint } from '../plugin-api/index.js';
import type { Fence } from './leases.js';
import { fencedCheckpointStep } from './repositories/checkpoints-repo.js';
import { deadLettersStep, unitSteps, unitsOf, type DeadLetterRow, type EventRow } from './repositories/events-repo.js';
import { outboxStep } from './repositories/outbox-repo.js';
import { pipelineMinuteStep, type MinuteCounts, type PipelineMinuteRow } from './repositories/pipeline-minutes-repo.js';
import { runCountsStep } from './repositories/runs-repo.js';
import type { SqliteWriterThread, WriterOrder, WriterStep } from './sqlite-writer-thread.js';
import type { Repositories } from './repositories.js';
import type { Knex } from 'knex';
import { batchCommitStatement, type Statement } from './batch-commit-statement.js';
import type { StorageDialect } from './dialect.js';
import { packUnitOffThread } from './unit-packer.js';

/** What one batch of a pipeline commits, all of it in one transaction. */
export interface BatchCommit {
  workspaceId: string;
  pipelineId: string;
  /** The run whose counters the batch adds to; null for a batch outside any run. */
  runId: string | null;
  /**
   * The lease that makes this engine the pipeline's only consumer. Checked with the checkpoint's
   * write: an engine that lost its lease while paused (a GC pause, a partition) must not move a
   * checkpoint another engine now owns.
   */
  fence: Fence;
  /** The batch's events and what became of them, their times spelled canonically. */
  events: readonly EventRow[];
  /** The dead letters among them, kept to be replayed from the stage that failed. */
  deadLetters: readonly DeadLetterRow[];
  /** The platform events the batch causes (`event.dead_lettered`), for the outbox. */
  notices: readonly PlatformEvent[];
  /** The source position after the batch. */
  checkpoint: Checkpoint;
  /** What the batch adds to its run's counters. */
  counts: MinuteCounts;
  /** What it adds to its pipeline's row of the commit minute; absent when it counts nothing. */
  minute?: PipelineMinuteRow;
  /** The commit's time, ISO 8601. */
  now: string;
}

/** What batch commits need of the storage: its writer thread, if any, its transactions, and for a server its statements. */
export interface BatchStorage {
  readonly writer: SqliteWriterThread | undefined;
  readonly knex: Knex;
  readonly dialect: StorageDialect;
  transaction<T>(fn: (repos: Repositories) => Promise<T>): Promise<T>;
}

/** Commits one batch in the place it took; called again to try again after a failure. */
export type QueuedCommit = (batch: BatchCommit) => Promise<void>;

/**
 * One pipeline's batch commits, in the order their places were taken: batch N + 1 commits only
 * after batch N did, and not at all when N failed. How is storage's business:
 *
 * - SQLite on a file commits on its writer thread (`SqliteWriterThread`), off the event loop. A
 *   batch whose place follows another's is sent to the thread at once: the thread runs it right
 *   after the one before, without waiting for the engine to hear of that one (see `WriterOrder`).
 * - Elsewhere (Postgres, SQLite in memory) a batch waits for the one before, then commits in a
 *   transaction on the engine's connection.
 *
 * Either way the batch's events are one unit of the event log (`event-units.ts`): a row, what
 * finds it by an event's id (the span of its ids' keys, or each key when they spread wide), and
 * a change row per dead letter; no statement per event of a stream.
 * A commit refused by its fence is `lease_lost`, and nothing of it is written.
 */
export class BatchCommits {
  /** The writer thread's chain of this pipeline's commits. */
  private chain: string;
  private next = 0;

  constructor(
    private readonly storage: BatchStorage,
    private readonly pipelineId: string,
  ) {
    this.chain = newChain(pipelineId);
  }

  /**
   * Takes the next place in the order. `after` is the commit of the batch before (undefined for
   * the first, or when the one before is known to be done): this batch commits once it succeeded,
   * and fails with its error, writing nothing, if it did not. Places are taken in batch order;
   * the commit itself may be called later, and again after a failure.
   */
  queue(after: Promise<unknown> | undefined): QueuedCommit {
    const writer = this.storage.writer;
    if (!writer) {
      return async (batch) => {
        // Packed before the place is reached: the unit's body does not depend on the batch before.
        const statement = this.storage.dialect.inProcess ? undefined : await oneStatement(batch);
        await after;
        if (statement === undefined) await this.commitInTransaction(batch);
        else if (this.storage.dialect.rows<{ fenced: number }>(await this.storage.knex.raw(statement.sql, statement.bindings))[0]?.fenced !== 1) throw leaseLost(batch.fence);
      };
    }
    let order: WriterOrder;
    if (after === undefined) {
      // Nothing to follow: a new chain, whose first transaction the thread runs whenever it comes.
      writer.endChain(this.chain);
      this.chain = newChain(this.pipelineId);
      this.next = 1;
      order = { chain: this.chain, seq: 0, after: Promise.resolve() };
    } else {
      // Refused by the thread until the one before committed; fails (and is never run) if that one fails.
      const settled = after.then(() => undefined);
      settled.catch(() => undefined);
      order = { chain: this.chain, seq: this.next++, after: settled };
    }
    return (batch) => this.commitOnThread(writer, batch, order);
  }

  /** Forgets this pipeline's chain (its flow ended): the writer thread keeps one number per chain until then. */
  close(): void {
    this.storage.writer?.endChain(this.chain);
  }

  private async commitOnThread(writer: SqliteWriterThread, batch: BatchCommit, order: WriterOrder): Promise<void> {
    // The unit's steps first: their statements find the unit by last_insert_rowid().
    const steps: WriterStep[] = unitsOf(batch.events, { canonicalTimes: true }).flatMap(unitSteps);
    if (batch.deadLetters.length > 0) steps.push(deadLettersStep(batch.deadLetters));
    // The fence is checked with the checkpoint's write: whatever was written before it rolls back
    // with the transaction when the lease is gone.
    steps.push(fencedCheckpointStep(batch.pipelineId, batch.checkpoint, batch.runId, batch.now, batch.fence));
    if (batch.runId) steps.push(runCountsStep(batch.runId, batch.counts));
    if (batch.minute) steps.push(pipelineMinuteStep(batch.minute));
    // Written last, still inside the transaction: they commit or roll back with their cause.
    if (batch.notices.length > 0) steps.push(outboxStep(batch.notices));
    const outcome = await writer.transaction(steps, order);
    if (!outcome.committed) throw leaseLost(batch.fence);
  }

  private async commitInTransaction(batch: BatchCommit): Promise<void> {
    await this.storage.transaction(async (repos) => {
      await repos.events.append(batch.events, { canonicalTimes: true });
      for (const letter of batch.deadLetters) await repos.events.putDeadLetter(letter);
      if (!(await repos.checkpoints.putFenced(batch.pipelineId, batch.checkpoint, batch.runId, batch.now, batch.fence))) throw leaseLost(batch.fence);
      if (batch.runId) await repos.runs.addCounts(batch.runId, batch.counts);
      if (batch.minute) await repos.pipelineMinutes.add(batch.minute);
      await repos.outbox.appendMany(batch.notices);
    });
  }
}

/**
 * The batch's commit as one statement (`batch-commit-statement.ts`), its unit packed; undefined
 * for a batch that needs a transaction of several (dead letters, change rows, platform events).
 */
async function oneStatement(batch: BatchCommit): Promise<Statement | undefined> {
  if (batch.deadLetters.length > 0 || batch.notices.length > 0) return undefined;
  const units = unitsOf(batch.events, { canonicalTimes: true });
  const unit = units[0];
  if (units.length > 1 || (unit !== undefined && unit.changes.length > 0)) return undefined;
  return batchCommitStatement(batch, unit, unit === undefined ? undefined : await packUnitOffThread(unit.unit));
}

function leaseLost(fence: Fence): FerryError {
  return new FerryError('lease_lost', `The lease ${fence.name} was taken over; the batch is not committed.`);
}

/** A chain id no other flow has. */
function newChain(pipelineId: string): string {
  return `${pipelineId}:${randomUUID()}`;
}

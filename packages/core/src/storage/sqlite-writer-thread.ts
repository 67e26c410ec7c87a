import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { retryWhileBusy, type SqliteLockWait } from './sqlite-lock-wait.js';
import { PACK_UNIT_SOURCE } from './event-units.js';

/** Where a {@link SqliteWriterThread} writes: the database file, and how long a write waits for its lock. */
export interface SqliteWriterConfig {
  filename: string;
  wait: SqliteLockWait;
}

/** A value a SQLite statement binds. */
export type SqlValue = string | number | null;

/**
 * One statement of a {@link SqliteWriterThread} transaction, run `rows` times. Its parameters
 * are `shared`, except those at the `varying` positions, which `values` holds row after row
 * (`rows * varying.length` of them). A batch's event-log rows share their workspace, pipeline and
 * times: sending those once takes half the values off the copy to the thread, which is paid on
 * the engine's event loop (structured cloning costs about 0.1 µs per value).
 */
export interface WriterStep {
  sql: string;
  rows: number;
  shared: readonly SqlValue[];
  varying: readonly number[];
  values: readonly SqlValue[];
  /** The transaction is rolled back when the step changes (or returns) no row: a fence that no longer holds. */
  mustChange?: boolean;
  /**
   * An event-log unit's body, bound at `at` once the thread has compressed and packed its blocks
   * as `event-units.ts` (`packUnit`) does: on the thread's core rather than the engine's.
   */
  pack?: { at: number; blocks: readonly string[]; count: number; size: number; ranges?: Array<[string, string]> };
}

/** A step run once, with these parameters. */
export function singleStep(sql: string, params: readonly SqlValue[], options: { mustChange?: boolean } = {}): WriterStep {
  return { sql, rows: 1, shared: params, varying: [], values: [], ...options };
}

/**
 * Transactions that must commit in order, none after one that did not: a pipeline's batches.
 * Each is sent as soon as it is ready, before the one before it has committed, so the thread
 * goes from one to the next without waiting for the engine to hear of the first (on a busy
 * event loop, a few ms per batch of the thread's time). The thread runs transaction `seq` of
 * `chain` only right after `seq - 1` committed; otherwise it refuses it, and the sender waits
 * for `after` (the previous one's outcome as the sender knows it) and sends it again, or fails
 * with `after`'s error.
 */
export interface WriterOrder {
  chain: string;
  seq: number;
  after: Promise<unknown>;
}

/** What a writer transaction did: rows changed per step, or the step whose fence failed (nothing committed). */
export type WriterOutcome = { committed: true; changes: number[] } | { committed: false; unchanged: number };

/**
 * The thread's code, plain CommonJS run with `eval`: a file of its own would need a loader for
 * TypeScript in development and in tests, and a place in every build. It opens its own
 * connection to the database file and runs each transaction it is sent, `BEGIN IMMEDIATE` to
 * `COMMIT`, with no wait for a lock held elsewhere (`SQLITE_BUSY` goes back at once, and the
 * sender waits on its clock, like every write of the engine).
 */
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.filename);
db.pragma('busy_timeout = 0');
db.pragma('foreign_keys = ON');
db.pragma('synchronous = NORMAL');
// Prepared statements by SQL, the most recent 64.
const statements = new Map();
// Per chain, the sequence number the next transaction must have: the one after the last that
// committed, or the one that last failed (so the ones after it wait for it).
const chains = new Map();
${PACK_UNIT_SOURCE}
function prepared(sql) {
  let s = statements.get(sql);
  if (!s) {
    s = db.prepare(sql);
    if (statements.size >= 64) statements.delete(statements.keys().next().value);
    statements.set(sql, s);
  }
  return s;
}
function run(message) {
  const chain = message.chain;
  if (chain !== undefined) {
    // A chain the thread has not seen starts at 0: its first transaction may be sent after the second.
    const expected = chains.has(chain) ? chains.get(chain) : 0;
    if (expected !== message.seq) return { id: message.id, outOfOrder: true };
    chains.set(chain, message.seq);
  }
  db.exec('BEGIN IMMEDIATE');
  try {
    const changes = [];
    for (let k = 0; k < message.steps.length; k++) {
      const step = message.steps[k];
      const statement = prepared(step.sql);
      const row = step.shared.slice();
      if (step.pack !== undefined) row[step.pack.at] = packUnit(step.pack);
      const varying = step.varying;
      const values = step.values;
      let at = 0;
      let changed = 0;
      for (let r = 0; r < step.rows; r++) {
        for (let c = 0; c < varying.length; c++) row[varying[c]] = values[at++];
        changed += statement.reader ? statement.all(row).length : statement.run(row).changes;
      }
      if (step.mustChange && changed === 0) {
        db.exec('ROLLBACK');
        return { id: message.id, unchanged: k };
      }
      changes.push(changed);
    }
    db.exec('COMMIT');
    if (chain !== undefined) chains.set(chain, message.seq + 1);
    return { id: message.id, changes };
  } catch (error) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw error;
  }
}
parentPort.on('message', (message) => {
  if (message.endChain !== undefined) {
    chains.delete(message.endChain);
    return;
  }
  let answer;
  try {
    answer = run(message);
  } catch (error) {
    answer = { id: message.id, error: { code: error && error.code, message: String(error && error.message) } };
  }
  parentPort.postMessage(answer);
});
`;

type Answer =
  | { id: number; changes: number[] }
  | { id: number; unchanged: number }
  | { id: number; outOfOrder: true }
  | { id: number; error: { code?: string; message: string } };

/** An error the writer thread answered with, carrying SQLite's code (`SQLITE_BUSY`, `SQLITE_CONSTRAINT_PRIMARYKEY`...). */
export class WriterThreadError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
    this.name = 'WriterThreadError';
  }
}

/**
 * Commits transactions on a thread of its own, with its own connection to a SQLite file.
 *
 * better-sqlite3 runs every statement synchronously, so on the engine's connection a batch's
 * commit (a thousand event-log rows: about 10 ms) stops the event loop: the next batch waits for
 * it, and so does every HTTP request. On this thread the commit runs while the engine prepares
 * the next batch, on a second core. To SQLite the thread is one more connection, like another
 * process sharing the file: WAL lets the engine read meanwhile, and the write lock is taken with
 * `BEGIN IMMEDIATE` and waited for on the engine's clock (`SqliteLockWait`).
 *
 * The thread starts with the first transaction, and holds the process open only while one runs.
 */
export class SqliteWriterThread {
  private worker: Worker | undefined;
  private nextId = 0;
  private readonly pending = new Map<number, { resolve(answer: Answer): void; reject(error: unknown): void }>();
  private readonly inflight = new Set<Promise<unknown>>();
  private closed = false;

  constructor(private readonly config: SqliteWriterConfig) {}

  /**
   * Runs `steps` in one transaction on the thread, waiting for the write lock
   * another connection holds as the storage's lock wait allows. Rejects with a
   * {@link WriterThreadError} (nothing committed) when a statement fails.
   */
  async transaction(steps: readonly WriterStep[], order?: WriterOrder): Promise<WriterOutcome> {
    if (this.closed) throw new WriterThreadError('The storage is closed.', 'FERRY_CLOSED');
    const running = this.run(steps, order);
    this.inflight.add(running);
    try {
      return await running;
    } finally {
      this.inflight.delete(running);
    }
  }

  /** Forgets a chain's place (its flow ended): the thread keeps one number per chain until then. */
  endChain(chain: string): void {
    this.worker?.postMessage({ endChain: chain });
  }

  private async run(steps: readonly WriterStep[], order: WriterOrder | undefined): Promise<WriterOutcome> {
    let waited = false;
    for (;;) {
      const answer = await retryWhileBusy(this.config.wait, () => this.send(steps, order));
      if ('changes' in answer) return { committed: true, changes: answer.changes };
      if ('unchanged' in answer) return { committed: false, unchanged: answer.unchanged };
      // The one before it has not committed: once it has, this one goes again (and fails with it if it failed).
      if (waited) throw new WriterThreadError(`Transaction ${order!.seq} of ${order!.chain} was refused out of order after the one before it committed.`, 'FERRY_OUT_OF_ORDER');
      await order!.after;
      waited = true;
    }
  }

  /** Lets the transactions in flight finish, then ends the thread. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([...this.inflight]);
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }

  private send(steps: readonly WriterStep[], order: WriterOrder | undefined): Promise<Exclude<Answer, { error: unknown }>> {
    const worker = this.thread();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, {
        resolve: (answer) => {
          if ('error' in answer) reject(new WriterThreadError(answer.error.message, answer.error.code));
          else resolve(answer);
        },
        reject,
      });
      worker.ref();
      worker.postMessage(order ? { id, steps, chain: order.chain, seq: order.seq } : { id, steps });
    });
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(THREAD_SOURCE, { eval: true, workerData: { driver: driverPath(), filename: this.config.filename } });
    worker.unref();
    worker.on('message', (answer: Answer) => {
      const waiting = this.pending.get(answer.id);
      this.pending.delete(answer.id);
      if (this.pending.size === 0) worker.unref();
      waiting?.resolve(answer);
    });
    // The thread died (it could not open the file, or ran out of memory): what it held fails,
    // nothing of it was committed, and the next transaction starts a new thread.
    const fail = (error: unknown) => {
      if (this.worker === worker) this.worker = undefined;
      const waiting = [...this.pending.values()];
      this.pending.clear();
      for (const w of waiting) w.reject(error);
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new WriterThreadError(`The SQLite writer thread exited (code ${code}).`, 'FERRY_THREAD_EXIT')));
    this.worker = worker;
    return worker;
  }
}

let driver: string | undefined;

/** Where better-sqlite3 is installed, for the thread to load it by path (it has no resolution of its own from `eval` code). */
function driverPath(): string {
  driver ??= createRequire(import.meta.url).resolve('better-sqlite3');
  return driver;
}

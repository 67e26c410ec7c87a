import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { retryWhileBusy, type SqliteLockWait } from './sqlite-lock-wait.js';

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
}

/** A step run once, with these parameters. */
export function singleStep(sql: string, params: readonly SqlValue[], options: { mustChange?: boolean } = {}): WriterStep {
  return { sql, rows: 1, shared: params, varying: [], values: [], ...options };
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
const statements = new Map();
function prepared(sql) {
  let s = statements.get(sql);
  if (!s) { s = db.prepare(sql); statements.set(sql, s); }
  return s;
}
function run(message) {
  db.exec('BEGIN IMMEDIATE');
  try {
    const changes = [];
    for (let k = 0; k < message.steps.length; k++) {
      const step = message.steps[k];
      const statement = prepared(step.sql);
      const row = step.shared.slice();
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
    return { id: message.id, changes };
  } catch (error) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw error;
  }
}
parentPort.on('message', (message) => {
  let answer;
  try {
    answer = run(message);
  } catch (error) {
    answer = { id: message.id, error: { code: error && error.code, message: String(error && error.message) } };
  }
  parentPort.postMessage(answer);
});
`;

type Answer = { id: number; changes: number[] } | { id: number; unchanged: number } | { id: number; error: { code?: string; message: string } };

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
  async transaction(steps: readonly WriterStep[]): Promise<WriterOutcome> {
    if (this.closed) throw new WriterThreadError('The storage is closed.', 'FERRY_CLOSED');
    const running = retryWhileBusy(this.config.wait, () => this.send(steps));
    this.inflight.add(running);
    try {
      const answer = await running;
      return 'changes' in answer ? { committed: true, changes: answer.changes } : { committed: false, unchanged: answer.unchanged };
    } finally {
      this.inflight.delete(running);
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

  private send(steps: readonly WriterStep[]): Promise<Answer & ({ changes: number[] } | { unchanged: number })> {
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
      worker.postMessage({ id, steps });
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

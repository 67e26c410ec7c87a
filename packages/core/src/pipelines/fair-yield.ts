/** Whether the flow's last step gave the event loop a turn itself, or left it to a wait. */
type YieldState = 'yielded' | 'skipped';

/**
 * When a pull flow lets timers and I/O run between its batches.
 *
 * On SQLite every query settles at once, so a backlog would otherwise go from batch to batch in
 * promise continuations alone, starving the lease's heartbeat (the lease expires, the stream
 * restarts and sends a batch twice) and any HTTP server in the same process. A step that waited
 * for its previous batch's commit (on the SQLite writer thread, on Postgres) let them run while it
 * waited, so every other such step goes on at once.
 *
 * Measured with 40 API clients (bench/fairness, writer thread): a yield at every step left the
 * pipeline 0.43 to 0.50 of its unloaded throughput, API p99 46 to 57 ms; none after a wait 0.73
 * to 0.77, p99 143 to 283 ms; every other one 0.48 to 0.63, p99 57 to 68 ms (the unloaded figure
 * moves by a quarter between runs; loaded it rose by about 30 %).
 */
export class FairYield {
  private last: YieldState = 'yielded';
  private waited = false;

  /** At the start of a step: yields to timers and I/O, unless the step before waited and the one before it did not skip. */
  async beforeStep(): Promise<void> {
    if (this.waited && this.last === 'yielded') {
      this.last = 'skipped';
    } else {
      this.last = 'yielded';
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    this.waited = false;
  }

  /** The step waited for a commit that was still running: timers and I/O ran meanwhile. */
  waitedForCommit(): void {
    this.waited = true;
  }
}

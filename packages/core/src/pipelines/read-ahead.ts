import type { Checkpoint, PullSource, SourceBatch } from '../plugin-api/index.js';

/**
 * The read of a pull source's next batch, started while the batch just read goes through the
 * steps and the destination, so the source's round trip is not on the path of every batch
 * (measured with bench/postgres: the read was a third of the time per batch). One batch ahead
 * at most.
 */
export class ReadAhead {
  private ahead: { reader: PullSource; from: string; max: number; promise: Promise<SourceBatch> } | undefined;

  /**
   * Starts reading up to `max` records after `from`; `onRead` is told of the batch once it is
   * read (to prepare it while the batch before is written).
   */
  start(reader: PullSource, from: Checkpoint, max: number, signal: AbortSignal, onRead?: (batch: SourceBatch) => void): void {
    const promise = reader.read(from, max, signal);
    if (onRead) promise.then(onRead, () => undefined);
    // Not awaited until the next step, which may never come (a pause, a stop): no unhandled rejection.
    promise.catch(() => undefined);
    this.ahead = { reader, from: JSON.stringify(from ?? null), max, promise };
  }

  /** The read started ahead, if it was of the same source, from the same position, for the same size; it is handed out once. */
  take(reader: PullSource, from: Checkpoint | null, max: number): Promise<SourceBatch> | undefined {
    const ahead = this.ahead;
    this.ahead = undefined;
    if (!ahead || ahead.reader !== reader || ahead.max !== max || ahead.from !== JSON.stringify(from ?? null)) return undefined;
    return ahead.promise;
  }

  /** Drops the read started ahead, if any, once it settled: nothing may read from a source being closed. */
  async drop(): Promise<void> {
    const ahead = this.ahead;
    this.ahead = undefined;
    await ahead?.promise.catch(() => undefined);
  }
}

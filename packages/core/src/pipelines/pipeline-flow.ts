import { performance } from 'node:perf_hooks';
import { failSpan, inSpan, sleep, isFerryError, spanContext, startSpan, type Span, type SpanFailure, type TraceContext } from '../common/index.js';
import type { EngineContext } from '../context/index.js';
import type { Checkpoint, PullSource, PushSource, SourceBatch } from '../plugin-api/index.js';
import type { Fence, PipelineRow } from '../storage/index.js';
import { backoffDelay, MAX_BACKOFF_ATTEMPT } from '../queue/index.js';
import { BatchCommitter, countResults, type BatchCounts } from './batch-commit.js';
import { processItems, type ItemResult } from './event-processor.js';
import { toWorkItems } from './source-records.js';
import { FlowError, toFlowError } from './flow-error.js';
import { compileSteps, connectorVersion, HealthReporter, openConnections, type PipelineConnections, type PipelineSide } from './pipeline-connections.js';
import type { TransformChain } from './transform-chain.js';
import type { RuntimeOptions } from './runtime-options.js';

/** Why a flow ended without an error. */
export type FlowEnd =
  /** The source had nothing more (runs of scheduled pipelines). */
  | 'caught_up'
  /** The pipeline is no longer active (paused, deleting, gone). */
  | 'inactive'
  /** The owner asked it to stop (engine shutdown, lease lost). */
  | 'stopped';

/** How a flow runs and whom it tells. */
export interface FlowSpec {
  pipelineId: string;
  /** The lease that makes this engine the pipeline's only consumer; every commit checks it. */
  fence: Fence;
  /**
   * `until_caught_up`: a run of a scheduled pipeline; ends when the source is drained, and a
   * failure that outlasts the retry budget ends it with the error. `continuous`: a streaming
   * pipeline; retries for as long as it takes and reports a long failure through `onFailing`.
   */
  mode: 'until_caught_up' | 'continuous';
  /** The run whose counters the batches add to (looked up at each commit: a streaming pipeline changes runs). */
  runId(): string | null;
  /** A streaming pipeline failed for long (or for a reason no retry fixes); it keeps trying. */
  onFailing?(error: FlowError): Promise<void>;
  /** The first success after {@link onFailing}. */
  onRecovered?(): Promise<void>;
}

/** What a flow needs from the engine. */
export interface FlowDeps {
  ctx: EngineContext;
  options: RuntimeOptions;
}

class Stop extends Error {}

/**
 * One pipeline's events moving under a lease this engine holds: source batches through the
 * transform steps to the destination, each batch's event-log rows and checkpoint committed in
 * one transaction after the destination acknowledged it.
 *
 * The flow is plain async code, one batch after another: {@link run} resolves with how the flow
 * ended. (The engine's streams, `platformEvents$`, `events$` and `runs$`, are fed by what the
 * flow commits; none drives it.) Backpressure both ways: a pull source is read in a loop, one
 * batch ahead of the destination, while the batch before commits; a push source's handler
 * resolves only after its batch committed, which is what lets it take more (a source may hand
 * over one more batch meanwhile, written while the one before commits). At most three batches
 * are in memory, plus what a push source holds itself.
 *
 * Stopping is graceful: {@link stop} lets the batch in flight commit, cuts short any backoff
 * wait, and ends the flow with `stopped`.
 */
export class PipelineFlow {
  private readonly stopper = new AbortController();
  /** Aborted only when the batch in flight must be given up (lease lost). */
  private readonly hard = new AbortController();
  private dirty = true;
  /** Aborted (and replaced) by {@link poke}: ends the current idle or backoff wait early. */
  private wake = new AbortController();
  /** Set while a push source is consumed: it has no wait to cut short, so a poke checks the state itself. */
  private onPoke: (() => void) | undefined;
  private stepsKey = '';
  private chain: TransformChain | undefined;
  private reopenNeeded = false;
  private row!: PipelineRow;
  private conns: PipelineConnections | undefined;
  /** The last committed position. */
  private checkpoint: Checkpoint | null = null;
  /** The position after the last batch the destination took (a pull source reads from here). */
  private position: Checkpoint | null = null;
  /** The read of the next batch, started while the current one is written (pull sources). */
  private ahead: { reader: PullSource; from: string; max: number; promise: Promise<SourceBatch> } | undefined;
  /** The commit of the last batch written, while it runs. */
  private pending: Promise<void> | undefined;
  /** Commits that have settled: whether a step's wait for the one before it was a wait at all. */
  private readonly settledCommits = new WeakSet<Promise<void>>();
  /** Whether the last pull step waited for its previous batch's commit (see {@link pullOnce}). */
  private waitedForCommit = false;
  /** Whether the last pull step went on without yielding, having waited for a commit. */
  private skippedYield = false;
  private health: HealthReporter;
  /**
   * Failures in a row, per lane: the batch being prepared (`fore`) and the commit running behind
   * it (`back`) fail and retry at the same time, and each keeps its own count, so neither doubles
   * the other's budget or backoff, and a success of one does not end the other's outage.
   */
  private readonly fore: Lane = { failures: 0 };
  private readonly back: Lane = { failures: 0 };
  private failing = false;
  /** `onFailing` and `onRecovered`, one after the other: a run is never started and ended at once. */
  private announcing: Promise<unknown> = Promise.resolve();
  /** A commit running behind has failed: the batch being prepared must not go on. */
  private commitFailed: unknown;
  /** This flow's batch commits, in batch order. */
  private readonly commits: BatchCommitter;
  /** How the flow ends: set along the way, final once {@link run} resolved. */
  end: FlowEnd = 'stopped';

  constructor(
    private readonly deps: FlowDeps,
    private readonly spec: FlowSpec,
  ) {
    this.health = new HealthReporter(deps.ctx, deps.options.downAfterAttempts);
    this.commits = new BatchCommitter(deps.ctx, spec.pipelineId);
  }

  /**
   * Something about the pipeline or its connectors changed: read them again before the next
   * batch, and (with `wake`) cut short an idle or backoff wait so a pause or a fix takes effect now.
   */
  poke(wake = true): void {
    this.dirty = true;
    if (!wake) return;
    this.onPoke?.();
    const waking = this.wake;
    this.wake = new AbortController();
    waking.abort();
  }

  /** Asks the flow to stop after the batch in flight. */
  stop(): void {
    this.stopper.abort(new Stop('stopped'));
  }

  /** Gives up the batch in flight too (the lease is gone: committing it would be refused anyway). */
  abort(): void {
    this.stop();
    this.hard.abort(new Stop('lease lost'));
  }

  /**
   * Moves batches until the flow ends, and resolves with how it ended (see {@link FlowEnd}), its
   * connectors closed and its last commit settled. Rejects with a {@link FlowError} when a run's
   * failure outlasts its retry budget; a continuous flow retries for as long as it takes.
   */
  async run(): Promise<FlowEnd> {
    let end: FlowEnd;
    try {
      if (!(await this.refresh())) {
        end = 'inactive';
      } else {
        this.checkpoint = await this.deps.ctx.storage.repos.checkpoints.get(this.spec.pipelineId);
        this.position = this.checkpoint;
        end = 'read' in this.conns!.reader! ? await this.pullLoop() : await this.consumePush();
      }
    } catch (error) {
      if (error instanceof Stop) end = this.end === 'inactive' ? 'inactive' : 'stopped';
      else if (this.stopper.signal.aborted && !(error instanceof FlowError)) end = 'stopped';
      else {
        await this.close();
        throw error;
      }
    }
    this.end = end;
    await this.close();
    return end;
  }

  private async close(): Promise<void> {
    // A commit still running settles first: the run is ended (and counted) after its last batch.
    await this.pending?.catch(() => undefined);
    await this.dropReadAhead();
    const conns = this.conns;
    this.conns = undefined;
    await conns?.close();
    this.commits.close();
  }

  /**
   * Reads the pipeline again (every batch: a pause or an edit made on another engine is seen at
   * the next batch), and its connectors when something says they changed; opens again the side
   * whose connector did. False when the pipeline is no longer active or the flow was asked to
   * stop. With `reopen: false` (inside a push source's handler, which must not close the source
   * it runs in) a changed source only sets {@link reopenNeeded}; a changed destination is
   * opened again at once either way.
   */
  private async refresh(reopen = true): Promise<boolean> {
    if (this.stopper.signal.aborted) return false;
    const row = await this.retrying('storage', () => this.deps.ctx.storage.repos.pipelines.getAnyWorkspace(this.spec.pipelineId));
    if (!row || row.state !== 'active') return false;
    await this.retrying('storage', async () => this.adopt(row));
    if (!this.dirty && this.conns) return !this.stopper.signal.aborted;
    this.dirty = false;
    await this.retrying('source', async () => {
      if (!this.conns) {
        this.conns = await openConnections(this.deps.ctx, row, { withSource: true, signal: this.hard.signal });
        return;
      }
      if (await this.changed('destination')) await this.conns.reopen('destination');
      if (await this.changed('source')) {
        if (reopen) await this.reopenSource();
        else this.reopenNeeded = true;
      }
    });
    this.health.observe(this.conns!.source);
    this.health.observe(this.conns!.destination);
    return !this.stopper.signal.aborted;
  }

  /** Takes a pipeline row as the flow's settings: its steps are compiled again when they changed. */
  private adopt(row: PipelineRow): void {
    this.row = row;
    const stepsKey = JSON.stringify(row.transforms);
    if (stepsKey !== this.stepsKey || !this.chain) {
      this.chain = compileSteps(this.deps.ctx, row);
      this.stepsKey = stepsKey;
    }
  }

  /** Whether `side`'s connector changed since it was opened (a config update, a secret, a rotation). */
  private async changed(side: PipelineSide): Promise<boolean> {
    const row = this.row;
    const id = side === 'source' ? row.source_connector_id : row.destination_connector_id;
    return connectorVersion(await this.deps.ctx.storage.repos.connectors.get(row.workspace_id, id)) !== this.conns!.versions[side];
  }

  /** Opens the source again; a read started ahead on the old one is dropped first. */
  private async reopenSource(): Promise<void> {
    await this.dropReadAhead();
    await this.conns!.reopen('source');
  }

  /**
   * Before another attempt at a batch that is held: the pipeline's latest settings (steps,
   * batch size, attempts) and `side`'s connector, opened again when it changed, so that a fix
   * made while the batch waits (a PATCH of the destination's url, a new password, a rotation, a
   * corrected step) is what the next attempt uses. A pipeline that is no longer active ends the
   * flow; storage that cannot answer is a failure of its own, retried like any other.
   */
  private async refreshForRetry(side: PipelineSide): Promise<void> {
    let changed: boolean;
    try {
      const row = await this.deps.ctx.storage.repos.pipelines.getAnyWorkspace(this.spec.pipelineId);
      if (!row || row.state !== 'active') {
        this.end = 'inactive';
        throw new Stop('inactive');
      }
      this.adopt(row);
      changed = await this.changed(side);
    } catch (error) {
      throw error instanceof Stop || error instanceof FlowError ? error : storageFlowError(error);
    }
    if (!changed) return;
    if (side === 'source') await this.reopenSource();
    else await this.conns!.reopen('destination');
    this.health.observe(this.conns![side]);
  }

  /** Drops the read started ahead, if any, once it settled: nothing may read from a source being closed. */
  private async dropReadAhead(): Promise<void> {
    const ahead = this.ahead;
    this.ahead = undefined;
    await ahead?.promise.catch(() => undefined);
  }

  /** A pull source, read batch after batch until the flow ends. */
  private async pullLoop(): Promise<FlowEnd> {
    while (await this.pullOnce());
    return this.end;
  }

  /**
   * One step of a pull source: take the batch after the last one the destination took (read
   * ahead during the previous step, or read now), start reading the one after it, take the
   * batch through the steps and the destination, and hand its commit over to run while the next
   * step goes on. Commits run one at a time and in order; the step waits for the previous
   * batch's commit, so at most one written batch waits for its commit and one is read ahead
   * (three batches in memory). The source, the destination and the storage each work while the
   * engine prepares another batch. False when the flow ends (with {@link end} set).
   */
  private async pullOnce(): Promise<boolean> {
    // Let timers and I/O run between batches. On SQLite every query settles at once, so a backlog
    // would otherwise go from batch to batch in promise continuations alone, starving the lease's
    // heartbeat (the lease expires, the stream restarts and sends a batch twice) and any HTTP
    // server in the same process. A step that waited for its previous batch's commit (on the
    // SQLite writer thread, on Postgres) let them run while it waited, so every other such step
    // goes on at once. Measured with 40 API clients (bench/fairness, writer thread): a yield at
    // every step left the pipeline 0.43 to 0.50 of its unloaded throughput, API p99 46 to 57 ms;
    // none after a wait 0.73 to 0.77, p99 143 to 283 ms; every other one 0.48 to 0.63, p99 57 to
    // 68 ms (the unloaded figure moves by a quarter between runs; loaded it rose by about 30 %).
    if (this.waitedForCommit && !this.skippedYield) {
      this.skippedYield = true;
    } else {
      this.skippedYield = false;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    this.waitedForCommit = false;
    if (!(await this.refresh())) {
      // What the destination already took is committed before the flow ends: nothing is sent twice.
      await this.flush();
      this.end = this.stopper.signal.aborted ? 'stopped' : 'inactive';
      return false;
    }
    const from = this.position;
    // The read started while the previous batch was being written, when it still fits.
    let early = this.takeReadAhead(this.conns!.reader as PullSource, from);
    const readStarted = performance.now();
    let attempt = 0;
    const batch = await this.retrying('source', async () => {
      // A retry reads with what may have fixed the failure: the source's new settings, the new batch size.
      if (attempt++ > 0) await this.refreshForRetry('source');
      const read = early ?? (this.conns!.reader as PullSource).read(from, this.row.batch_size, this.hard.signal);
      early = undefined; // a failed read-ahead counts as a failure; the retry reads afresh
      return read;
    });
    if (batch.records.length > 0) this.readAhead(this.conns!.reader as PullSource, batch.checkpoint);
    if (batch.records.length === 0) {
      await this.flush();
      // Caught up. A source may still move its position (past an empty object, say): keep it.
      const moved = JSON.stringify(batch.checkpoint ?? null) !== JSON.stringify(from ?? null);
      if (moved) {
        await this.commit([], batch.checkpoint, 0);
        this.position = batch.checkpoint;
      }
      await this.progressed();
      if (this.spec.mode === 'until_caught_up') {
        this.end = 'caught_up';
        return false;
      }
      try {
        await sleep(this.deps.ctx.clock, this.row.flush_interval_ms, AbortSignal.any([this.stopper.signal, this.wake.signal]));
      } catch {
        if (this.stopper.signal.aborted) {
          this.end = 'stopped';
          return false;
        }
      }
      return true;
    }
    const span = this.startBatchSpan(this.row, batch.records.length, readStarted);
    let results: ItemResult[];
    let row: PipelineRow;
    try {
      results = await this.process(batch, spanContext(span));
      // The settings the batch was written with: a held batch may have picked up newer ones.
      row = this.row;
    } catch (error) {
      endBatchSpan(span, undefined, error);
      throw error;
    }
    const previous = this.pending;
    // This commit starts only after the previous one succeeded, and not at all if it failed.
    const commit = this.commit(results, batch.checkpoint, batch.records.length, row, this.back, previous, span);
    // Awaited by the next step or by flush(); until then its failure stops the batch being prepared.
    commit.then(
      () => this.settledCommits.add(commit),
      (error: unknown) => {
        this.settledCommits.add(commit);
        this.commitFailed = error instanceof Stop || error instanceof FlowError ? error : new Stop('commit failed');
      },
    );
    this.pending = commit;
    this.position = batch.checkpoint;
    if (previous) {
      this.waitedForCommit = !this.settledCommits.has(previous);
      await previous;
    }
    return true;
  }

  /**
   * Starts reading the batch after `from` while the batch just read goes through the steps and
   * the destination, so the source's round trip is not on the path of every batch (measured
   * with bench/postgres: the read was a third of the time per batch). One batch ahead at most.
   */
  private readAhead(reader: PullSource, from: Checkpoint): void {
    const promise = reader.read(from, this.row.batch_size, this.hard.signal);
    // Not awaited until the next step, which may never come (a pause, a stop): no unhandled rejection.
    promise.catch(() => undefined);
    this.ahead = { reader, from: JSON.stringify(from ?? null), max: this.row.batch_size, promise };
  }

  /** The read started ahead, if it was of the same source, from the same position, for the same size; it is handed out once. */
  private takeReadAhead(reader: PullSource, from: Checkpoint | null): Promise<SourceBatch> | undefined {
    const ahead = this.ahead;
    this.ahead = undefined;
    if (!ahead || ahead.reader !== reader || ahead.max !== this.row.batch_size || ahead.from !== JSON.stringify(from ?? null)) return undefined;
    return ahead.promise;
  }

  /** Waits for the commit in flight, if any. */
  private async flush(): Promise<void> {
    const pending = this.pending;
    if (!pending) return;
    try {
      await pending;
    } finally {
      if (this.pending === pending) this.pending = undefined;
    }
  }

  /**
   * A push source, consumed until the flow ends. Batches go through the steps and the
   * destination one at a time, in the order the source handed them over, and commit one at a
   * time in that order: a source that hands over the next batch before the last one's handler
   * resolved (see `PushSource`) has it written while the last one commits. A consumption is
   * started again from the last checkpoint when the source breaks or its connectors change.
   */
  private async consumePush(): Promise<FlowEnd> {
    const consuming = new AbortController();
    const onStop = () => consuming.abort(new Stop('stopped'));
    this.stopper.signal.addEventListener('abort', onStop, { once: true });
    // An idle push source calls no handler: a pause or a deletion must still end the consumption.
    this.onPoke = () => {
      void this.deps.ctx.storage.repos.pipelines.getAnyWorkspace(this.spec.pipelineId).then(
        (row) => {
          if (row && row.state === 'active') return;
          if (this.end !== 'caught_up') this.end = 'inactive';
          consuming.abort(new Stop('inactive'));
        },
        () => undefined,
      );
    };
    // A run of a scheduled pipeline ends once the source has been quiet for a flush interval.
    let idle: { cancel(): void } | undefined;
    const armIdle = () => {
      idle?.cancel();
      if (this.spec.mode !== 'until_caught_up') return;
      idle = this.deps.ctx.clock.setTimeout(() => {
        this.end = 'caught_up';
        consuming.abort(new Stop('caught up'));
      }, this.row.flush_interval_ms);
    };
    /** Aborted to end one consumption and start the next (the connectors changed). */
    let restart = new AbortController();
    /** The last batch handed over, up to its destination's acknowledgement: the next one waits for it. */
    let written: Promise<unknown> = Promise.resolve();
    /** Batches handed over and not committed yet: the idle timer runs only when there is none. */
    let inFlight = 0;
    const handler = (batch: SourceBatch): Promise<void> => {
      idle?.cancel();
      inFlight++;
      const prepared = written.then(async () => {
        if (!(await this.refresh(false))) {
          this.end = this.stopper.signal.aborted ? 'stopped' : 'inactive';
          consuming.abort(new Stop('inactive'));
          throw new Stop('inactive');
        }
        const span = this.startBatchSpan(this.row, batch.records.length);
        try {
          const results = await this.process(batch, spanContext(span));
          // The settings the batch was written with: a held batch may have picked up newer ones.
          return { row: this.row, span, results };
        } catch (error) {
          endBatchSpan(span, undefined, error);
          throw error;
        }
      });
      // A batch that did not reach the destination stops the ones handed over after it.
      written = prepared;
      prepared.catch(() => undefined);
      // This commit starts only after the previous one succeeded, and not at all if it failed.
      const previous = this.pending;
      const commit = prepared.then((p) => this.commit(p.results, batch.checkpoint, batch.records.length, p.row, this.back, previous, p.span));
      this.pending = commit;
      commit.catch((error: unknown) => {
        this.commitFailed = error instanceof Stop || error instanceof FlowError ? error : new Stop('commit failed');
      });
      return commit.then(
        () => {
          inFlight--;
          // The connectors changed: end this consumption after the committed batch and start again with them.
          if (this.reopenNeeded) restart.abort(new Stop('reopen'));
          if (inFlight === 0) armIdle();
        },
        (error: unknown) => {
          inFlight--;
          throw error;
        },
      );
    };
    try {
      for (;;) {
        armIdle();
        if (this.reopenNeeded) {
          this.reopenNeeded = false;
          this.dirty = true;
          if (!(await this.refresh())) {
            if (this.end !== 'caught_up') this.end = this.stopper.signal.aborted ? 'stopped' : 'inactive';
            break;
          }
        }
        // A consumption that ended with a batch still committing starts again after it.
        await this.pending?.catch(() => undefined);
        restart = new AbortController();
        const reader = this.conns!.reader as PushSource;
        const woken = this.wake.signal;
        try {
          await reader.consume(this.checkpoint, handler, AbortSignal.any([consuming.signal, restart.signal]));
          if (consuming.signal.aborted || !restart.signal.aborted) break;
        } catch (error) {
          if (consuming.signal.aborted) break;
          if (restart.signal.aborted) continue;
          if (error instanceof Stop) break;
          // The source itself broke (its connection dropped): count it and start it again from the
          // checkpoint, opened again if its connector changed meanwhile (the fix may be that change).
          await this.failure('source', error, this.fore, woken);
          this.reopenNeeded = true;
        }
      }
    } finally {
      this.onPoke = undefined;
      idle?.cancel();
      this.stopper.signal.removeEventListener('abort', onStop);
    }
    if (this.end !== 'caught_up' && this.end !== 'inactive') this.end = 'stopped';
    return this.end;
  }

  /**
   * The span of one batch, from its read (`readStarted`, `performance.now()` time; a pushed
   * batch starts when handed over) to its commit, with a child span for the read. Made only for
   * a batch with records: an idle pipeline polling its source leaves no trace.
   */
  private startBatchSpan(row: PipelineRow, records: number, readStarted?: number): Span {
    const attributes = {
      'ferry.workspace.id': row.workspace_id,
      'ferry.pipeline.id': row.id,
      'ferry.run.id': this.spec.runId() ?? '',
      'ferry.batch.records': records,
    };
    const span = startSpan('ferry.pipeline.batch', attributes, readStarted === undefined ? {} : { startTime: readStarted });
    if (readStarted !== undefined) startSpan('ferry.pipeline.read', { 'ferry.batch.records': records }, { parent: spanContext(span), startTime: readStarted }).end();
    return span;
  }

  /** Takes one source batch through the steps and the destination (not committed yet); `trace` is the batch's span. */
  private async process(batch: SourceBatch, trace: TraceContext): Promise<ItemResult[]> {
    const items = toWorkItems(this.row.id, batch.records, this.deps.ctx.clock.now());
    // What the destination took in an attempt cut short is not sent again by the next one.
    const carried: Array<ItemResult | undefined> = [];
    let attempt = 0;
    const results = await this.retrying('destination', async () => {
      // A held batch is tried again with what may have fixed it: the destination's new settings,
      // the pipeline's new steps and batch size (at most that many events per write).
      if (attempt++ > 0) await this.refreshForRetry('destination');
      const conns = this.conns!;
      return processItems(
        items,
        {
          chain: this.chain!,
          destination: conns.writer,
          maxAttempts: this.row.max_attempts,
          maxWrite: this.row.batch_size,
          clock: this.deps.ctx.clock,
          recordRetry: this.deps.options.recordRetry,
          scrub: conns.scrub,
          trace,
          carried,
        },
        this.hard.signal,
      );
    });
    // The destination took the batch: the foreground's failure streak is over (and, with no commit
    // running behind, the outage: the batch then counts in the run that recovery starts).
    await this.progressed(this.fore);
    return results;
  }

  /**
   * Commits a batch once `previous` (the commit of the batch before it) succeeded, and fails with
   * it if it did not; resolves after `previous`, so the flow's position moves batch after batch.
   * The batch takes its place in the order now, in batch order; storage may start its commit
   * before `previous` is done, and runs it right after (see `BatchCommits`).
   */
  private async commit(results: readonly ItemResult[], checkpoint: Checkpoint, read: number, row: PipelineRow = this.row, lane: Lane = this.fore, previous?: Promise<unknown>, span?: Span): Promise<void> {
    const counts = countResults(read, results);
    // The commit before failed: that failure is this batch's end, not one of its own to retry.
    const after = previous?.then(
      () => undefined,
      () => {
        throw new Stop('the commit before failed');
      },
    );
    after?.catch(() => undefined);
    const commitBatch = this.commits.queue(after);
    try {
      const write = () => commitBatch({ pipeline: row, runId: this.spec.runId(), fence: this.spec.fence, results, checkpoint, counts });
      await (span ? inSpan('ferry.pipeline.commit', {}, spanContext(span), () => this.retrying('storage', write, lane), flowFailure) : this.retrying('storage', write, lane));
      if (previous) await previous;
      this.checkpoint = checkpoint;
      await this.progressed(lane);
    } catch (error) {
      // When the commit before failed, its failure is the one this batch ends with.
      const reason = previous ? await previous.then(() => error, (before: unknown) => before) : error;
      if (span) endBatchSpan(span, counts, reason);
      throw reason;
    }
    if (span) endBatchSpan(span, counts);
  }

  /**
   * Runs `fn` until it succeeds, holding the flow meanwhile: a failure is counted (connector
   * health, the retry budget) and followed by a capped exponential wait that {@link stop}
   * cuts short. A lost lease ends the flow at once.
   */
  private async retrying<T>(stage: 'source' | 'destination' | 'storage', fn: () => Promise<T>, lane: Lane = this.fore): Promise<T> {
    for (;;) {
      if (this.hard.signal.aborted) throw new Stop('aborted');
      // The commit behind this batch failed for good: nothing prepared after it may be written or committed.
      if (lane === this.fore && this.commitFailed !== undefined) throw this.commitFailed;
      // A change made while this attempt runs may be the fix: it must cut the wait after a failure short.
      const woken = this.wake.signal;
      try {
        const value = await fn();
        await this.succeeded(stage);
        return value;
      } catch (error) {
        if (error instanceof Stop) throw error;
        if (isFerryError(error, 'lease_lost')) {
          this.abort();
          throw new Stop('lease lost');
        }
        if (this.hard.signal.aborted) throw new Stop('aborted');
        await this.failure(stage, error, lane, woken);
      }
    }
  }

  private async succeeded(stage: 'source' | 'destination' | 'storage'): Promise<void> {
    if (stage !== 'storage' && this.conns) await this.health.succeeded(stage === 'source' ? this.conns.source : this.conns.destination);
  }

  /**
   * The flow moved (a batch committed, or the source answered that it is caught up): the lane's
   * failure streak is over, and the outage with it once neither lane is failing.
   */
  private async progressed(lane: Lane = this.fore): Promise<void> {
    lane.failures = 0;
    if (!this.failing || this.fore.failures > 0 || this.back.failures > 0) return;
    this.failing = false;
    await this.announce(() => this.spec.onRecovered?.());
  }

  private announce(fn: () => Promise<void> | undefined): Promise<unknown> {
    this.announcing = this.announcing.then(fn, fn);
    return this.announcing;
  }

  /**
   * Counts a failure, reports it, and waits before the next attempt (or throws when the budget is
   * spent). `woken` is the wake signal as it was when the attempt started: a poke that came
   * while the attempt ran or while the failure was being reported (a pause, a config fix) ends
   * the wait at once, instead of being lost to a wait that starts after it.
   */
  private async failure(stage: 'source' | 'destination' | 'storage', error: unknown, lane: Lane, woken: AbortSignal = this.wake.signal): Promise<void> {
    const flow = error instanceof FlowError ? error : stage === 'storage' ? storageFlowError(error) : toFlowError(stage, error, this.conns?.scrub ?? ((t) => t));
    const failures = ++lane.failures;
    const side = flow.stage === 'source' ? this.conns?.source : flow.stage === 'destination' ? this.conns?.destination : undefined;
    this.deps.ctx.logger.warn({ pipeline_id: this.spec.pipelineId, stage: flow.stage, code: flow.code, attempt: failures, err: flow.message }, 'pipeline batch failed; holding the flow');
    // A setup problem is what a check would find: the connector is down now, not after a streak.
    const consecutive = flow.needsFix ? Math.max(failures, this.deps.options.downAfterAttempts) : failures;
    if (side) await this.health.failed(side, consecutive, { code: flow.code, message: flow.message }).catch(() => undefined);
    const budget = this.spec.mode === 'until_caught_up' ? this.deps.options.runRetryAttempts : this.deps.options.streamFailAfterAttempts;
    if (!flow.retryable || failures >= budget) {
      if (this.spec.mode === 'until_caught_up') throw flow;
      if (!this.failing) {
        this.failing = true;
        await this.announce(() => this.spec.onFailing?.(flow)).catch(() => undefined);
      }
    }
    // Retrying sooner cannot fix what is not retryable: a streaming pipeline tries again at the
    // backoff's cap (and at once when its pipeline or connectors change, which wakes this wait),
    // so a fix made outside Ferry (an ALTER TABLE, a GRANT) is picked up within a minute while a
    // broken pipeline costs one attempt a minute, not a burst.
    const delay = flow.retryable ? backoffDelay(this.deps.options.retry, failures) : backoffDelay(this.deps.options.retry, MAX_BACKOFF_ATTEMPT);
    try {
      await sleep(this.deps.ctx.clock, delay, AbortSignal.any([this.stopper.signal, woken, this.wake.signal]));
    } catch {
      if (this.stopper.signal.aborted) throw new Stop('stopped');
    }
    // Whatever failed may be fixed by a change (a new config, a rotation): look again. A pipeline
    // paused meanwhile gives up the batch it holds: nothing of it was committed, so it is read
    // again, whole, when the pipeline is activated.
    this.dirty = true;
    const row = await this.deps.ctx.storage.repos.pipelines.getAnyWorkspace(this.spec.pipelineId).catch(() => this.row);
    if (!row || row.state !== 'active') {
      this.end = 'inactive';
      throw new Stop('inactive');
    }
  }
}

/** One line of work's failures in a row. */
interface Lane {
  failures: number;
}

/** What a span of the flow records of a failure: the flow's own code and scrubbed message, never a plugin's raw error. */
function flowFailure(error: unknown): SpanFailure {
  if (error instanceof FlowError) return { code: error.code, message: error.message };
  if (error instanceof Stop) return { code: 'stopped', message: 'The flow stopped before the batch was committed.' };
  return { code: 'unexpected_error', message: 'The batch failed.' };
}

/** Ends a batch's span with what became of its events, or with the failure that stopped it. */
function endBatchSpan(span: Span, counts: BatchCounts | undefined, error?: unknown): void {
  if (counts) {
    span.setAttributes({ 'ferry.batch.delivered': counts.events_written, 'ferry.batch.filtered': counts.events_filtered, 'ferry.batch.dead_lettered': counts.events_dead_lettered });
  }
  if (error !== undefined) failSpan(span, flowFailure(error));
  span.end();
}

function storageFlowError(error: unknown): FlowError {
  return new FlowError('storage', 'storage_unavailable', error instanceof Error ? error.message : String(error), true, { cause: error });
}

import { performance } from 'node:perf_hooks';
import { inSpan, sleep, isFerryError, spanContext, type Span, type TraceContext } from '../common/index.js';
import type { EngineContext } from '../context/index.js';
import type { Checkpoint, DestinationEvent, PullSource, PushSource, SourceBatch } from '../plugin-api/index.js';
import type { Fence, PipelineRow } from '../storage/index.js';
import { backoffDelay, MAX_BACKOFF_ATTEMPT } from '../queue/index.js';
import { BatchCommitter, countResults } from './batch-commit.js';
import { processItems, type ItemResult, type WorkItem } from './event-processor.js';
import { toWorkItems } from './source-records.js';
import { FlowError, FlowStop, toFlowError, type FlowEnd } from './flow-error.js';
import { FairYield } from './fair-yield.js';
import { FlowHold } from './flow-hold.js';
import { consumePushSource } from './push-consumption.js';
import { ReadAhead } from './read-ahead.js';
import { endBatchSpan, flowFailure, startBatchSpan } from './batch-span.js';
import { backfillRequestsVersion } from '../backfills/index.js';
import { canBackfill, compileSteps, connectorVersion, HealthReporter, openConnections, type PipelineConnections, type PipelineSide } from './pipeline-connections.js';
import type { TransformChain } from './transform-chain.js';
import type { RuntimeOptions } from './runtime-options.js';

export type { FlowEnd } from './flow-error.js';

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

/**
 * What the flow knows of its connectors: `current`, opened as last read; `unchecked`, something
 * may have changed (a poke, a failure): read them again before the next batch; `source_stale`,
 * the source changed, or broke, while it was consumed: it is opened again once that consumption
 * has ended (a push source's handler must not close the source it runs in).
 */
type ConnectorsState = 'current' | 'unchecked' | 'source_stale';

/** A batch the destination took, not committed yet. */
interface WrittenBatch {
  /** The settings the batch was written with: a held batch may have picked up newer ones. */
  row: PipelineRow;
  span: Span;
  results: ItemResult[];
}

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
  private connectors: ConnectorsState = 'unchecked';
  /** Aborted (and replaced) by {@link poke}: ends the current idle or backoff wait early. */
  private wake = new AbortController();
  /** Set while a push source is consumed: it has no wait to cut short, so a poke checks the state itself. */
  private onPoke: (() => void) | undefined;
  private stepsKey = '';
  private chain: TransformChain | undefined;
  private row!: PipelineRow;
  private conns: PipelineConnections | undefined;
  /** The last committed position. */
  private checkpoint: Checkpoint | null = null;
  /** The position after the last batch the destination took (a pull source reads from here). */
  private position: Checkpoint | null = null;
  /** The read of the next batch, started while the current one is written (pull sources). */
  private readonly ahead = new ReadAhead();
  /** Batches prepared ahead (see {@link prepareSoon}): their work items, and the events the destination prepared. */
  private readonly ready = new WeakMap<SourceBatch, { items: WorkItem[]; events: readonly DestinationEvent[] | undefined }>();
  /** Batches taken by process(): preparing one of them now would be work for nothing. */
  private readonly taken = new WeakSet<SourceBatch>();
  /** The commit of the last batch written, while it runs. */
  private pending: Promise<void> | undefined;
  /** Commits that have settled: whether a step's wait for the one before it was a wait at all. */
  private readonly settledCommits = new WeakSet<Promise<void>>();
  /** When a pull step lets timers and I/O run. */
  private readonly fairness = new FairYield();
  private health: HealthReporter;
  /**
   * Failures in a row, per lane: the batch being prepared (`fore`) and the commit running behind
   * it (`back`) fail and retry at the same time, and each keeps its own count, so neither doubles
   * the other's budget or backoff, and a success of one does not end the other's outage.
   */
  private readonly fore: Lane = { failures: 0, waiting: 0 };
  private readonly back: Lane = { failures: 0, waiting: 0 };
  /** What the flow waits on while it is held: the pipeline's `held`, and the log. */
  private readonly hold: FlowHold;
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
    this.hold = new FlowHold(deps.ctx, spec.pipelineId);
  }

  /**
   * Something about the pipeline or its connectors changed: read them again before the next
   * batch, and (with `wake`) cut short an idle or backoff wait so a pause or a fix takes effect now.
   */
  poke(wake = true): void {
    if (this.connectors === 'current') this.connectors = 'unchecked';
    if (!wake) return;
    this.onPoke?.();
    const waking = this.wake;
    this.wake = new AbortController();
    waking.abort();
  }

  /** Asks the flow to stop after the batch in flight. */
  stop(): void {
    this.stopper.abort(new FlowStop('stopped'));
  }

  /** Gives up the batch in flight too (the lease is gone: committing it would be refused anyway). */
  abort(): void {
    this.stop();
    this.hard.abort(new FlowStop('lease lost'));
  }

  /**
   * Moves batches until the flow ends, and resolves with how it ended (see {@link FlowEnd}), its
   * connectors closed and its last commit settled. Rejects with a {@link FlowError} when a run's
   * failure outlasts its retry budget; a continuous flow retries for as long as it takes.
   */
  async run(): Promise<FlowEnd> {
    let end: FlowEnd;
    await this.hold.clearLeftover();
    try {
      if (!(await this.refresh())) {
        end = 'inactive';
      } else {
        this.checkpoint = await this.deps.ctx.storage.repos.checkpoints.get(this.spec.pipelineId);
        this.position = this.checkpoint;
        end = 'read' in this.conns!.reader! ? await this.pullLoop() : await this.consumePush();
      }
    } catch (error) {
      if (error instanceof FlowStop) end = this.end === 'inactive' ? 'inactive' : 'stopped';
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
    await this.ahead.drop();
    const conns = this.conns;
    this.conns = undefined;
    await conns?.close();
    this.commits.close();
    await this.hold.release(false);
  }

  /**
   * Reads the pipeline again (every batch: a pause or an edit made on another engine is seen at
   * the next batch), and its connectors when something says they changed; opens again the side
   * whose connector did. False when the pipeline is no longer active or the flow was asked to
   * stop. With `reopen: false` (inside a push source's handler, which must not close the source
   * it runs in) a changed source is only marked `source_stale`; a changed destination is opened
   * again at once either way.
   */
  private async refresh(reopen = true): Promise<boolean> {
    if (this.stopper.signal.aborted) return false;
    const row = await this.retrying('storage', () => this.deps.ctx.storage.repos.pipelines.getAnyWorkspace(this.spec.pipelineId));
    if (!row || row.state !== 'active') return false;
    await this.retrying('storage', async () => this.adopt(row));
    if (this.connectors === 'current' && this.conns) return !this.stopper.signal.aborted;
    this.connectors = 'current';
    await this.retrying('source', async () => {
      if (!this.conns) {
        this.conns = await openConnections(this.deps.ctx, row, { withSource: true, signal: this.hard.signal });
        return;
      }
      if (await this.changed('destination')) await this.conns.reopen('destination');
      if (await this.changed('source')) {
        if (reopen) await this.reopenSource();
        else this.connectors = 'source_stale';
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
    const repos = this.deps.ctx.storage.repos;
    let version = connectorVersion(await repos.connectors.get(row.workspace_id, id));
    // The source is told of the pipeline's backfills when opened: one asked for or cancelled since reopens it.
    if (side === 'source' && canBackfill(this.conns!.source)) version += await backfillRequestsVersion(repos, row.id);
    return version !== this.conns!.versions[side];
  }

  /** Opens the source again; a read started ahead on the old one is dropped first. */
  private async reopenSource(): Promise<void> {
    await this.ahead.drop();
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
        throw new FlowStop('inactive');
      }
      this.adopt(row);
      changed = await this.changed(side);
    } catch (error) {
      throw error instanceof FlowStop || error instanceof FlowError ? error : storageFlowError(error);
    }
    if (!changed) return;
    if (side === 'source') await this.reopenSource();
    else await this.conns!.reopen('destination');
    this.health.observe(this.conns![side]);
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
    await this.fairness.beforeStep();
    if (!(await this.refresh())) {
      // What the destination already took is committed before the flow ends: nothing is sent twice.
      await this.flush();
      this.end = this.stopper.signal.aborted ? 'stopped' : 'inactive';
      return false;
    }
    const from = this.position;
    // The read started while the previous batch was being written, when it still fits.
    let early = this.ahead.take(this.conns!.reader as PullSource, from, this.row.batch_size);
    const readStarted = performance.now();
    let attempt = 0;
    this.fore.waiting = 0;
    const batch = await this.retrying('source', async () => {
      // A retry reads with what may have fixed the failure: the source's new settings, the new batch size.
      if (attempt++ > 0) await this.refreshForRetry('source');
      const read = early ?? (this.conns!.reader as PullSource).read(from, this.row.batch_size, this.hard.signal);
      early = undefined; // a failed read-ahead counts as a failure; the retry reads afresh
      return read;
    });
    if (batch.records.length > 0) this.ahead.start(this.conns!.reader as PullSource, batch.checkpoint, this.row.batch_size, this.hard.signal, (next) => this.prepareSoon(next));
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
    const written = await this.write(batch, readStarted);
    const previous = this.pending;
    // Awaited by the next step or by flush(); until then its failure stops the batch being prepared.
    this.commitBehind(Promise.resolve(written), batch).catch(() => undefined);
    this.position = batch.checkpoint;
    if (previous) {
      if (!this.settledCommits.has(previous)) this.fairness.waitedForCommit();
      await previous;
    }
    return true;
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

  /** A push source, consumed until the flow ends (see `consumePushSource`). */
  private consumePush(): Promise<FlowEnd> {
    return consumePushSource<WrittenBatch>({
      flow: this,
      mode: this.spec.mode,
      clock: this.deps.ctx.clock,
      stopSignal: this.stopper.signal,
      wakeSignal: () => this.wake.signal,
      flushIntervalMs: () => this.row.flush_interval_ms,
      checkpoint: () => this.checkpoint,
      source: () => this.conns!.reader as PushSource,
      onPoke: (fn) => (this.onPoke = fn),
      isActive: async () => (await this.deps.ctx.storage.repos.pipelines.getAnyWorkspace(this.spec.pipelineId))?.state === 'active',
      refresh: (reopen) => this.refresh(reopen),
      sourceStale: () => this.connectors === 'source_stale',
      write: (batch) => this.write(batch),
      prepare: (batch) => this.prepareSoon(batch),
      commitBehind: (written, batch) => this.commitBehind(written, batch),
      pending: () => this.pending,
      sourceBroke: async (error, woken) => {
        // No batch waits: the source itself cannot be consumed.
        this.fore.waiting = 0;
        await this.failure('source', error, this.fore, woken);
        this.connectors = 'source_stale';
      },
    });
  }

  /** Takes a source batch through the steps and the destination under its span (see `startBatchSpan`); not committed yet. */
  private async write(batch: SourceBatch, readStarted?: number): Promise<WrittenBatch> {
    const span = startBatchSpan(this.row, this.spec.runId(), batch.records.length, readStarted);
    try {
      const results = await this.process(batch, spanContext(span));
      return { row: this.row, span, results };
    } catch (error) {
      endBatchSpan(span, undefined, error);
      throw error;
    }
  }

  /**
   * Commits a batch once it is written, behind the commit in flight: it commits only after that
   * one succeeded, and not at all if it failed (see {@link commit}). It becomes the commit in
   * flight; until it settles, its failure stops the batch being prepared after it.
   */
  private commitBehind(written: Promise<WrittenBatch>, batch: SourceBatch): Promise<void> {
    const previous = this.pending;
    const commit = written.then((w) => this.commit(w.results, batch.checkpoint, batch.records.length, w.row, this.back, previous, w.span));
    this.pending = commit;
    commit.then(
      () => this.settledCommits.add(commit),
      (error: unknown) => {
        this.settledCommits.add(commit);
        this.commitFailed = error instanceof FlowStop || error instanceof FlowError ? error : new FlowStop('commit failed');
      },
    );
    return commit;
  }

  /**
   * Prepares a batch that will be written after the one being written now (read ahead, or handed
   * over by a push source), once the current turn of the event loop is over: by then the batch
   * before has usually been sent, and its destination is busy with it. The batch becomes its work
   * items, and, when it goes to the destination as it was read (no steps), the destination's
   * `prepare` makes what it will send: the destination then does not wait for that once its
   * write before returns (a COPY's text, the payloads' JSON took a third of each batch's time).
   */
  private prepareSoon(batch: SourceBatch): void {
    if (batch.records.length === 0) return;
    setImmediate(() => {
      if (this.ready.has(batch) || this.taken.has(batch) || this.stopper.signal.aborted) return;
      try {
        const items = toWorkItems(this.row.id, batch.records, this.deps.ctx.clock.now());
        const writer = this.conns?.writer;
        let events: DestinationEvent[] | undefined;
        if (writer?.prepare && this.chain?.length === 0 && items.length <= this.row.batch_size) {
          events = items.map((item) => item.event);
          writer.prepare(events);
        }
        this.ready.set(batch, { items, events });
      } catch {
        // Not the batch's failure: process() makes the items again, and fails there as it always did.
      }
    });
  }

  /** Takes one source batch through the steps and the destination (not committed yet); `trace` is the batch's span. */
  private async process(batch: SourceBatch, trace: TraceContext): Promise<ItemResult[]> {
    const ready = this.ready.get(batch);
    this.ready.delete(batch);
    this.taken.add(batch);
    const items = ready?.items ?? toWorkItems(this.row.id, batch.records, this.deps.ctx.clock.now());
    // What the destination took in an attempt cut short is not sent again by the next one.
    const carried: Array<ItemResult | undefined> = [];
    let attempt = 0;
    this.fore.waiting = items.length;
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
          // Prepared by this destination, not by one opened again since.
          ...(ready?.events && attempt === 1 ? { prepared: ready.events } : {}),
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
        throw new FlowStop('the commit before failed');
      },
    );
    after?.catch(() => undefined);
    const commitBatch = this.commits.queue(after);
    try {
      lane.waiting = results.length;
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
      if (this.hard.signal.aborted) throw new FlowStop('aborted');
      // The commit behind this batch failed for good: nothing prepared after it may be written or committed.
      if (lane === this.fore && this.commitFailed !== undefined) throw this.commitFailed;
      // A change made while this attempt runs may be the fix: it must cut the wait after a failure short.
      const woken = this.wake.signal;
      try {
        const value = await fn();
        await this.succeeded(stage);
        return value;
      } catch (error) {
        if (error instanceof FlowStop) throw error;
        if (isFerryError(error, 'lease_lost')) {
          this.abort();
          throw new FlowStop('lease lost');
        }
        if (this.hard.signal.aborted) throw new FlowStop('aborted');
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
    if (this.fore.failures > 0 || this.back.failures > 0) return;
    if (this.hold.held) await this.hold.release(true);
    if (!this.failing) return;
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
    await this.hold.failed((this.row as PipelineRow | undefined)?.workspace_id, flow, failures, delay, lane.waiting);
    try {
      await sleep(this.deps.ctx.clock, delay, AbortSignal.any([this.stopper.signal, woken, this.wake.signal]));
    } catch {
      if (this.stopper.signal.aborted) throw new FlowStop('stopped');
    }
    // Whatever failed may be fixed by a change (a new config, a rotation): look again. A pipeline
    // paused meanwhile gives up the batch it holds: nothing of it was committed, so it is read
    // again, whole, when the pipeline is activated.
    if (this.connectors === 'current') this.connectors = 'unchecked';
    const row = await this.deps.ctx.storage.repos.pipelines.getAnyWorkspace(this.spec.pipelineId).catch(() => this.row);
    if (!row || row.state !== 'active') {
      this.end = 'inactive';
      throw new FlowStop('inactive');
    }
  }
}

/** One line of work's failures in a row. */
interface Lane {
  failures: number;
  /** Events of the batch this lane works on, for `held.events_waiting`. */
  waiting: number;
}

function storageFlowError(error: unknown): FlowError {
  return new FlowError('storage', 'storage_unavailable', error instanceof Error ? error.message : String(error), true, { cause: error });
}

/**
 * The parts of the pipeline benchmark that run in its case processes (case-child.ts): the
 * backlog's records, a drain through an engine, the direct storage baseline and the settings
 * read from the environment.
 */
import { accessSync, constants, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { createEngine, generateSecretKey, type Engine, type Logger, type StorageConfig } from '@ferry/core';
import type { EventRow, FerryStorage } from '@ferry/core/internal';
import { engineContext } from '@ferry/core/internal';
import { MemoryHub, memoryConnector, type MemoryRecordInput } from '@ferry/testing';
import { pipelineRow } from '@ferry/testing/suites';

/** The workspace every pipeline and baseline row of the benchmark lives in. */
export const WORKSPACE = 'default';

/** Reads a positive integer setting from the environment, or `fallback` when unset. */
export function envCount(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw.replace(/_/g, ''));
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return value;
}

/**
 * Records per pipeline batch, and rows per baseline transaction: the same on both sides, since
 * the transaction count is most of the storage cost. 1,000 is one Postgres statement per batch
 * (the event log writes 1,000 rows per statement); the schema allows 1 to 10,000.
 */
export const BATCH_SIZE = envCount('BENCH_PIPELINE_BATCH', 1_000);

/** Rounds of the throughput case (see case-child.ts): in each, the pipeline and then the direct writes move an equal share of the events. */
export const THROUGHPUT_ROUNDS = 5;

/**
 * A new temporary directory for the SQLite files: under BENCH_PIPELINE_TMPDIR if set, else the
 * memory-backed /dev/shm when it is writable (where the embedded Postgres keeps its data, with
 * fsync off), else the OS temp directory. Why not the disk: there, SQLite's WAL commits wait on
 * writeback, and on the project's VMs the direct writes of the same rows ran at 46,000 events/s
 * in one run and 63,000 in the next (random event ids, since replaced, spent 5.8 s in COMMIT
 * per 200,000 events on ext4 against 1.1 s on tmpfs): more than the differences being measured.
 * On memory both dialects pay for the same thing, CPU. BENCH_PIPELINE_TMPDIR=/tmp measures the disk.
 */
export function sqliteTempDir(): string {
  let parent = process.env.BENCH_PIPELINE_TMPDIR;
  if (!parent) {
    try {
      accessSync('/dev/shm', constants.W_OK);
      parent = '/dev/shm';
    } catch {
      parent = tmpdir();
    }
  }
  return mkdtempSync(join(parent, 'ferry-bench-pipeline-'));
}

/**
 * How long one drain may take before the run fails: the time of 5,000 events/s (a tenth of the
 * target), at least a minute. A drain that stalls (a flow holding on a storage error it retries
 * forever) must end the benchmark with what it saw, not hang it. Checked in the case process
 * between progress polls, and enforced from outside by the parent, which kills a case process
 * that outlives its deadlines: the polls are timers, which a flow that never yields would starve.
 */
export function drainDeadlineMs(count: number): number {
  return Math.max(60_000, (count / 5_000) * 1_000);
}

/**
 * The record at `index` of the backlog: a small order, about 100 bytes of JSON, whose content
 * varies with the index so neither side can benefit from identical rows.
 */
export function benchRecord(index: number): MemoryRecordInput {
  return {
    type: 'bench.event',
    payload: { order_id: index, sku: `SKU-${index % 10_000}`, amount: index % 1_000, currency: 'EUR', customer: { email: `c${index}@example.com` } },
  };
}

/** The end of one drain. */
export interface DrainResult {
  /** The pipeline's id. */
  pipelineId: string;
  /** Events committed: the checkpoint and the event log hold them all. */
  events: number;
  /** From the pipeline's creation to its last batch committed. */
  seconds: number;
  /** Events the destination accepted, re-deliveries included: more than `events` means batches were sent twice. */
  delivered: number;
  /** Runs the stream went through: one unless its session ended and restarted (a lost lease). */
  runs: number;
}

/**
 * A logger that keeps the engine's warnings and errors (a flow holding on a failure logs them
 * and retries, which from outside looks like a slow drain) so a failed drain can show them.
 */
export class RecordingLogger implements Logger {
  /**
   * @param bindings - fields a child logger adds to each line.
   * @param lines - the last warnings and errors, oldest first; one buffer shared with every
   *   child, so what a component logs shows up in the engine's report.
   */
  constructor(
    private readonly bindings: Record<string, unknown> = {},
    readonly lines: string[] = [],
  ) {}

  trace = (): void => undefined;
  debug = (): void => undefined;
  info = (): void => undefined;
  warn = (obj: object | string, msg?: string): void => this.keep('warn', obj, msg);
  error = (obj: object | string, msg?: string): void => this.keep('error', obj, msg);
  fatal = (obj: object | string, msg?: string): void => this.keep('fatal', obj, msg);

  child(bindings: Record<string, unknown>): Logger {
    return new RecordingLogger({ ...this.bindings, ...bindings }, this.lines);
  }

  private keep(level: string, obj: object | string, msg?: string): void {
    const text = typeof obj === 'string' ? obj : `${msg ?? ''} ${JSON.stringify({ ...this.bindings, ...obj })}`;
    this.lines.push(`${level}: ${text}`);
    if (this.lines.length > 20) this.lines.shift();
  }
}

/** An engine with the memory connector over its own hub, started. */
export interface BenchEngine {
  engine: Engine;
  hub: MemoryHub;
  logger: RecordingLogger;
}

/** Creates and starts an engine on `storage` with the memory connector. */
export async function startBenchEngine(storage: StorageConfig): Promise<BenchEngine> {
  const hub = new MemoryHub();
  const logger = new RecordingLogger();
  const engine = await createEngine({ storage, plugins: [memoryConnector(hub)], secretKey: generateSecretKey(), logger });
  await engine.start();
  return { engine, hub, logger };
}

/**
 * Drains a backlog of `count` generated records through a new pass-through streaming pipeline
 * (memory source `<name>-in` to memory destination `<name>-out`, no transforms), and pauses it
 * once drained so an idle pipeline does not poll during the next measurement. `eventLog` is the
 * pipeline's `event_log` setting (what its log keeps), the engine's default when absent.
 *
 * The clock runs from just before the pipeline is created (so the start of the stream, its lease
 * and its run are paid like in production) until its checkpoint says the last batch committed:
 * the destination's count alone would stop the clock before the last event-log write. Progress
 * is polled every 20 ms of real time, and every millisecond once the last batch is under way.
 * The poll needs the flow to let timers run between batches; a flow that did not (on SQLite
 * every query completes synchronously) would also starve its lease's heartbeat, and a drain
 * longer than the lease would restart its stream and send a batch twice: {@link DrainResult}
 * counts deliveries and runs, and the drain reports any repeat on stderr.
 */
export async function drainThroughEngine(bench: BenchEngine, name: string, count: number, eventLog?: { payloads: 'all' | 'failed' }): Promise<DrainResult> {
  const { engine, hub } = bench;
  hub.stream(`${name}-in`).generate(count, benchRecord);
  // keep: false counts without keeping events, so the destination holds no memory of its own.
  const sink = hub.sink(`${name}-out`, { keep: false });
  const source = await engine.connectors.create(WORKSPACE, { type: 'memory', direction: 'source', config: { name: `${name}-in` } });
  const destination = await engine.connectors.create(WORKSPACE, { type: 'memory', direction: 'destination', config: { name: `${name}-out` } });
  const deadline = performance.now() + drainDeadlineMs(count);
  const started = performance.now();
  const pipeline = await engine.pipelines.create(WORKSPACE, {
    name,
    source_connector_id: source.id,
    destination_connector_id: destination.id,
    activate: true,
    batch_size: BATCH_SIZE,
    ...(eventLog ? { event_log: eventLog } : {}),
  });
  const checkpoints = engineContext(engine).storage.repos.checkpoints;
  for (;;) {
    // The destination's count is free to read; the checkpoint (a query) only once it is complete.
    if (sink.accepted >= count && (await checkpoints.get(pipeline.id)) === count) break;
    if (performance.now() > deadline) {
      throw new Error(
        `${name}: the pipeline did not drain ${count} events in ${Math.round(drainDeadlineMs(count) / 1000)} s ` +
          `(destination accepted ${sink.accepted}, checkpoint ${JSON.stringify(await checkpoints.get(pipeline.id))}); ` +
          `engine warnings: ${bench.logger.lines.join(' | ') || 'none'}`,
      );
    }
    // Every millisecond from the last batch on, so the clock stops within 1 ms of its commit.
    await delay(sink.accepted >= count - BATCH_SIZE ? 1 : 20);
  }
  const seconds = (performance.now() - started) / 1000;
  const delivered = sink.accepted;
  await engine.pipelines.pause(WORKSPACE, pipeline.id);
  await assertLogged(engineContext(engine).storage, pipeline.id, count);
  const runs = (await engine.pipelines.listRuns(WORKSPACE, pipeline.id, { limit: 100 })).data.length;
  // Not a failure (delivery is at least once), but a drain with no fault should not repeat
  // anything: say so, with what the engine logged, so the figure is read with it in mind.
  if (delivered !== count || runs !== 1) {
    console.error(
      `${name}: ${delivered} deliveries for ${count} events over ${runs} runs (a stream restarted and sent a batch again); ` +
        `engine warnings: ${bench.logger.lines.join(' | ') || 'none'}`,
    );
  }
  return { pipelineId: pipeline.id, events: count, seconds, delivered, runs };
}

/**
 * The rows a pipeline wrote to the event log, in log order (the order it wrote its batches).
 * Read back rather than rebuilt, so the baseline writes the very rows the engine did, whatever
 * ids and times the engine derives.
 */
export async function loggedRows(storage: FerryStorage, pipelineId: string): Promise<EventRow[]> {
  const rows: EventRow[] = [];
  let after: string[] | undefined;
  for (;;) {
    const page = await storage.repos.events.list(WORKSPACE, pipelineId, {}, after, 10_000);
    rows.push(...page.rows);
    if (!page.hasMore) return rows;
    const last = page.rows[page.rows.length - 1]!.log!;
    after = [String(last.unit), String(last.index)];
  }
}

/**
 * The baseline of the throughput case: the storage work of a pipeline and nothing else. Writes
 * `rows` (see {@link loggedRows}) into a fresh event log, per batch of {@link BATCH_SIZE} one
 * `storage.transaction` of `events.append` and `checkpoints.put` (the position after the
 * batch, as the engine's memory source checkpoints), under the same pipeline id. Returns the
 * seconds of the transactions; the pipeline row's creation is not counted.
 */
export async function directWrite(storage: FerryStorage, pipelineId: string, rows: readonly EventRow[]): Promise<number> {
  const setupAt = new Date().toISOString();
  await storage.repos.workspaces.ensure(WORKSPACE, setupAt);
  // The checkpoint has a foreign key to its pipeline.
  await storage.repos.pipelines.insert(pipelineRow({ id: pipelineId, name: pipelineId, workspace_id: WORKSPACE, state: 'active', batch_size: BATCH_SIZE, created_at: setupAt, updated_at: setupAt }));
  const started = performance.now();
  for (let from = 0; from < rows.length; from += BATCH_SIZE) {
    const batch = rows.slice(from, from + BATCH_SIZE);
    await storage.transaction(async (repos) => {
      // As the engine calls it: its times are ISO 8601 UTC with milliseconds already.
      await repos.events.append(batch, { canonicalTimes: true });
      await repos.checkpoints.put(pipelineId, from + batch.length, null, batch[batch.length - 1]!.created_at);
    });
  }
  const seconds = (performance.now() - started) / 1000;
  await assertLogged(storage, pipelineId, rows.length);
  return seconds;
}

/** Fails unless the event log holds `count` events of the pipeline: a benchmark that skipped the writes measured nothing. */
async function assertLogged(storage: FerryStorage, pipelineId: string, count: number): Promise<void> {
  const row = (await storage.knex('event_units').where({ pipeline_id: pipelineId }).sum({ n: 'count' }).first()) as { n: number | string | null } | undefined;
  const logged = Number(row?.n ?? 0);
  if (logged !== count) throw new Error(`${pipelineId}: the event log holds ${logged} rows, expected ${count}`);
}

/** The kernel's record of this process's peak RSS (getrusage ru_maxrss), in MB. */
export function kernelPeakMb(): number {
  return process.resourceUsage().maxRSS / 1024;
}

/** Bytes to MB (2^20). */
export function mb(bytes: number): number {
  return bytes / 1024 / 1024;
}

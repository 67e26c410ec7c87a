import { Type } from '@sinclair/typebox';
import { ConnectorError, defineConnector, Secret, sleep, systemClock, type Checkpoint, type Clock, type DestinationEvent, type JsonObject, type SourceBatch, type SourceRecord, type WriteResult } from '@ferry/core';

/** A record to put into a memory stream; its position is its index in the stream. */
export interface MemoryRecordInput {
  type: string;
  payload: JsonObject;
  occurredAt?: string;
}

/** An outage: reads or writes fail with a retryable `connection_refused` until `until` (clock time). */
interface Outage {
  until: number;
}

/**
 * The faults both sides of the memory connector take: an outage for some clock time (every call
 * fails with a retryable `connection_refused`), a misconfiguration (every call fails with a
 * non-retryable code until it is fixed) and slowness (every call takes some clock time).
 */
abstract class FaultInjection {
  private outage: Outage | undefined;
  private misconfigured: { code: string } | undefined;
  private slowMs = 0;

  constructor(protected readonly clock: Clock) {}

  /** Fails every call with a retryable error for `ms` of clock time. */
  down(ms: number): this {
    this.outage = { until: this.clock.now() + ms };
    return this;
  }

  /** Ends an outage, or a misconfiguration, now. */
  up(): this {
    this.outage = undefined;
    this.misconfigured = undefined;
    return this;
  }

  /**
   * Fails every call with a non-retryable error of `code` until {@link up}: a setup problem no
   * retry fixes (`table_not_found`, `permission_denied`, `configuration_invalid`, `auth_failed`),
   * as a real connector reports one.
   */
  misconfigure(code: string): this {
    this.misconfigured = { code };
    return this;
  }

  /** The code of an injected misconfiguration, if any. */
  misconfiguration(): string | undefined {
    return this.misconfigured?.code;
  }

  /** True during an injected outage. */
  isDown(): boolean {
    return this.outage !== undefined && this.clock.now() < this.outage.until;
  }

  /** Makes every call take `ms` of clock time. */
  slow(ms: number): this {
    this.slowMs = ms;
    return this;
  }

  /** What every call goes through first: the slowness, then the outage. */
  protected async faults(signal: AbortSignal, what: string): Promise<void> {
    if (this.slowMs > 0) await sleep(this.clock, this.slowMs, signal);
    if (this.misconfigured) throw new ConnectorError(this.misconfigured.code, `The memory ${what} is misconfigured (fault injected).`, { retryable: false });
    if (this.isDown()) throw new ConnectorError('connection_refused', `The memory ${what} is down (fault injected).`, { retryable: true });
    this.outage = undefined;
  }
}

/**
 * A source stream kept in memory: records appended by the test (or generated on the fly for a
 * benchmark backlog of millions without holding them), read in order. Its checkpoint is the
 * index of the next record.
 */
export class MemoryStream extends FaultInjection {
  private readonly records: MemoryRecordInput[] = [];
  private generated: { count: number; make: (index: number) => MemoryRecordInput } | undefined;
  private readonly waiters = new Set<() => void>();
  /** How many times the stream was read (pull) or a batch was handed out (push). */
  reads = 0;
  /** Push mode: the most handler calls outstanding at once (more than one with `push_ahead`). */
  maxHanded = 0;
  /** Push mode: handler calls that resolved after a later one had (the core must resolve them in order). */
  settledOutOfOrder = 0;
  private lastSettled = -1;

  /** @internal A push consumer has `outstanding` handler calls not resolved. */
  handed(outstanding: number): void {
    this.maxHanded = Math.max(this.maxHanded, outstanding);
  }

  /** @internal The handler call for the batch ending at `end` resolved. */
  settled(end: number): void {
    if (end < this.lastSettled) this.settledOutOfOrder++;
    this.lastSettled = end;
  }

  /**
   * Appends records; wakes a push consumer that waits for more. A record without `occurredAt`
   * gets the clock's time now, like a log's append time: a source reports the same time for a
   * record on every read, which is what lets the engine put it in the event id.
   */
  push(...records: MemoryRecordInput[]): this {
    const now = new Date(this.clock.now()).toISOString();
    for (const r of records) this.records.push(r.occurredAt ? r : { ...r, occurredAt: now });
    for (const wake of [...this.waiters]) wake();
    return this;
  }

  /**
   * Puts `count` records in front of the appended ones, made by `make(index)` when read: a
   * backlog that costs no memory until it is read. A made record without `occurredAt` is dated
   * one millisecond after the previous one, from the clock's time now.
   */
  generate(count: number, make: (index: number) => MemoryRecordInput): this {
    const start = this.clock.now();
    const times = new IsoTimes();
    this.generated = {
      count,
      make: (index) => {
        const r = make(index);
        return r.occurredAt ? r : { ...r, occurredAt: times.at(start + index) };
      },
    };
    for (const wake of [...this.waiters]) wake();
    return this;
  }

  /** Number of records in the stream. */
  get length(): number {
    return (this.generated?.count ?? 0) + this.records.length;
  }

  /** The record at `index`. */
  at(index: number): MemoryRecordInput {
    const generated = this.generated?.count ?? 0;
    return index < generated ? this.generated!.make(index) : this.records[index - generated]!;
  }

  /** @internal */
  async read(from: number, max: number, signal: AbortSignal): Promise<SourceBatch> {
    this.reads++;
    await this.faults(signal, 'stream');
    const end = Math.min(this.length, from + max);
    const records: SourceRecord[] = [];
    for (let i = from; i < end; i++) {
      const r = this.at(i);
      records.push({ position: String(i), type: r.type, payload: r.payload, ...(r.occurredAt ? { occurredAt: r.occurredAt } : {}) });
    }
    return { records, checkpoint: end };
  }

  /** @internal Resolves when a record is appended or `signal` aborts. */
  waitForMore(signal: AbortSignal): Promise<void> {
    // An abort that came before the call fires no listener.
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.waiters.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      this.waiters.add(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }
}

/**
 * `new Date(ms).toISOString()` for times that mostly follow each other: the text up to the
 * second is made once per second. A generated backlog dates a record a millisecond after the
 * one before, and a Date per record was a third of a benchmark's main thread.
 */
class IsoTimes {
  private second = Number.NaN;
  private prefix = '';

  at(ms: number): string {
    if (!Number.isInteger(ms)) return new Date(ms).toISOString();
    const second = Math.floor(ms / 1000);
    if (second !== this.second) {
      const iso = new Date(second * 1000).toISOString();
      // Years beyond 9999 (or before 0) are spelled differently: those go through Date each time.
      if (iso.length !== 24) return new Date(ms).toISOString();
      this.second = second;
      this.prefix = iso.slice(0, 20);
    }
    const millis = ms - second * 1000;
    return `${this.prefix}${millis < 10 ? '00' : millis < 100 ? '0' : ''}${millis}Z`;
  }
}

/** The one result every accepted event gets: a benchmark's sink takes millions (frozen, as it is shared). */
const ACCEPTED: WriteResult = Object.freeze({ ok: true as const });

/** A rule that refuses some records. */
interface Rejection {
  match: (event: DestinationEvent) => boolean;
  retryable: boolean;
  /** Refusals left; Infinity for a record that never passes. */
  remaining: number;
  code: string;
}

/**
 * A destination kept in memory: what it received, keyed by event id (so a re-delivery is
 * counted as a duplicate, not stored twice), with faults to inject.
 */
export class MemorySink extends FaultInjection {
  /** Events received, by id (unless created with `keep: false`). */
  readonly events = new Map<string, DestinationEvent>();
  /** Every event id in the order it was accepted, duplicates included (unless `keep: false`). */
  readonly log: string[] = [];
  /** Events accepted, duplicates included. */
  accepted = 0;
  /** Events accepted whose id had been accepted before. */
  duplicates = 0;
  /** Calls of `write`. */
  writes = 0;
  /** Events refused by a rejection rule. */
  rejected = 0;
  /** The most events one `write` was given. */
  largestWrite = 0;
  private readonly rejections: Rejection[] = [];
  private batchLimit = Infinity;

  constructor(
    clock: Clock,
    private readonly keep: boolean,
  ) {
    super(clock);
  }

  /**
   * Refuses the records that match, `times` times each (default: always), with a non-retryable
   * `record_rejected` (or a retryable `record_throttled` when `retryable`).
   */
  reject(match: (event: DestinationEvent) => boolean, options: { times?: number; retryable?: boolean; code?: string } = {}): this {
    const retryable = options.retryable ?? false;
    this.rejections.push({ match, retryable, remaining: options.times ?? Infinity, code: options.code ?? (retryable ? 'record_throttled' : 'record_rejected') });
    return this;
  }

  /** Removes every rejection rule: the cause is fixed. */
  acceptAll(): this {
    this.rejections.length = 0;
    return this;
  }

  /**
   * Refuses every write of more than `max` events as a whole, with a non-retryable
   * `payload_too_large`, as a receiver that caps its request size does (`Infinity` lifts it).
   */
  limitBatch(max: number): this {
    this.batchLimit = max;
    return this;
  }

  /** Payloads received, in the order first received. */
  payloads(): JsonObject[] {
    return [...this.events.values()].map((e) => e.payload);
  }

  /** @internal */
  async write(events: readonly DestinationEvent[], signal: AbortSignal): Promise<WriteResult[]> {
    this.writes++;
    await this.faults(signal, 'sink');
    if (events.length > this.batchLimit) throw new ConnectorError('payload_too_large', `The memory sink takes at most ${this.batchLimit} events a write (fault injected).`, { retryable: false });
    this.largestWrite = Math.max(this.largestWrite, events.length);
    const results: WriteResult[] = new Array(events.length);
    for (let i = 0; i < events.length; i++) {
      const event = events[i]!;
      const rule = this.rejections.length === 0 ? undefined : this.rejections.find((r) => r.remaining > 0 && r.match(event));
      if (rule) {
        rule.remaining--;
        this.rejected++;
        results[i] = { ok: false, error: new ConnectorError(rule.code, `Record ${event.id} refused (fault injected).`, { retryable: rule.retryable }) };
        continue;
      }
      this.accepted++;
      if (this.keep) {
        if (this.events.has(event.id)) this.duplicates++;
        this.events.set(event.id, structuredClone(event));
        this.log.push(event.id);
      }
      results[i] = ACCEPTED;
    }
    return results;
  }
}

/** Options of {@link MemoryHub}. */
export interface MemoryHubOptions {
  /** The clock outages and slow-downs are measured on: pass the engine's (virtual) clock. */
  clock?: Clock;
}

/**
 * The in-memory world the `memory` connector type reads from and writes to: streams and sinks
 * by name, shared between the test (which fills streams and inspects sinks) and the engine.
 *
 * @example
 * ```ts
 * const hub = new MemoryHub({ clock });
 * const engine = await createEngine({ storage, clock, plugins: [memoryConnector(hub)] });
 * hub.stream('orders').push({ type: 'order.created', payload: { id: 1 } });
 * // a pipeline from { name: 'orders' } to { name: 'copy' } ... then:
 * hub.sink('copy').events.size; // 1
 * ```
 */
export class MemoryHub {
  private readonly streams = new Map<string, MemoryStream>();
  private readonly sinks = new Map<string, MemorySink>();
  readonly clock: Clock;

  constructor(options: MemoryHubOptions = {}) {
    this.clock = options.clock ?? systemClock;
  }

  /** The stream named `name` (created empty on first use). */
  stream(name: string): MemoryStream {
    let stream = this.streams.get(name);
    if (!stream) this.streams.set(name, (stream = new MemoryStream(this.clock)));
    return stream;
  }

  /** The sink named `name` (created on first use; `keep: false` counts without keeping events). */
  sink(name: string, options: { keep?: boolean } = {}): MemorySink {
    let sink = this.sinks.get(name);
    if (!sink) this.sinks.set(name, (sink = new MemorySink(this.clock, options.keep ?? true)));
    return sink;
  }
}

/** Config of a `memory` connector. */
export const memoryConfigSchema = Type.Object(
  {
    /** The stream (as a source) or the sink (as a destination) in the hub. */
    name: Type.String({ minLength: 1 }),
    /** How the source hands out records: pulled batch by batch, or pushed to an awaited handler. */
    mode: Type.Optional(Type.Union([Type.Literal('pull'), Type.Literal('push')], { default: 'pull' })),
    /** Records per pushed batch. */
    push_batch_size: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, default: 500 })),
    /**
     * Push mode: hand over the next batch before the last one's handler resolved (two at most),
     * as a replication stream does to have a batch written while the one before commits.
     */
    push_ahead: Type.Optional(Type.Boolean({ default: false })),
    /** A secret, so tests can see that secrets never leak. */
    token: Type.Optional(Secret(Type.String({ minLength: 4 }))),
  },
  { additionalProperties: false },
);

/**
 * The `memory` connector type, over a {@link MemoryHub}: a real plugin (the core drives it like
 * any other) for tests and benchmarks of the runtime, with faults to inject on both sides: a
 * record the destination refuses, an outage for some clock time, a misconfiguration, slowness.
 */
export function memoryConnector(hub: MemoryHub) {
  return defineConnector({
    type: 'memory',
    version: '1.0.0',
    directions: ['source', 'destination'],
    configSchema: memoryConfigSchema,
    async check(ctx) {
      const misconfigured = hub.stream(ctx.config.name).misconfiguration() ?? hub.sink(ctx.config.name).misconfiguration();
      if (misconfigured) return { health: 'down', latencyMs: 0, error: { code: misconfigured, message: 'Misconfigured (fault injected).' } };
      const down = hub.stream(ctx.config.name).isDown() || hub.sink(ctx.config.name).isDown();
      return down ? { health: 'down', latencyMs: 0, error: { code: 'connection_refused', message: 'Down (fault injected).' } } : { health: 'healthy', latencyMs: 0 };
    },
    source(ctx) {
      const stream = hub.stream(ctx.config.name);
      const position = (checkpoint: Checkpoint | null) => (typeof checkpoint === 'number' ? checkpoint : 0);
      if ((ctx.config.mode ?? 'pull') === 'pull') {
        return { read: (checkpoint, max, signal) => stream.read(position(checkpoint), max, signal) };
      }
      const size = ctx.config.push_batch_size ?? 500;
      const ahead = ctx.config.push_ahead ?? false;
      return {
        async consume(from, handler, signal) {
          let next = position(from);
          /** Calls not resolved yet, oldest first, each with the position after its batch. */
          const handed: { done: Promise<void>; end: number }[] = [];
          const settleOldest = async () => {
            const oldest = handed[0]!;
            await oldest.done;
            handed.shift();
          };
          while (!signal.aborted) {
            if (next >= stream.length) {
              while (handed.length > 0) await settleOldest();
              await stream.waitForMore(signal);
              continue;
            }
            const batch = await stream.read(next, size, signal);
            const done = handler(batch);
            const end = batch.checkpoint as number;
            // Recorded as it happens: an out-of-order resolution must show, not be hidden by the awaits below.
            done.then(() => stream.settled(end), () => undefined);
            handed.push({ done, end });
            stream.handed(handed.length);
            next = batch.checkpoint as number;
            while (handed.length >= (ahead ? 2 : 1)) await settleOldest();
          }
        },
      };
    },
    destination(ctx) {
      const sink = hub.sink(ctx.config.name);
      return { write: (events, signal) => sink.write(events, signal) };
    },
  });
}

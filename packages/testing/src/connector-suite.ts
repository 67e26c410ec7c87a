import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { ConnectorError, type Checkpoint, type Source, type ConnectorDirection, type DestinationEvent, type JsonObject, type PipelineConnectorContext, type PushSource, type SourceRecord, type WriteResult } from '@ferry/core';
import { createConnectorOutbound, secretPaths, URL_NOT_ALLOWED, type AnyConnectorDefinition } from '@ferry/core/internal';
import { connectorContext } from './connector-context.js';

/** What a destination holds for one event, as the harness reads it back from the real server. */
export interface LandedEvent {
  id: string;
  type?: string;
  payload?: JsonObject;
}

/** The source side of a connector under test, against its real server. */
export interface SourceHarness {
  /** A config reading a fresh, empty dataset (a new table, topic, prefix ...). */
  config(): Promise<JsonObject>;
  /**
   * Appends records `from .. from + count - 1` to that dataset; each record's payload carries
   * `n`. A source fed through the engine's ingest endpoint appends to `inbox`, the inbox the
   * suite hands that source.
   */
  produce(config: JsonObject, from: number, count: number, inbox: SuiteInbox): Promise<void>;
  /** The `n` a read record carries (where the payload put it). Default: `payload.n`. */
  numberOf?(record: SourceRecord): number;
}

/** The inbox {@link runConnectorSuite} gives a source, standing in for the engine's. */
export interface SuiteInbox {
  append(record: { type: string; payload: JsonObject; occurredAt?: string }): void;
}

/** An inbox in memory: what a source reading `ctx.inbox` sees in the suite. */
class MemoryInbox implements SuiteInbox {
  private readonly records: Array<{ type: string; payload: JsonObject; occurredAt: string }> = [];

  append(record: { type: string; payload: JsonObject; occurredAt?: string }): void {
    this.records.push({ ...record, occurredAt: record.occurredAt ?? new Date(Date.UTC(2026, 0, 1)).toISOString() });
  }

  async read(checkpoint: Checkpoint | null, max: number) {
    const after = typeof checkpoint === 'number' ? checkpoint : 0;
    const slice = this.records.slice(after, after + max);
    return { records: slice.map((r, i) => ({ position: String(after + i + 1), type: r.type, occurredAt: r.occurredAt, payload: r.payload })), checkpoint: after + slice.length };
  }
}

/** The destination side of a connector under test, against its real server. */
export interface DestinationHarness {
  /** A config writing to a fresh, empty place (a new table, topic, prefix ...). */
  config(): Promise<JsonObject>;
  /** Every event that landed, read back from the server. */
  landed(config: JsonObject): Promise<LandedEvent[]>;
  /**
   * An event this destination refuses record by record (a constraint it breaks), with the config
   * to refuse it under; omit when the system has no such thing.
   */
  rejectable?(config: JsonObject): Promise<DestinationEvent>;
  /**
   * What the destination can drop when delivered again: `event` (default) keeps one copy per
   * event id whatever the batch (an upsert on id); `batch` only when the same batch comes again
   * whole (objects named by the batch, as the engine re-reads the same batch after a crash);
   * `none` when the system cannot drop a copy (a Kafka topic): every event lands at least once,
   * and each re-delivered one lands again, which the suite counts.
   */
  idempotence?: 'event' | 'batch' | 'none';
}

/** Everything {@link runConnectorSuite} needs to know about one connector type. */
export interface ConnectorSuiteOptions {
  /** The plugin under test, as registered with an engine. */
  plugin: AnyConnectorDefinition;
  /**
   * The config fields that must be secret (sealed at rest, redacted in answers); a field inside
   * an object is named by its dotted path (`sasl.password`).
   */
  secretFields: readonly string[];
  source?: SourceHarness;
  destination?: DestinationHarness;
  /**
   * A config for `direction` whose server cannot be reached (a closed port): checks say `down`,
   * reads and writes fail with a retryable error.
   */
  unreachable(direction: 'source' | 'destination'): Promise<JsonObject>;
  /**
   * Sides with no server of their own to be unreachable (a webhook source reads the engine's
   * inbox): the suite does not expect them to fail.
   */
  serverless?: ReadonlyArray<'source' | 'destination'>;
  /**
   * The engine allow list the suite's contexts carry, to reach the test servers. Default
   * `['127.0.0.1']`. The suite also proves that without it a config at a loopback server is
   * refused (`url_not_allowed`), at validation and by a check.
   */
  outboundAllow?: readonly string[];
  /**
   * `false` for a connector that opens no connection of its own (an in-memory test double): the
   * outbound policy test is skipped. Default true.
   */
  network?: boolean;
  /** Credential rotation, where the plugin supports it: the config to rotate, and supplied fields if any. */
  rotation?: {
    /** A config to rotate, for `direction`: the new credentials must pass a check of that side. */
    config(): Promise<JsonObject>;
    supplied?(config: JsonObject): Promise<JsonObject>;
    /** Default: `destination` when the suite has a destination harness, else `source`. */
    direction?: 'source' | 'destination';
  };
}

const event = (i: number, extra: Partial<DestinationEvent> = {}): DestinationEvent => ({
  id: `evt_suite_${String(i).padStart(6, '0')}`,
  type: 'suite.event',
  occurredAt: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
  payload: { n: i, label: `event ${i}` },
  ...extra,
});

/**
 * The behaviour every connector plugin must show, run against the real server the caller
 * provides: its config schema marks the secret fields; `check` says healthy, and `down` for an
 * unreachable server; a source reads from a checkpoint and resumes without loss or duplicate; a
 * destination writes a batch, keeps one copy per event id when a batch is delivered again,
 * reports a record it refuses as a non-retryable result while the rest land, and fails the
 * whole batch with a retryable error when its server cannot be reached; and rotation yields
 * credentials that pass a check, where supported.
 *
 * @example
 * ```ts
 * runConnectorSuite('postgres', {
 *   plugin: postgres(),
 *   secretFields: ['connection_string', 'password', 'admin_connection_string'],
 *   source: { config: freshSourceTable, produce: insertRows },
 *   destination: { config: freshDestinationTable, landed: selectRows },
 *   unreachable: async () => ({ connection_string: 'postgres://u:p@127.0.0.1:1/db', table: 't', cursor_column: 'id', type: 't' }),
 * });
 * ```
 */
export function runConnectorSuite(name: string, options: ConnectorSuiteOptions): void {
  const { plugin } = options;
  // One inbox per config object, so a source reads what `produce` appended for it.
  const inboxes = new WeakMap<JsonObject, MemoryInbox>();
  const inboxOf = (config: JsonObject) => {
    let inbox = inboxes.get(config);
    if (!inbox) inboxes.set(config, (inbox = new MemoryInbox()));
    return inbox;
  };
  const allowed = createConnectorOutbound({ allow: options.outboundAllow ?? ['127.0.0.1'] });
  const ctx = (config: JsonObject, direction: ConnectorDirection, signal = new AbortController().signal, outbound = allowed): PipelineConnectorContext<JsonObject> =>
    // As the engine does: schema defaults applied to a copy of the stored config.
    connectorContext(Value.Default(plugin.configSchema, structuredClone(config)) as JsonObject, {
      direction,
      signal,
      inbox: inboxOf(config),
      connectorId: 'con_suite',
      workspaceId: 'suite',
      pipelineId: 'pip_suite',
      outbound,
    });
  const pluginProblems = (config: JsonObject, direction: ConnectorDirection, outbound = allowed): Array<{ pointer: string; code: string }> =>
    plugin.validateConfig?.(Value.Default(plugin.configSchema, structuredClone(config)), direction, outbound) ?? [];
  const problems = (config: JsonObject, direction: ConnectorDirection) => [
    ...[...Value.Errors(plugin.configSchema, Value.Default(plugin.configSchema, structuredClone(config)))].map((e) => e.path),
    ...pluginProblems(config, direction).map((p) => p.pointer),
  ];

  describe(`connector suite: ${name}`, () => {
    it('marks its secret fields in the config schema', () => {
      // The paths the engine itself seals and redacts, found as it finds them.
      const secret = secretPaths(plugin.configSchema).map((path) => path.join('.'));
      expect(secret.sort()).toEqual([...options.secretFields].sort());
    });

    it('checks: healthy against the real server, down (with a reason and no secret) when unreachable', async () => {
      expect(plugin.check, 'the plugin implements check').toBeTypeOf('function');
      const harness = options.destination ?? options.source!;
      const direction = options.destination ? 'destination' : 'source';
      const good = await harness.config();
      expect((await plugin.check!(ctx(good, direction))).health).toBe('healthy');
      const bad = await options.unreachable(direction);
      const result = await plugin.check!(ctx(bad, direction));
      expect(result.health).toBe('down');
      expect(result.error?.code).toMatch(/^[a-z_]+$/);
      for (const field of options.secretFields) {
        const value = valueAt(bad, field);
        if (typeof value === 'string' && value.length >= 4) expect(result.error?.message ?? '').not.toContain(value);
      }
    });

    const policySide = options.destination && !options.serverless?.includes('destination') ? 'destination' : 'source';
    if (options.network !== false && !options.serverless?.includes(policySide)) it('outbound policy: a loopback server is refused without the allow list, at validation and by a check', async () => {
      const direction = policySide;
      const strict = createConnectorOutbound({ allow: [] });
      const config = await options.unreachable(direction);
      const refused = pluginProblems(config, direction, strict).filter((p) => p.code === URL_NOT_ALLOWED);
      expect(refused.length, 'validateConfig reports the loopback host as url_not_allowed').toBeGreaterThan(0);
      if (plugin.check) {
        const result = await plugin.check(ctx(config, direction, new AbortController().signal, strict));
        expect(result.health).toBe('down');
        expect(result.error?.code).toBe(URL_NOT_ALLOWED);
      }
    });

    if (options.source) {
      const source = options.source;
      const numberOf = source.numberOf ?? ((r: SourceRecord) => Number((r.payload as { n?: unknown }).n));
      const open = async (config: JsonObject) => {
        expect(problems(config, 'source')).toEqual([]);
        return plugin.source!(ctx(config, 'source'));
      };
      /**
       * Reads after `from` until `want` records came: a pull source `max` at a time until caught
       * up (and no further), a push source until its handler has seen `want` records, when the
       * consumption is ended as the engine ends it (its signal aborted).
       */
      const drain = async (reader: Source, from: Checkpoint | null, max: number, want: number) => {
        const records: SourceRecord[] = [];
        let checkpoint = from;
        if (isPush(reader)) {
          const done = new AbortController();
          await reader.consume(
            from,
            async (batch) => {
              expect(done.signal.aborted, 'no batch is handed over after the signal aborted').toBe(false);
              records.push(...batch.records);
              checkpoint = batch.checkpoint;
              if (records.length >= want) done.abort();
            },
            done.signal,
          );
          return { records, checkpoint };
        }
        for (let round = 0; round < 1000; round++) {
          const batch = await reader.read(checkpoint, max, new AbortController().signal);
          expect(batch.records.length).toBeLessThanOrEqual(max);
          if (batch.records.length === 0) return { records, checkpoint };
          records.push(...batch.records);
          checkpoint = batch.checkpoint;
        }
        throw new Error('the source never caught up');
      };

      it('source: reads from a checkpoint and resumes after a restart without loss or duplicate', async () => {
        const config = await source.config();
        await source.produce(config, 0, 25, inboxOf(config));
        const first = await open(config);
        // A pull source reads one batch of 10; a push source hands over batches of its own size
        // and is ended once it handed over 10 or more.
        const batch = isPush(first) ? await drain(first, null, 10, 10) : await first.read(null, 10, new AbortController().signal);
        const head = batch.records.length;
        if (!isPush(first)) expect(head).toBe(10);
        expect(batch.records.map(numberOf)).toEqual([...Array(head).keys()]);
        await first.close?.();
        // A restart: a new source from the committed checkpoint.
        const second = await open(config);
        const rest = await drain(second, batch.checkpoint, 7, 25 - head);
        expect(rest.records.map(numberOf)).toEqual([...Array(25 - head).keys()].map((i) => i + head));
        const positions = [...batch.records, ...rest.records].map((r) => r.position);
        expect(new Set(positions).size).toBe(25);
        for (const r of rest.records) {
          expect(typeof r.type).toBe('string');
          expect(r.type.length).toBeGreaterThan(0);
        }
        // New records after catching up are read, and only they.
        await source.produce(config, 25, 5, inboxOf(config));
        const more = await drain(second, rest.checkpoint, 100, 5);
        expect(more.records.map(numberOf)).toEqual([25, 26, 27, 28, 29]);
        // Reading again from the same checkpoint yields the same positions (ids are derived from them).
        const again = await drain(second, rest.checkpoint, 100, 5);
        expect(again.records.map((r) => r.position)).toEqual(more.records.map((r) => r.position));
        await second.close?.();
      }, 120_000);

      if (!options.serverless?.includes('source')) it('source: an unreachable server is a retryable error', async () => {
        const config = await options.unreachable('source');
        let error: unknown;
        try {
          const opened = await plugin.source!(ctx(config, 'source'));
          if (isPush(opened)) await opened.consume(null, async () => undefined, new AbortController().signal);
          else await opened.read(null, 10, new AbortController().signal);
          await opened.close?.();
        } catch (e) {
          error = e;
        }
        expect(error).toBeInstanceOf(ConnectorError);
        expect((error as ConnectorError).retryable).toBe(true);
      }, 120_000);
    }

    if (options.destination) {
      const destination = options.destination;
      const open = async (config: JsonObject) => {
        expect(problems(config, 'destination')).toEqual([]);
        return plugin.destination!(ctx(config, 'destination'));
      };
      const ok = (results: WriteResult[]) => results.filter((r) => r.ok).length;

      it(
        destination.idempotence === 'none'
          ? 'destination: writes a batch, and a batch delivered again lands again (counted: the system cannot drop it)'
          : 'destination: writes a batch, and a batch delivered again leaves one copy per event id',
        async () => {
        const config = await destination.config();
        const writer = await open(config);
        const batch = Array.from({ length: 20 }, (_, i) => event(i));
        expect(ok(await writer.write(batch, new AbortController().signal))).toBe(20);
        // Re-delivery after a crash: the same ids, part of them again (or, for a destination
        // that dedupes whole batches, the same batch again).
        const again = destination.idempotence === 'batch' ? batch : batch.slice(5, 15);
        expect(ok(await writer.write(again, new AbortController().signal))).toBe(again.length);
        const landed = await destination.landed(config);
        if (destination.idempotence === 'none') {
          // At least once: every event, and a second copy of each one delivered again.
          expect([...new Set(landed.map((e) => e.id))].sort()).toEqual(batch.map((e) => e.id).sort());
          expect(landed.length - batch.length).toBe(again.length);
        } else expect(landed.map((e) => e.id).sort()).toEqual(batch.map((e) => e.id).sort());
        const byId = new Map(landed.map((e) => [e.id, e]));
        if (byId.get(batch[3]!.id)?.payload) expect(byId.get(batch[3]!.id)!.payload).toMatchObject({ n: 3 });
        await writer.close?.();
      });

      if (destination.rejectable) {
        it('destination: a record it refuses is a non-retryable result, and the rest land', async () => {
          const config = await destination.config();
          const bad = await destination.rejectable!(config);
          const writer = await open(config);
          const results = await writer.write([event(1), bad, event(2)], new AbortController().signal);
          expect(results.map((r) => r.ok)).toEqual([true, false, true]);
          const refused = results[1] as { ok: false; error: ConnectorError };
          expect(refused.error).toBeInstanceOf(ConnectorError);
          expect(refused.error.retryable).toBe(false);
          expect((await destination.landed(config)).map((e) => e.id).sort()).toEqual([event(1).id, event(2).id]);
          await writer.close?.();
        });
      }

      it('destination: an unreachable server fails the batch with a retryable error', async () => {
        const config = await options.unreachable('destination');
        let error: unknown;
        try {
          const writer = await plugin.destination!(ctx(config, 'destination'));
          await writer.write([event(1)], new AbortController().signal);
          await writer.close?.();
        } catch (e) {
          error = e;
        }
        expect(error).toBeInstanceOf(ConnectorError);
        expect((error as ConnectorError).retryable).toBe(true);
      });
    }

    if (options.rotation) {
      const rotation = options.rotation;
      it('rotation: the new credentials pass a check', async () => {
        expect(plugin.rotate, 'the plugin implements rotate').toBeTypeOf('function');
        const config = await rotation.config();
        const supplied = rotation.supplied ? await rotation.supplied(config) : undefined;
        const direction = rotation.direction ?? (options.destination ? 'destination' : 'source');
        const fields = await plugin.rotate!(ctx(config, direction), supplied ? { config: supplied } : {});
        const rotated = { ...config, ...fields };
        for (const key of Object.keys(fields)) expect(options.secretFields).toContain(key);
        expect((await plugin.check!(ctx(rotated, direction))).health).toBe('healthy');
      });
    }
  });
}

/** A push source hands batches to a handler; a pull source is read. */
function isPush(source: Source): source is PushSource {
  return typeof (source as Partial<PushSource>).consume === 'function';
}

/** The value at a dotted path of a config (`sasl.password`), if any. */
function valueAt(config: JsonObject, path: string): unknown {
  let current: unknown = config;
  for (const key of path.split('.')) {
    if (current === null || typeof current !== 'object' || Array.isArray(current)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

import { Type, type Static } from '@sinclair/typebox';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { systemClock, silentLogger } from '../common/index.js';
import { createConnectorOutbound } from '../net/index.js';
import { secretPaths } from './config-secrets.js';
import { ConnectorError } from './connector-error.js';
import { defineConnector, defineTransform, isConnectorDefinition } from './define.js';
import { Secret } from './secret.js';
import type {
  CheckResult,
  ConnectorContext,
  ConnectorDefinition,
  Destination,
  DestinationEvent,
  PipelineConnectorContext,
  PullSource,
  Source,
  SourceBatch,
  TransformContext,
  TransformEvent,
  TransformOutcome,
  WriteResult,
} from './types.js';

const emptyInbox = { read: async (checkpoint: unknown) => ({ records: [], checkpoint: (checkpoint ?? null) as never }) };

/*
 * The point of this file is what a third-party plugin author sees: every config access below is
 * typed from the TypeBox schema alone, with no casts and no annotations on the callbacks.
 * The `expectTypeOf` assertions and `@ts-expect-error` lines are checked by
 * `tsc -p packages/core/tsconfig.json --noEmit`; the runtime assertions check that each callback
 * actually ran, so the type assertions inside them are not dead code.
 */

const ConfigSchema = Type.Object({
  host: Type.String(),
  port: Type.Optional(Type.Integer()),
  password: Secret(Type.String()),
});

type ExpectedConfig = { host: string; port?: number; password: string };

const calls: string[] = [];

const thirdParty = defineConnector({
  type: 'third-party',
  version: '1.2.3',
  directions: ['source', 'destination'],
  configSchema: ConfigSchema,
  async check(ctx) {
    expectTypeOf(ctx.config).toEqualTypeOf<ExpectedConfig>();
    expectTypeOf(ctx.config.password).toEqualTypeOf<string>();
    expectTypeOf(ctx.config.port).toEqualTypeOf<number | undefined>();
    // @ts-expect-error `username` is not part of the schema
    void ctx.config.username;
    // @ts-expect-error `host` is a string, not a number
    const wrong: number = ctx.config.host;
    void wrong;
    calls.push(`check:${ctx.config.host}:${ctx.config.port ?? 5432}`);
    return { health: 'healthy', latencyMs: 1 };
  },
  source(ctx) {
    expectTypeOf(ctx.config).toEqualTypeOf<ExpectedConfig>();
    expectTypeOf(ctx.pipelineId).toEqualTypeOf<string>();
    // @ts-expect-error `database` is not part of the schema
    void ctx.config.database;
    calls.push(`source:${ctx.pipelineId}`);
    const source: PullSource = {
      read: async (checkpoint, max) => ({
        records: [{ position: '1', type: 'row.read', payload: { host: ctx.config.host, max, from: checkpoint } }],
        checkpoint: '1',
      }),
    };
    return source;
  },
  destination(ctx) {
    expectTypeOf(ctx.config).toEqualTypeOf<ExpectedConfig>();
    expectTypeOf(ctx.config.password).toEqualTypeOf<string>();
    calls.push(`destination:${ctx.config.password.length}`);
    return {
      async write(events) {
        expectTypeOf(events).toEqualTypeOf<readonly DestinationEvent[]>();
        return events.map((e) => (e.type === 'bad' ? { ok: false, error: new ConnectorError('record_rejected', 'rejected', { retryable: false }) } : { ok: true }));
      },
    };
  },
  async rotate(ctx, input) {
    expectTypeOf(ctx.config).toEqualTypeOf<ExpectedConfig>();
    expectTypeOf(input.config).toEqualTypeOf<Partial<ExpectedConfig> | undefined>();
    calls.push('rotate');
    return { password: input.config?.password ?? 'generated' };
  },
});

describe('defineConnector', () => {
  it('infers the config type of every context from the schema', () => {
    expectTypeOf(thirdParty).toEqualTypeOf<ConnectorDefinition<typeof ConfigSchema>>();
    expectTypeOf<Static<typeof ConfigSchema>>().toEqualTypeOf<ExpectedConfig>();
    type CheckCtx = Parameters<NonNullable<typeof thirdParty.check>>[0];
    type SourceCtx = Parameters<NonNullable<typeof thirdParty.source>>[0];
    type DestinationCtx = Parameters<NonNullable<typeof thirdParty.destination>>[0];
    expectTypeOf<CheckCtx>().toEqualTypeOf<ConnectorContext<ExpectedConfig>>();
    expectTypeOf<SourceCtx>().toEqualTypeOf<PipelineConnectorContext<ExpectedConfig>>();
    expectTypeOf<DestinationCtx>().toEqualTypeOf<PipelineConnectorContext<ExpectedConfig>>();
    expectTypeOf<ReturnType<NonNullable<typeof thirdParty.check>>>().toEqualTypeOf<Promise<CheckResult>>();
    expectTypeOf<ReturnType<NonNullable<typeof thirdParty.source>>>().toEqualTypeOf<Source | Promise<Source>>();
  });

  it('keeps the type of a Secret-wrapped field, whatever its shape', () => {
    const S = Type.Object({
      token: Secret(Type.String()),
      pin: Secret(Type.Integer()),
      keys: Secret(Type.Array(Type.String())),
      nested: Secret(Type.Object({ id: Type.String(), secret: Type.String() })),
      maybe: Type.Optional(Secret(Type.Boolean())),
    });
    expectTypeOf<Static<typeof S>>().toEqualTypeOf<{
      token: string;
      pin: number;
      keys: string[];
      nested: { id: string; secret: string };
      maybe?: boolean;
    }>();
    // The marker is still there at runtime.
    expect(secretPaths(S).map((p) => p.join('.')).sort()).toEqual(['keys', 'maybe', 'nested', 'pin', 'token']);
  });

  it('requires write to return WriteResult[]', () => {
    expectTypeOf<ReturnType<Destination['write']>>().toEqualTypeOf<Promise<WriteResult[]>>();
    defineConnector({
      type: 'bad-write',
      version: '0.0.1',
      directions: ['destination'],
      configSchema: Type.Object({}),
      // @ts-expect-error a write must return one WriteResult per event, not strings
      destination: () => ({
        write: async (events) => events.map((e) => e.id),
      }),
    });
    defineConnector({
      type: 'bad-write-2',
      version: '0.0.1',
      directions: ['destination'],
      configSchema: Type.Object({}),
      // @ts-expect-error `ok` is a boolean literal, not a string
      destination: () => ({
        write: async () => [{ ok: 'yes' }],
      }),
    });
    const okResult: WriteResult = { ok: true };
    // @ts-expect-error a failed result must carry its error
    const missingError: WriteResult = { ok: false };
    expect([okResult, missingError]).toHaveLength(2);
  });

  it('refuses a config schema that is not an object schema', () => {
    defineConnector({
      type: 'bad-schema',
      version: '0.0.1',
      directions: ['source'],
      // @ts-expect-error a connector's config schema must be a TypeBox object
      configSchema: Type.String(),
    });
    expect(true).toBe(true);
  });

  it('returns a frozen copy that keeps every member and runs with a typed context', async () => {
    expect(Object.isFrozen(thirdParty)).toBe(true);
    expect(thirdParty.type).toBe('third-party');
    expect(thirdParty.configSchema).toBe(ConfigSchema);
    expect(isConnectorDefinition(thirdParty)).toBe(true);

    calls.length = 0;
    const config: Static<typeof ConfigSchema> = { host: 'db.example.com', password: 'hunter22' };
    const base = {
      config,
      connectorId: 'con_1',
      workspaceId: 'ws_1',
      direction: 'source' as const,
      logger: silentLogger,
      clock: systemClock,
      signal: new AbortController().signal,
      outbound: createConnectorOutbound(),
    };
    await expect(thirdParty.check!(base)).resolves.toEqual({ health: 'healthy', latencyMs: 1 });
    const source = (await thirdParty.source!({ ...base, pipelineId: 'pip_1', inbox: emptyInbox })) as PullSource;
    const batch: SourceBatch = await source.read(null, 10, base.signal);
    expect(batch.records[0]?.payload).toEqual({ host: 'db.example.com', max: 10, from: null });
    const destination = await thirdParty.destination!({ ...base, pipelineId: 'pip_1', inbox: emptyInbox });
    const results = await destination.write(
      [
        { id: 'evt_1', type: 'good', occurredAt: '2026-11-22T10:00:00.000Z', payload: {} },
        { id: 'evt_2', type: 'bad', occurredAt: '2026-11-22T10:00:00.000Z', payload: {} },
      ],
      base.signal,
    );
    expect(results.map((r) => r.ok)).toEqual([true, false]);
    await expect(thirdParty.rotate!(base, {})).resolves.toEqual({ password: 'generated' });
    expect(calls).toEqual(['check:db.example.com:5432', 'source:pip_1', 'destination:8', 'rotate']);
  });
});

const StepSchema = Type.Object({
  type: Type.Literal('upper'),
  path: Type.String(),
  times: Type.Optional(Type.Integer()),
});

type ExpectedStep = { type: 'upper'; path: string; times?: number };

const upper = defineTransform({
  type: 'upper',
  schema: StepSchema,
  validate(step) {
    expectTypeOf(step).toEqualTypeOf<ExpectedStep>();
    return step.path === '' ? [{ pointer: '/path', code: 'too_short', detail: 'path must not be empty' }] : [];
  },
  apply(event, step, ctx) {
    expectTypeOf(event).toEqualTypeOf<TransformEvent>();
    expectTypeOf(step).toEqualTypeOf<ExpectedStep>();
    expectTypeOf(step.type).toEqualTypeOf<'upper'>();
    expectTypeOf(ctx).toEqualTypeOf<TransformContext>();
    // @ts-expect-error `value` is not part of the step schema
    void step.value;
    const current = event.payload[step.path];
    if (typeof current !== 'string') return null;
    return { ...event, payload: { ...event.payload, [step.path]: current.toUpperCase().repeat(step.times ?? 1) } };
  },
});

describe('defineTransform', () => {
  it('infers the step type in apply and validate', () => {
    expectTypeOf<Parameters<typeof upper.apply>[1]>().toEqualTypeOf<ExpectedStep>();
    expectTypeOf<ReturnType<typeof upper.apply>>().toEqualTypeOf<TransformOutcome | Promise<TransformOutcome>>();
    defineTransform({
      type: 'broken',
      schema: StepSchema,
      // @ts-expect-error apply must return an event or null
      apply: () => 'not an event',
    });
  });

  it('returns a frozen copy that applies with the typed step', async () => {
    expect(Object.isFrozen(upper)).toBe(true);
    expect(isConnectorDefinition(upper)).toBe(false);
    const event: TransformEvent = { id: 'evt_1', type: 't', occurredAt: '2026-11-22T10:00:00.000Z', payload: { name: 'ab' } };
    const ctx: TransformContext = { pipelineId: 'pip_1', workspaceId: 'ws_1', salt: 's' };
    const out = await upper.apply(event, { type: 'upper', path: 'name', times: 2 }, ctx);
    expect(out?.payload).toEqual({ name: 'ABAB' });
    expect(await upper.apply(event, { type: 'upper', path: 'missing' }, ctx)).toBeNull();
    expect(upper.validate?.({ type: 'upper', path: '' })).toEqual([{ pointer: '/path', code: 'too_short', detail: 'path must not be empty' }]);
  });
});

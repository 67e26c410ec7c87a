import { describe, expect, it } from 'vitest';
import { systemClock } from '../common/index.js';
import { ConnectorError, PluginRegistry, type Destination, type DestinationEvent, type WriteResult } from '../plugin-api/index.js';
import { builtinTransforms } from './transforms/index.js';
import { processItems, type ItemResult, type WorkItem } from './event-processor.js';
import { FlowError } from './flow-error.js';
import { TransformChain } from './transform-chain.js';

const registry = new PluginRegistry([], builtinTransforms);
const chain = (steps: { type: string; [k: string]: unknown }[]) => new TransformChain(steps as never, registry, { pipelineId: 'pip_x', workspaceId: 'w', salt: 's' });
const item = (n: number, payload: Record<string, unknown> = { n }): WorkItem => ({
  event: { id: `evt_${n}`, type: 't', occurredAt: '2026-01-01T00:00:00.000Z', payload: payload as never },
  fromStep: 0,
  attemptsBefore: 0,
});

/** A destination that answers with `answer` per event and records each call. */
function destination(answer: (event: DestinationEvent, call: number) => WriteResult | 'throw'): Destination & { calls: string[][] } {
  const calls: string[][] = [];
  return {
    calls,
    async write(events) {
      calls.push(events.map((e) => e.id));
      return events.map((e) => {
        const a = answer(e, calls.length);
        if (a === 'throw') throw new ConnectorError('connection_refused', 'down', { retryable: true });
        return a;
      });
    },
  };
}

const deps = (c: TransformChain, d: Destination, maxAttempts = 3) => ({
  chain: c,
  destination: d,
  maxAttempts,
  clock: systemClock,
  // No wait between attempts: these tests are about counts, not time.
  recordRetry: { baseMs: 0, capMs: 0 },
  scrub: (t: string) => t.replaceAll('secret-value', '********'),
});

describe('processItems', () => {
  it('dead-letters an event whose step throws, at that step, after maxAttempts, and writes the others', async () => {
    const d = destination(() => ({ ok: true }));
    const results = await processItems([item(1, { v: '1' }), item(2, { v: 'secret-value' })], deps(chain([{ type: 'set', path: 'x', value: 1 }, { type: 'cast', path: 'v', to: 'number' }]), d), new AbortController().signal);
    expect(results[0]).toMatchObject({ status: 'delivered', attempts: 1, event: { payload: { v: 1, x: 1 } } });
    expect(results[1]).toMatchObject({ status: 'dead_lettered', stage: 'transform:1', attempts: 3, event: { payload: { v: 'secret-value', x: 1 } } });
    expect((results[1] as { message: string }).message).not.toContain('secret-value');
    expect(d.calls).toEqual([['evt_1']]);
  });

  it('tries a refused record again, alone, up to maxAttempts, then dead-letters it at the destination', async () => {
    const d = destination((e) => (e.id === 'evt_2' ? { ok: false, error: new ConnectorError('record_rejected', 'no', { retryable: false }) } : { ok: true }));
    const results = await processItems([item(1), item(2), item(3)], deps(chain([]), d, 4), new AbortController().signal);
    expect(results.map((r) => r.status)).toEqual(['delivered', 'dead_lettered', 'delivered']);
    expect(results[1]).toMatchObject({ stage: 'destination', code: 'record_rejected', attempts: 4 });
    expect(d.calls).toEqual([['evt_1', 'evt_2', 'evt_3'], ['evt_2'], ['evt_2'], ['evt_2']]);
  });

  it('delivers a record refused with a retryable error once it passes, counting its attempts', async () => {
    const d = destination((e, call) => (e.id === 'evt_1' && call < 3 ? { ok: false, error: new ConnectorError('record_throttled', 'later', { retryable: true }) } : { ok: true }));
    const [result] = await processItems([item(1)], deps(chain([]), d), new AbortController().signal);
    expect(result).toMatchObject({ status: 'delivered', attempts: 3 });
  });

  it('filters without writing, and starts a replayed event at its step (or straight at the destination)', async () => {
    const d = destination(() => ({ ok: true }));
    const c = chain([{ type: 'filter', path: 'n', op: 'gt', value: 1 }, { type: 'set', path: 'x', value: 1 }]);
    const results = await processItems([item(1), { ...item(2), fromStep: 1, attemptsBefore: 3 }, { ...item(0), fromStep: 2 }], deps(c, d), new AbortController().signal);
    expect(results.map((r) => r.status)).toEqual(['filtered', 'delivered', 'delivered']);
    expect(results[1]).toMatchObject({ attempts: 4, event: { payload: { n: 2, x: 1 } } });
    expect(results[2]!.event.payload).toEqual({ n: 0 });
    expect(d.calls).toEqual([['evt_2', 'evt_0']]);
  });

  it('throws a whole-batch failure as a retryable FlowError, and a wrong number of results as a non-retryable one', async () => {
    await expect(processItems([item(1)], deps(chain([]), destination(() => 'throw')), new AbortController().signal)).rejects.toMatchObject({ stage: 'destination', code: 'connection_refused', retryable: true });
    const short: Destination = { write: async () => [] };
    const error = await processItems([item(1)], deps(chain([]), short), new AbortController().signal).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FlowError);
    expect(error).toMatchObject({ code: 'invalid_write_result', retryable: false, reason: 'destination_unavailable' });
  });

  it('writes at most maxWrite events a call, in order', async () => {
    const d = destination(() => ({ ok: true }));
    const results = await processItems([1, 2, 3, 4, 5].map((n) => item(n)), { ...deps(chain([]), d), maxWrite: 2 }, new AbortController().signal);
    expect(results.every((r) => r.status === 'delivered')).toBe(true);
    expect(d.calls).toEqual([['evt_1', 'evt_2'], ['evt_3', 'evt_4'], ['evt_5']]);
  });

  it('an attempt after a whole-batch failure does not write again what an earlier one delivered, and re-runs the rest with its own steps', async () => {
    let failing = true;
    const d = destination((e) => (failing && e.id === 'evt_3' ? 'throw' : { ok: true }));
    const carried: Array<ItemResult | undefined> = [];
    const items = [1, 2, 3, 4].map((n) => item(n));
    await expect(processItems(items, { ...deps(chain([]), d), maxWrite: 2, carried }, new AbortController().signal)).rejects.toBeInstanceOf(FlowError);
    expect(carried.filter((r) => r?.status === 'delivered')).toHaveLength(2);
    failing = false;
    // The steps changed between the attempts: only the events not yet delivered get them.
    const results = await processItems(items, { ...deps(chain([{ type: 'set', path: 'fixed', value: true }]), d), maxWrite: 2, carried }, new AbortController().signal);
    expect(d.calls).toEqual([['evt_1', 'evt_2'], ['evt_3', 'evt_4'], ['evt_3', 'evt_4']]);
    expect(results.map((r) => r.status)).toEqual(['delivered', 'delivered', 'delivered', 'delivered']);
    expect(results.map((r) => (r.event.payload as { fixed?: boolean }).fixed)).toEqual([undefined, undefined, true, true]);
  });
});

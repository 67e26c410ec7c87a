import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { defineTransform, PluginRegistry, type TransformEvent } from '../plugin-api/index.js';
import { builtinTransforms } from './transforms/index.js';
import { TransformChain } from './transform-chain.js';

/** A plugin step that answers with a promise, failing its first `failures` attempts of each event (by throwing or by rejecting). */
function flakyAsync(failures: number, how: 'throw' | 'reject') {
  const seen = new Map<string, number>();
  return defineTransform({
    type: `flaky_${how}`,
    schema: Type.Object({ type: Type.Literal(`flaky_${how}`) }),
    apply(event) {
      const n = (seen.get(event.id) ?? 0) + 1;
      seen.set(event.id, n);
      if (n <= failures) {
        if (how === 'throw') throw new Error(`attempt ${n}`);
        return Promise.reject(new Error(`attempt ${n}`));
      }
      return Promise.resolve(event.payload.drop ? null : { ...event, payload: { ...event.payload, async: n } });
    },
  });
}

const event = (id: string, payload: Record<string, unknown> = {}): TransformEvent => ({ id, type: 't', occurredAt: '2026-01-01T00:00:00.000Z', payload: payload as never });
const chainOf = (steps: { type: string; [k: string]: unknown }[], ...extra: ReturnType<typeof flakyAsync>[]) =>
  new TransformChain(steps as never, new PluginRegistry([], [...builtinTransforms, ...extra]), { pipelineId: 'pip_x', workspaceId: 'w', salt: 's' });

describe('TransformChain', () => {
  it('answers synchronously while every step does', () => {
    const outcome = chainOf([{ type: 'set', path: 'x', value: 1 }, { type: 'rename', from: 'x', to: 'y' }]).apply(event('evt_1', { a: 1 }), 0, 3);
    expect(outcome).not.toBeInstanceOf(Promise);
    expect(outcome).toEqual({ kind: 'passed', event: event('evt_1', { a: 1, y: 1 }) });
  });

  it.each(['throw', 'reject'] as const)('tries an asynchronous step that fails (%s) again, then runs the steps after it', async (how) => {
    const chain = chainOf([{ type: 'set', path: 'x', value: 1 }, { type: `flaky_${how}` }, { type: 'rename', from: 'x', to: 'z' }], flakyAsync(2, how));
    const outcome = chain.apply(event('evt_1'), 0, 3);
    expect(outcome).toBeInstanceOf(Promise);
    expect(await outcome).toEqual({ kind: 'passed', event: event('evt_1', { z: 1, async: 3 }) });
  });

  it.each(['throw', 'reject'] as const)('reports an asynchronous step that keeps failing (%s) at its index with its attempts and its input', async (how) => {
    const chain = chainOf([{ type: 'set', path: 'x', value: 1 }, { type: `flaky_${how}` }], flakyAsync(5, how));
    const outcome = await chain.apply(event('evt_1'), 0, 3);
    expect(outcome).toMatchObject({ kind: 'failed', step: 1, attempts: 3, event: event('evt_1', { x: 1 }) });
    expect((outcome as { error: Error }).error.message).toBe('attempt 3');
  });

  it('reports an event an asynchronous step drops as filtered at that step', async () => {
    const outcome = await chainOf([{ type: 'flaky_reject' }, { type: 'set', path: 'x', value: 1 }], flakyAsync(0, 'reject')).apply(event('evt_1', { drop: true }), 0, 3);
    expect(outcome).toEqual({ kind: 'filtered', event: event('evt_1', { drop: true }), step: 0 });
  });
});

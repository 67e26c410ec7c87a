import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine, generateSecretKey, sqliteStorage, type Engine, type Pipeline } from '@ferry/core';
import { MemoryHub, memoryConnector, VirtualClock } from '@ferry/testing';

/** The workspace every memory pipeline lives in. */
export const WS = 'default';

const started: Engine[] = [];

/** What {@link startMemoryPipeline} made: the engine, its clock, the memory hub, and the active pipeline. */
export interface MemoryPipeline {
  engine: Engine;
  clock: VirtualClock;
  hub: MemoryHub;
  pipeline: Pipeline;
}

/**
 * A started engine on a SQLite file and a virtual clock, with an active pipeline from the memory
 * stream `in` to the memory sink `out` (small batches, a 10 ms flush interval). Stop every engine
 * it started with {@link stopMemoryEngines}, in `afterEach`.
 */
export async function startMemoryPipeline(options: { name: string; schedule?: string | null; batchSize?: number }): Promise<MemoryPipeline> {
  const clock = new VirtualClock(undefined, { settleRealMs: 1 });
  const hub = new MemoryHub({ clock });
  const engine = await createEngine({
    storage: sqliteStorage({ filename: join(mkdtempSync(join(tmpdir(), `ferry-${options.name}-`)), 'ferry.db') }),
    clock,
    secretKey: generateSecretKey(),
    plugins: [memoryConnector(hub)],
  });
  await engine.start();
  started.push(engine);
  const source = await engine.connectors.create(WS, { type: 'memory', direction: 'source', config: { name: 'in' } });
  const destination = await engine.connectors.create(WS, { type: 'memory', direction: 'destination', config: { name: 'out' } });
  const pipeline = await engine.pipelines.create(WS, {
    name: options.name,
    source_connector_id: source.id,
    destination_connector_id: destination.id,
    activate: true,
    batch_size: options.batchSize ?? 100,
    flush_interval_ms: 10,
    schedule: options.schedule ?? null,
  });
  return { engine, clock, hub, pipeline };
}

/** Stops the engines {@link startMemoryPipeline} started. */
export async function stopMemoryEngines(): Promise<void> {
  await Promise.all(started.splice(0).map((e) => e.stop()));
}

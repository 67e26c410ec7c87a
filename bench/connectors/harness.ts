/**
 * What the connector benchmarks share: the workload (BENCH_CONNECTORS_EVENTS small orders, in
 * batches of BENCH_CONNECTORS_BATCH), an engine on SQLite in a scratch folder, and a real-time
 * wait. Each `*.bench.ts` here measures one plugin against its raw client.
 */
import { join } from 'node:path';
import { createEngine, generateSecretKey, sqliteStorage, type Engine, type FerryPlugin, type Logger } from '@ferry/core';
import { memoryConnector, type MemoryHub, type MemoryRecordInput } from '@ferry/testing';

/** Events per case (default 200,000). */
export const EVENTS = Number(process.env.BENCH_CONNECTORS_EVENTS ?? 200_000);
/** Events per batch, for the engine and the raw clients alike (default 1,000). */
export const BATCH = Number(process.env.BENCH_CONNECTORS_BATCH ?? 1000);
/** The workspace the engines use. */
export const WS = 'default';
/** A bench is bounded in time: a wait longer than this fails it. */
const DEADLINE_MS = 600_000;

/** Progress on stderr, so stdout holds only the JSON lines. */
export const log = (message: string) => console.error(`connectors bench: ${message}`);

/** Event `i`'s payload: a small order, about 100 bytes of JSON. */
export const record = (i: number) => ({ order_id: i, sku: `SKU-${i % 10_000}`, amount: i % 1000, currency: 'EUR', customer: { email: `c${i}@example.com` } });

/**
 * The records of a destination case, built before its timing starts, each with its own time:
 * the raw client's side builds its messages up front too, so neither side's figure includes
 * making the workload (made while reading, it was an eighth of the engine's time). Given to
 * `MemoryStream.generate` as `(i) => records[i]`.
 */
export function prebuiltRecords(count: number): MemoryRecordInput[] {
  const t0 = Date.UTC(2026, 0, 1);
  return Array.from({ length: count }, (_, i) => ({ type: 'bench.event', payload: record(i), occurredAt: new Date(t0 + i).toISOString() }));
}

/** Waits in real time (20 ms steps) until `check` holds. */
export async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = performance.now() + DEADLINE_MS;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * A started engine on a new SQLite file in `dir`, with the memory connector of `hub` and
 * `plugins`; `logger` sees what the engine logs (default: nothing), for a bench that counts
 * what the engine reports, such as its flows held.
 */
export async function startEngine(hub: MemoryHub, dir: string, plugins: readonly FerryPlugin[], logger?: Logger): Promise<Engine> {
  const engine = await createEngine({
    ...(logger ? { logger } : {}),
    storage: sqliteStorage({ filename: join(dir, `ferry-${Math.random().toString(36).slice(2)}.db`) }),
    secretKey: generateSecretKey(),
    plugins: [memoryConnector(hub), ...plugins],
    webhookDelivery: false,
    // The test servers listen on 127.0.0.1 over plain http, which the outbound policy refuses unless allowed.
    outboundAllow: ['127.0.0.1', 'localhost'],
  });
  await engine.start();
  return engine;
}

/**
 * One engine of the scaling benchmark, in a process of its own (started by scaling.bench.ts): a
 * pipeline-running engine with the postgres plugin on the storage BENCH_SCALING_STORAGE_URL,
 * polling every 500 ms so it sees pipelines activated by the benchmark's API-only engine soon.
 * It says `ready` over IPC once started, and on `stop` stops the engine, reports the CPU it used
 * (`{ cpuMicros }`) and exits.
 */
import { createEngine, postgresStorage } from '@ferry/core';
import { postgres } from '@ferry/postgres';

const url = process.env.BENCH_SCALING_STORAGE_URL;
const secretKey = process.env.BENCH_SCALING_SECRET_KEY;
if (!url || !secretKey || typeof process.send !== 'function') throw new Error('engine-child.ts runs as a child of scaling.bench.ts');

const engine = await createEngine({
  storage: postgresStorage({ connectionString: url }),
  secretKey,
  plugins: [postgres()],
  webhookDelivery: false,
  outboundAllow: ['127.0.0.1', 'localhost'],
  runtime: { pollIntervalMs: 500 },
});
await engine.start();
const cpu = process.cpuUsage();
process.send({ kind: 'ready' });
process.on('message', (message: { kind?: string }) => {
  if (message.kind !== 'stop') return;
  void engine.stop().then(() => {
    const used = process.cpuUsage(cpu);
    process.send!({ kind: 'stopped', cpuMicros: used.user + used.system }, () => process.disconnect());
  });
});

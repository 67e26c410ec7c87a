/**
 * The load of ingest.bench.ts, in a process of its own so that it does not share the server's
 * event loop: CONCURRENCY loops, each POSTing one signed batch after another for DURATION_MS,
 * every request with a webhook-id of its own (the inbox dedupes repeated ids). Reports the
 * requests that got a 202 per second on IPC; any other answer ends the run with an error.
 */
import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { webhookHeaders } from '@ferry/core';

interface LoadSpec {
  url: string;
  secret: string;
  events: number;
  concurrency: number;
  durationMs: number;
}

async function run(spec: LoadSpec): Promise<number> {
  const payloads = Array.from({ length: spec.events }, (_, i) => ({ type: 'order.created', payload: { id: i, amount: 42.5, status: 'paid', customer: { id: `c${i % 97}`, tier: 'gold' } } }));
  const body = JSON.stringify({ events: payloads });
  const deadline = performance.now() + spec.durationMs;
  let accepted = 0;
  const loop = async () => {
    while (performance.now() < deadline) {
      const headers = { 'content-type': 'application/json', ...webhookHeaders({ id: `msg_${randomUUID()}`, timestamp: Math.floor(Date.now() / 1000), body }, [spec.secret]) };
      const answer = await request(spec.url, { method: 'POST', headers, body });
      const text = await answer.body.text();
      if (answer.statusCode !== 202) throw new Error(`ingest answered ${answer.statusCode}: ${text.slice(0, 300)}`);
      accepted++;
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: spec.concurrency }, loop));
  return accepted / ((performance.now() - started) / 1000);
}

process.once('message', (spec: LoadSpec) => {
  run(spec).then(
    (perSecond) => process.send!({ perSecond }, () => process.exit(0)),
    (error: unknown) => process.send!({ error: String((error as Error)?.message ?? error) }, () => process.exit(1)),
  );
});

/**
 * The benchmark's webhook receiver, in a process of its own so it does not share the sender's
 * event loop: 204 to every POST on 127.0.0.1, one in 50 signatures verified (the senders must
 * really sign). It reports its port on start and, when asked, how many deliveries arrived and
 * the time from each event's `occurred_at` to its arrival.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyWebhook } from '@ferry/core';

const secret = process.env.BENCH_WEBHOOKS_SECRET!;
let count = 0;
let badSignatures = 0;
let latencies: number[] = [];

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const arrived = Date.now();
    count++;
    const body = Buffer.concat(chunks);
    if (count % 50 === 0) {
      try {
        verifyWebhook(body, req.headers, secret);
      } catch {
        badSignatures++;
      }
    }
    const occurredAt = /"occurred_at":"([^"]+)"/.exec(body.toString('utf8'))?.[1];
    if (occurredAt) latencies.push(arrived - Date.parse(occurredAt));
    res.writeHead(204).end();
  });
});
server.keepAliveTimeout = 30_000;
server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));

process.on('message', (message: { cmd: 'reset' | 'stats' }) => {
  if (message.cmd === 'reset') {
    count = 0;
    latencies = [];
    process.send!({ ok: true });
  } else {
    const sorted = [...latencies].sort((a, b) => a - b);
    const pct = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;
    process.send!({ count, badSignatures, p50: pct(0.5), p99: pct(0.99) });
  }
});
process.on('disconnect', () => process.exit(0));

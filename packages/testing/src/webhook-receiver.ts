import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { systemClock, type Clock } from '@ferry/core';

/** One request a {@link WebhookReceiver} got. */
export interface ReceivedWebhook {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The body exactly as received. */
  body: string;
  /** `webhook-id` (the platform event id). */
  id: string;
  /** `webhook-timestamp`, unix seconds. */
  timestamp: number;
  /** The `v1,` signatures of `webhook-signature` (two while a rotated secret overlaps). */
  signatures: string[];
  /** The receiver's clock when it arrived (the engine's virtual time in tests). */
  at: number;
  /** The status answered, once answered (`huge` counts as 200; `hang` never gets one). */
  status?: number;
}

/**
 * What the receiver answers: a status (with headers and a body, after `delayMs` of real time to
 * keep requests in flight), `hang` (accepts the request and never answers), or `huge` (200 with
 * an endless stream of bytes, to test capped reads).
 */
export type WebhookReply = { status: number; headers?: Record<string, string>; body?: string; delayMs?: number } | 'hang' | 'huge';

/** A real HTTP receiver of webhook deliveries on 127.0.0.1. */
export interface WebhookReceiver {
  /** `http://127.0.0.1:<port>/hooks`. */
  readonly url: string;
  /** Every request, in arrival order. */
  readonly received: ReceivedWebhook[];
  /** Sets the answer to every following request; default 204. */
  reply(fn: (request: ReceivedWebhook) => WebhookReply): void;
  /** The requests of one `webhook-id`. */
  of(id: string): ReceivedWebhook[];
  /** Distinct `webhook-id`s answered with a 2xx. */
  readonly acknowledged: Set<string>;
  close(): Promise<void>;
}

/**
 * Starts a loopback webhook receiver that records every delivery: its Standard Webhooks headers,
 * body and arrival time on `clock`. Tests script its answers with `reply`.
 *
 * @example
 * ```ts
 * const receiver = await startWebhookReceiver({ clock });
 * receiver.reply(() => ({ status: 503, headers: { 'retry-after': '120' } }));
 * await engine.webhooks.create('default', { url: receiver.url, events: ['pipeline.failed'] });
 * ```
 */
export async function startWebhookReceiver(options: { clock?: Clock } = {}): Promise<WebhookReceiver> {
  const clock = options.clock ?? systemClock;
  const received: ReceivedWebhook[] = [];
  const acknowledged = new Set<string>();
  const open = new Set<ServerResponse>();
  let replyFn: (request: ReceivedWebhook) => WebhookReply = () => ({ status: 204 });
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const header = (name: string) => {
        const v = req.headers[name];
        return Array.isArray(v) ? v[0] : v;
      };
      const request: ReceivedWebhook = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        id: header('webhook-id') ?? '',
        timestamp: Number(header('webhook-timestamp')),
        signatures: (header('webhook-signature') ?? '').split(' ').filter(Boolean),
        at: clock.now(),
      };
      received.push(request);
      const reply = replyFn(request);
      if (reply === 'hang') {
        open.add(res);
        return;
      }
      if (reply === 'huge') {
        open.add(res);
        res.writeHead(200, { 'content-type': 'text/plain' });
        const chunk = Buffer.alloc(64 * 1024, 'x');
        const pump = () => {
          while (!res.destroyed && res.write(chunk));
        };
        res.on('drain', pump);
        res.on('close', () => open.delete(res));
        pump();
        request.status = 200;
        acknowledged.add(request.id);
        return;
      }
      const answer = () => {
        if (res.destroyed) return;
        request.status = reply.status;
        if (reply.status >= 200 && reply.status < 300) acknowledged.add(request.id);
        res.writeHead(reply.status, reply.headers).end(reply.body ?? '');
      };
      if (reply.delayMs) setTimeout(answer, reply.delayMs);
      else answer();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    acknowledged,
    reply(fn) {
      replyFn = fn;
    },
    of: (id) => received.filter((r) => r.id === id),
    close: async () => {
      for (const res of open) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

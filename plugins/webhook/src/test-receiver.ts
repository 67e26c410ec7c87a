import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach } from 'vitest';

/** One request the receiver got. */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * What the receiver answers: a status (with headers), `hang` to never answer, or `drop` to
 * close the connection without answering (the sender sees a broken connection).
 */
export type Reply = { status: number; headers?: Record<string, string>; body?: string } | 'hang' | 'drop';

/** A real loopback HTTP receiver for the plugin's tests (port 0, 127.0.0.1). */
export interface TestReceiver {
  url: string;
  requests: ReceivedRequest[];
  /**
   * Sets what every following request gets; default 200. A promise holds the request until it
   * resolves, so a test decides when each request in flight is answered.
   */
  reply(fn: (request: ReceivedRequest) => Reply | Promise<Reply>): void;
  close(): Promise<void>;
}

/** Starts a {@link TestReceiver}. */
export async function startReceiver(): Promise<TestReceiver> {
  const requests: ReceivedRequest[] = [];
  const hanging = new Set<ServerResponse>();
  let replyFn: (request: ReceivedRequest) => Reply | Promise<Reply> = () => ({ status: 200 });
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const received = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      requests.push(received);
      const answer = (reply: Reply) => {
        if (reply === 'hang') {
          hanging.add(res);
          return;
        }
        hanging.delete(res);
        if (reply === 'drop') {
          res.socket?.destroy();
          return;
        }
        res.writeHead(reply.status, reply.headers).end(reply.body ?? '');
      };
      const reply = replyFn(received);
      if (!(reply instanceof Promise)) return answer(reply);
      // Held meanwhile like a hanging request, so closing the receiver never waits for it.
      hanging.add(res);
      void reply.then(answer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    requests,
    reply: (fn) => {
      replyFn = fn;
    },
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * One receiver for a test file: started before its tests and closed after them; before each
 * test its requests are forgotten and it answers 200 again. `use` is given it once started.
 */
export function receiverForFile(use: (receiver: TestReceiver) => void): void {
  let receiver: TestReceiver | undefined;
  beforeAll(async () => {
    receiver = await startReceiver();
    use(receiver);
  });
  afterAll(async () => {
    await receiver?.close();
  });
  beforeEach(() => {
    receiver!.requests.length = 0;
    receiver!.reply(() => ({ status: 200 }));
  });
}

import { createServer, type RequestListener, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';

/** An HTTP server on 127.0.0.1 and a free port. */
export interface LoopbackServer {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  /** Stops listening and ends kept-alive connections (load generators hold them open). */
  close(): Promise<void>;
}

/**
 * Serves `listener` (an Express app, or any Node request handler) on 127.0.0.1 and a free port:
 * the loopback servers of tests and benchmarks, never reachable from elsewhere. `configure`
 * sees the server before it listens (to add a `clientError` listener, as a host would).
 *
 * @example
 * ```ts
 * const server = await listenLoopback(app);
 * await fetch(`${server.url}/v2/pipelines`);
 * await server.close();
 * ```
 */
export async function listenLoopback(listener: RequestListener, configure?: (server: Server) => void): Promise<LoopbackServer> {
  const server = createServer(listener);
  configure?.(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * A loopback port nothing listens on (one the OS just handed out and took back): connecting to
 * it is refused at once, which is how tests stand in for a server that is down.
 */
export async function closedPort(): Promise<number> {
  const probe = createNetServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

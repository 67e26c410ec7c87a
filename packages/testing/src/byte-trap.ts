import { createServer, type AddressInfo, type Socket } from 'node:net';

/** A TCP listener on 127.0.0.1 that answers nothing and counts what reaches it. */
export interface ByteTrap {
  /** Its port on 127.0.0.1. */
  readonly port: number;
  /** Connections accepted so far. */
  readonly connections: number;
  /** Bytes received so far, over every connection. */
  readonly bytes: number;
  /** Stops listening and drops open connections. */
  close(): Promise<void>;
}

/**
 * Listens on 127.0.0.1 and a free port, recording every connection and byte: the address an
 * outbound policy test points a connector at, to prove a refused connection sent nothing.
 *
 * @example
 * ```ts
 * const trap = await listenByteTrap();
 * // ... a check of a connector configured at 127.0.0.1:trap.port, with no allow list ...
 * expect(trap.bytes).toBe(0);
 * await trap.close();
 * ```
 */
export async function listenByteTrap(): Promise<ByteTrap> {
  let connections = 0;
  let bytes = 0;
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
    });
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    get connections() {
      return connections;
    },
    get bytes() {
      return bytes;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * A resolver that answers `names` with the given addresses and every other name with ENOTFOUND:
 * the `outboundLookup` of a test that points a public-looking name at loopback.
 */
export function fixedLookup(names: Record<string, string>): (hostname: string) => Promise<Array<{ address: string; family: 4 | 6 }>> {
  return async (hostname) => {
    const address = names[hostname.toLowerCase()];
    if (address === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return [{ address, family: address.includes(':') ? 6 : 4 }];
  };
}

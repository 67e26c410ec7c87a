import { createServer } from 'node:net';

/**
 * The server cannot listen where it was told to: the address is taken, not this machine's, or
 * not allowed. The message says which address and what to change, in one line; the CLI prints it
 * alone (no stack) and exits with status 1.
 */
export class ListenError extends Error {
  constructor(
    message: string,
    /** The system's error code (`EADDRINUSE`, `EACCES`, ...), for callers that branch on it. */
    readonly code: string | undefined,
  ) {
    super(message);
    this.name = 'ListenError';
  }
}

/** `host:port` as a person types it: an IPv6 address in brackets (`[::1]:8080`). */
export function addressText(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/**
 * Turns a failure to listen on `host:port` into a {@link ListenError} that names the address and
 * what to do; any other error is returned as it is.
 */
export function listenError(error: unknown, host: string, port: number): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const address = addressText(host, port);
  switch (code) {
    case 'EADDRINUSE':
      return new ListenError(`Cannot listen on ${address}: the address is already in use (another ferry serve, or another program). Stop it, or choose another port with --port or FERRY_PORT.`, code);
    case 'EACCES':
      return new ListenError(`Cannot listen on ${address}: permission denied (ports below 1024 need privileges). Choose another port with --port or FERRY_PORT.`, code);
    case 'EADDRNOTAVAIL':
      return new ListenError(`Cannot listen on ${address}: ${host} is not an address of this machine. Check --host or FERRY_HOST.`, code);
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new ListenError(`Cannot listen on ${address}: the host name ${JSON.stringify(host)} does not resolve. Check --host or FERRY_HOST.`, code);
    default:
      return error;
  }
}

/**
 * Checks that `host:port` can be bound, by binding it and letting it go at once, so a server
 * whose port is taken fails before it opens storage, migrates or starts its engine, rather than
 * after. Port 0 (any free port) always can. Another process may still take the port between the
 * check and the real listen: the listen's own failure is reported the same way.
 *
 * @throws {@link ListenError} when the address cannot be bound.
 */
export async function checkCanListen(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const probe = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject);
      probe.listen({ host, port }, () => resolve());
    });
  } catch (error) {
    throw listenError(error, host, port);
  }
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}

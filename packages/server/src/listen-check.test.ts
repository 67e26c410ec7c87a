import { createServer, type AddressInfo, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { addressText, checkCanListen, listenError, ListenError } from './listen-check.js';

const held: Server[] = [];
afterEach(async () => {
  await Promise.all(held.splice(0).map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
});

/** A port of 127.0.0.1 that a server of this test listens on. */
async function busyPort(): Promise<number> {
  const server = createServer();
  held.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** An error as `listen` fails with. */
const systemError = (code: string) => Object.assign(new Error(`listen ${code}`), { code });

describe('checking the address before serving', () => {
  it('refuses a port another server holds, naming the address and what to change', async () => {
    const port = await busyPort();
    const failure = await checkCanListen('127.0.0.1', port).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(ListenError);
    expect(failure).toMatchObject({
      code: 'EADDRINUSE',
      message: `Cannot listen on 127.0.0.1:${port}: the address is already in use (another ferry serve, or another program). Stop it, or choose another port with --port or FERRY_PORT.`,
    });
  });

  it('lets a free port go again at once, and never checks port 0', async () => {
    const port = await busyPort();
    await new Promise<void>((resolve) => held.pop()!.close(() => resolve()));
    await checkCanListen('127.0.0.1', port);
    // The check released it: the server can bind it right after.
    const server = createServer();
    held.push(server);
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', resolve));
    await expect(checkCanListen('127.0.0.1', 0)).resolves.toBeUndefined();
  });

  it('says what each failure to listen means, and leaves other errors as they are', () => {
    expect((listenError(systemError('EACCES'), '0.0.0.0', 80) as Error).message).toBe('Cannot listen on 0.0.0.0:80: permission denied (ports below 1024 need privileges). Choose another port with --port or FERRY_PORT.');
    expect((listenError(systemError('EADDRNOTAVAIL'), '10.9.9.9', 8080) as Error).message).toBe('Cannot listen on 10.9.9.9:8080: 10.9.9.9 is not an address of this machine. Check --host or FERRY_HOST.');
    expect((listenError(systemError('ENOTFOUND'), 'no-such-host', 8080) as Error).message).toBe('Cannot listen on no-such-host:8080: the host name "no-such-host" does not resolve. Check --host or FERRY_HOST.');
    expect(addressText('::1', 8080)).toBe('[::1]:8080');
    const other = systemError('EMFILE');
    expect(listenError(other, '127.0.0.1', 8080)).toBe(other);
  });
});

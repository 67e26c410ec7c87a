import { describe, expect, it } from 'vitest';
import { listenLoopback } from './loopback-server.js';

describe('listenLoopback', () => {
  it('serves on 127.0.0.1, and close() ends even with a kept-alive connection open', async () => {
    const server = await listenLoopback((_req, res) => res.end('ok'));
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await (await fetch(server.url)).text()).toBe('ok');
    // fetch keeps the socket alive; close() must not wait for it to time out.
    await server.close();
    await expect(fetch(server.url)).rejects.toThrow();
  });
});

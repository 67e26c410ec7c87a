import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

/** How long a connection closed after a refused body keeps draining what the client still sends, in ms. */
export const LINGER_MS = 2_000;

/**
 * Closes the connection of a request whose body was refused before it was read to the end (a
 * 413 with `Connection: close`) so that the client gets the answer. Node ends such an answer
 * with `socket.destroySoon()`: its FIN, then the descriptor closed at once, and whatever the
 * client is still sending makes the kernel answer with a reset, which can erase the 413 from the
 * client's receive buffer before it read it. Instead, like a server's lingering close: send the
 * FIN, keep reading and discarding the rest of the body until the client stops (its own FIN) or
 * `ms` pass, then close. Call it before the answer is sent; adapters do it for every 413.
 */
export function lingerAfterRefusedBody(request: IncomingMessage, ms = LINGER_MS): void {
  const socket = request.socket as Socket & { destroySoon?: () => void };
  if (!socket || request.complete) return;
  socket.destroySoon = function lingering(this: Socket): void {
    if (!this.writableEnded) this.end();
    const timer = setTimeout(() => this.destroy(), ms);
    timer.unref();
    this.once('end', () => this.destroy());
    this.once('close', () => clearTimeout(timer));
    // The body's remaining bytes are parsed and dropped, never buffered.
    request.resume();
    this.resume();
  };
}

import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isBlockedAddress, isHostAllowed } from '@ferry/core';
import { Agent, fetch as undiciFetch } from 'undici';

/** The most of a response body the plugin reads (contract section 8); the rest is discarded. */
export const MAX_RESPONSE_BYTES = 4096;

/** Error code of a connection refused because its resolved address is private or reserved. */
export const ADDRESS_BLOCKED = 'ERR_FERRY_ADDRESS_BLOCKED';

/** How a request ended, without the response body. */
export type Outcome =
  | { kind: 'response'; status: number }
  | { kind: 'timeout' }
  | { kind: 'blocked' }
  | { kind: 'network'; code: string };

/** One outbound request. */
export interface OutboundRequest {
  url: string;
  method: 'HEAD' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  timeoutMs: number;
  /** The caller's signal; its abort is rethrown as is, unlike a timeout. */
  signal?: AbortSignal;
}

/** Sends requests for one plugin instance. */
export interface OutboundClient {
  send(request: OutboundRequest): Promise<Outcome>;
}

/**
 * A DNS lookup that refuses private, loopback and reserved addresses unless allowed: the check
 * runs on the address actually connected to, so a name that re-resolves to an internal address
 * (DNS rebinding) after the URL was accepted is still refused.
 */
function guardedLookup(allow: readonly string[]) {
  return (hostname: string, options: LookupOptions, callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '');
      const hostAllowed = isHostAllowed(hostname, allow);
      const usable = addresses.filter((a) => hostAllowed || !isBlockedAddress(a.address) || isHostAllowed(a.address, allow));
      if (usable.length === 0) {
        const refused: NodeJS.ErrnoException = new Error(`${hostname} resolves to a private or reserved address`);
        refused.code = ADDRESS_BLOCKED;
        return callback(refused, '');
      }
      if (options.all) return callback(null, usable);
      const first = usable[0]!;
      return callback(null, first.address, first.family);
    });
  };
}

/**
 * The plugin's HTTP client. With the default fetch it uses its own undici agent whose lookup
 * enforces the outbound policy at connect time; a caller-supplied fetch takes over that duty.
 */
export function outboundClient(allow: readonly string[], customFetch?: typeof fetch): OutboundClient {
  let agent: Agent | undefined;
  const doFetch = (url: string, init: RequestInit): Promise<Response> => {
    if (customFetch) return customFetch(url, init);
    agent ??= new Agent({ connect: { lookup: guardedLookup(allow) } });
    return undiciFetch(url, { ...(init as object), dispatcher: agent }) as unknown as Promise<Response>;
  };
  return {
    async send(request) {
      const timeout = AbortSignal.timeout(request.timeoutMs);
      const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
      try {
        const init: RequestInit = { method: request.method, redirect: 'manual', signal };
        if (request.headers) init.headers = request.headers;
        if (request.body !== undefined) init.body = request.body;
        const response = await doFetch(request.url, init);
        await drain(response);
        return { kind: 'response', status: response.status };
      } catch (e) {
        if (request.signal?.aborted) throw request.signal.reason;
        if (timeout.aborted) return { kind: 'timeout' };
        const code = errorCode(e);
        if (code === ADDRESS_BLOCKED) return { kind: 'blocked' };
        return { kind: 'network', code: code ?? 'fetch_failed' };
      }
    },
  };
}

/** Reads at most {@link MAX_RESPONSE_BYTES} of the body, then lets the connection go. */
async function drain(response: Response): Promise<void> {
  if (!response.body) return;
  const reader = response.body.getReader();
  let read = 0;
  try {
    while (read < MAX_RESPONSE_BYTES) {
      const { done, value } = await reader.read();
      if (done) return;
      read += value.byteLength;
    }
    await reader.cancel();
  } catch {
    // The status is all the plugin needs; a body cut short does not change the outcome.
  } finally {
    reader.releaseLock();
  }
}

/** The first `code` along an error's cause chain (undici wraps socket errors in `fetch failed`). */
function errorCode(e: unknown): string | undefined {
  let cur: unknown = e;
  for (let depth = 0; cur && typeof cur === 'object' && depth < 5; depth += 1) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    cur = (cur as { cause?: unknown }).cause;
  }
  return undefined;
}

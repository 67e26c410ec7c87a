import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import type { Readable } from 'node:stream';
import type * as Undici from 'undici';
import type { Agent, buildConnector as BuildConnector } from 'undici';
import { systemClock, type Clock } from '../common/index.js';
import { isBlockedAddress, isHostAllowed, isLocalhostName, policyHost, urlRefusal } from './outbound-policy.js';

/** The most of a response body an {@link OutboundClient} reads by default (4 KiB, as docs/api.md, Webhook delivery, says). */
export const DEFAULT_MAX_RESPONSE_BYTES = 4096;
/** Default socket connect timeout of an {@link OutboundClient}, in real milliseconds. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
/** Default number of pooled connections per origin of an {@link OutboundClient}. */
export const DEFAULT_CONNECTIONS_PER_ORIGIN = 32;

/**
 * Resolves a host name to every address it has, like `dns.lookup(name, { all: true })`. An
 * {@link OutboundClient} calls it for every new connection and checks each answer before using it.
 */
export type OutboundLookup = (hostname: string) => Promise<Array<{ address: string; family: 4 | 6 }>>;

/** Options of an {@link OutboundClient}. */
export interface OutboundClientOptions {
  /**
   * Allow list in `FERRY_OUTBOUND_ALLOW` syntax: `*`, exact host names, IPs, CIDRs. A listed host
   * may be reached over plain http and at private or loopback addresses; a listed IP or CIDR also
   * permits a host name that resolves into it. Default: none (https to public addresses only).
   */
  allow?: readonly string[];
  /**
   * Runs the whole-request timeouts, so tests with a virtual clock time a request out by
   * advancing it. Default {@link systemClock}.
   */
  clock?: Clock;
  /**
   * DNS resolution. Default: the system resolver (`dns.lookup` with `all: true`, `/etc/hosts`
   * included). Tests inject names that resolve to private addresses.
   */
  lookup?: OutboundLookup;
  /** The most of a response body ever read (0: status and headers only); the rest is discarded and the connection closed. Default 4096. */
  maxResponseBytes?: number;
  /** Socket connect timeout in real milliseconds (a network-level limit, not on `clock`). Default 10 000. */
  connectTimeoutMs?: number;
  /** Pooled connections per origin (undici's `connections`). Default 32. */
  connectionsPerOrigin?: number;
}

/** One outbound request. */
export interface OutboundRequest {
  url: string;
  method: 'GET' | 'HEAD' | 'POST' | 'PUT';
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /**
   * Time the whole request may take (connect, headers and reading the capped body), in
   * milliseconds of the clock; a finite number above 0.
   */
  timeoutMs: number;
  /** The caller's abort: its reason is rethrown as is, never reported as a timeout. */
  signal?: AbortSignal;
  /**
   * The clock of this request's timeout, when it is not the client's: a plugin shares one client
   * between engines and times each request on the clock of the engine that sent it.
   */
  clock?: Clock;
}

/**
 * How an outbound request ended. `response` is any HTTP answer, 3xx included (redirects are never
 * followed); its `headers` have lower-case names, repeated ones joined with `, `; `body` is at
 * most `maxResponseBytes` bytes decoded as UTF-8 (a character cut in two becomes U+FFFD), and
 * `truncated` says the server sent more. `blocked` is a refusal of the outbound policy, before
 * any byte was sent; `network` a failure to connect or a broken connection, with the error code
 * (`ECONNREFUSED`, `ENOTFOUND`, `ECONNRESET`, `UND_ERR_CONNECT_TIMEOUT`...).
 */
export type OutboundResult =
  | { kind: 'response'; status: number; headers: Record<string, string>; body: string; truncated: boolean }
  | { kind: 'timeout' }
  | { kind: 'blocked'; reason: string }
  | { kind: 'network'; code: string; message: string };

/** Code of the error that carries a policy refusal from the connect path up to `send`. */
const BLOCKED_CODE = 'ERR_FERRY_OUTBOUND_BLOCKED';
const ADDRESS_REFUSED = 'The URL is not allowed: it resolves to a private, loopback or reserved address.';

/** A refusal raised inside undici's connect path (lookup or connector), where only errors travel. */
class OutboundBlockedError extends Error {
  readonly code = BLOCKED_CODE;
}

/**
 * The one HTTP client for everything the engine calls out to (webhook deliveries, connector
 * plugins). It enforces the outbound policy (docs/operations.md, Outbound policy) on every request, whatever
 * the URL passed earlier checks:
 *
 * - https only, http only for allowed hosts; no user info in the URL; no literal address in a
 *   blocked range (every spelling the WHATWG URL parser normalizes into one) and no `localhost`
 *   name, unless allowed;
 * - the address actually connected to is checked at connect time, on every new connection, so a
 *   name re-resolving to an internal address (DNS rebinding) is refused: a guarded DNS lookup
 *   drops blocked answers (an answer mixing public and private addresses connects to the public
 *   ones only; one with only blocked addresses is refused), literal hosts (which Node connects to
 *   without a lookup) are checked before connecting, and the socket's remote address is checked
 *   once more after it connects;
 * - redirects are never followed; a response body is read up to `maxResponseBytes`, then the
 *   connection is closed; the whole request runs under `timeoutMs` on the injected clock.
 *
 * @example
 * ```ts
 * const client = new OutboundClient({ allow: ['127.0.0.1'] });
 * const result = await client.send({ url: 'http://127.0.0.1:3000/hook', method: 'POST', body: '{}', timeoutMs: 15_000 });
 * if (result.kind === 'response') console.log(result.status);
 * await client.close();
 * ```
 */
/** undici, imported on first use: it is a hundred modules that a process sending nothing should not load at start. */
let undici: Promise<typeof Undici> | undefined;

export class OutboundClient {
  readonly #allow: readonly string[];
  readonly #clock: Clock;
  readonly #maxResponseBytes: number;
  readonly #pool: (load: typeof Undici) => Agent;
  /** The connection pool, made by the first send. */
  #agent: Promise<Agent> | undefined;
  /** Closed or destroyed: a pool made after that is closed at once, so its sends end as `network`. */
  #ended: 'closed' | 'destroyed' | undefined;

  /** Creates a client and its connection pool; see {@link OutboundClientOptions} for the defaults. */
  constructor(options: OutboundClientOptions = {}) {
    this.#allow = [...(options.allow ?? [])];
    this.#clock = options.clock ?? systemClock;
    this.#maxResponseBytes = integerAtLeast(0, options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES, 'maxResponseBytes');
    const connectTimeoutMs = integerAtLeast(1, options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, 'connectTimeoutMs');
    const connections = integerAtLeast(1, options.connectionsPerOrigin ?? DEFAULT_CONNECTIONS_PER_ORIGIN, 'connectionsPerOrigin');
    const lookup = options.lookup ?? systemLookup;
    this.#pool = ({ Agent, buildConnector }) =>
      new Agent({
        connect: guardedConnector(buildConnector, this.#allow, lookup, connectTimeoutMs),
        connections,
        // No redirect interceptor is composed onto this agent, so a 3xx comes back as it is.
      });
  }

  /** The connection pool, made (and undici loaded) on first use. */
  #agentNow(): Promise<Agent> {
    this.#agent ??= (undici ??= import('undici')).then(async (load) => {
      const agent = this.#pool(load);
      if (this.#ended === 'closed') await agent.close();
      else if (this.#ended === 'destroyed') await agent.destroy();
      return agent;
    });
    return this.#agent;
  }

  /**
   * Sends one request. Resolves with how it ended and never throws for a network or policy
   * problem; rejects only with the caller's abort reason, or a RangeError for a bad `timeoutMs`.
   */
  async send(request: OutboundRequest): Promise<OutboundResult> {
    if (!(request.timeoutMs > 0) || !Number.isFinite(request.timeoutMs)) {
      throw new RangeError(`OutboundRequest.timeoutMs must be a finite number above 0, got ${request.timeoutMs}.`);
    }
    let url: URL;
    try {
      url = new URL(request.url);
    } catch {
      return { kind: 'blocked', reason: 'The URL is not allowed: it is not a valid absolute URL.' };
    }
    const refused = urlRefusal(url, this.#allow);
    if (refused) return { kind: 'blocked', reason: `The URL is not allowed: ${refused}.` };

    const caller = request.signal;
    caller?.throwIfAborted();
    // One controller for undici: the caller's abort and the clock's timeout both end up here,
    // and which one fired decides between rethrowing and reporting a timeout.
    const controller = new AbortController();
    let timedOut = false;
    const timer = (request.clock ?? this.#clock).setTimeout(() => {
      timedOut = true;
      controller.abort(new Error('The outbound request timed out.'));
    }, request.timeoutMs);
    const onCallerAbort = () => controller.abort(caller?.reason);
    caller?.addEventListener('abort', onCallerAbort, { once: true });
    try {
      const agent = await this.#agentNow();
      const response = await agent.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: request.method,
        headers: request.headers ?? {},
        body: request.body ?? null,
        signal: controller.signal,
      });
      const read = await readCapped(response.body, this.#maxResponseBytes);
      return { kind: 'response', status: response.statusCode, headers: flattenHeaders(response.headers), body: read.body, truncated: read.truncated };
    } catch (error) {
      if (caller?.aborted) throw caller.reason;
      if (timedOut) return { kind: 'timeout' };
      return classify(error);
    } finally {
      timer.cancel();
      caller?.removeEventListener('abort', onCallerAbort);
    }
  }

  /**
   * Closes the pool gracefully: requests in flight finish first (each is still bounded by its
   * `timeoutMs`); sends after this resolve as `network`. Use {@link OutboundClient.destroy} to
   * stop at once.
   */
  async close(): Promise<void> {
    this.#ended ??= 'closed';
    if (!this.#agent) return;
    const agent = await this.#agent;
    if (!agent.closed && !agent.destroyed) await agent.close();
  }

  /**
   * Closes the pool now: requests in flight end as `network` with code `UND_ERR_DESTROYED`
   * (their outcome at the receiver is unknown, as with any broken connection).
   */
  async destroy(): Promise<void> {
    this.#ended = 'destroyed';
    if (!this.#agent) return;
    const agent = await this.#agent;
    if (!agent.destroyed) await agent.destroy();
  }
}

/**
 * The system resolver, every address of the name, in the order `getaddrinfo` gives them. Not
 * part of the package's entry.
 */
export const systemLookup: OutboundLookup = async (hostname) => {
  const answers = await dnsLookup(hostname, { all: true });
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

/**
 * Why connecting to `address` for `host` is refused, or null. An allowed host may resolve
 * anywhere (allowing a name trusts its DNS); an allowed IP or CIDR permits the addresses in it.
 * Not part of the package's entry: connectors reach it through `ConnectorContext.outbound`.
 */
export function addressRefusal(address: string, host: string, allow: readonly string[]): string | null {
  if (isIP(address) === 0) return ADDRESS_REFUSED;
  if (isHostAllowed(host, allow) || isHostAllowed(address, allow)) return null;
  return isBlockedAddress(address) ? ADDRESS_REFUSED : null;
}

/**
 * A `net` lookup that resolves with `resolve` and keeps only the permitted answers: the check
 * runs on the addresses the socket will actually connect to, for every new connection. A mixed
 * answer keeps its permitted addresses only; an answer with none fails with `refuse(reason)`
 * (default: the client's own refusal error). Not part of the package's entry: connectors get it
 * as `ConnectorContext.outbound.lookup`.
 */
export function guardedLookup(
  resolve: OutboundLookup,
  allow: readonly string[],
  refuse: (reason: string) => Error = (reason) => new OutboundBlockedError(reason),
): LookupFunction {
  return (hostname, options, callback) => {
    const wanted = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : (options.family ?? 0);
    Promise.resolve()
      .then(() => resolve(hostname))
      .then(
        (answers) => {
          // The family is recomputed rather than trusted: an injected resolver may get it wrong.
          const candidates = answers
            .map((a) => ({ address: a.address, family: isIP(a.address) }))
            .filter((a) => a.family !== 0 && (wanted === 0 || a.family === wanted));
          if (candidates.length === 0) {
            const notFound: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
            notFound.code = 'ENOTFOUND';
            callback(notFound, '');
            return;
          }
          const usable = candidates.filter((a) => addressRefusal(a.address, hostname, allow) === null);
          if (usable.length === 0) {
            callback(refuse(ADDRESS_REFUSED), '');
            return;
          }
          if (options.all) callback(null, usable);
          else callback(null, usable[0]!.address, usable[0]!.family);
        },
        (error: NodeJS.ErrnoException) => callback(error, ''),
      );
  };
}

/**
 * undici's connector with the policy around it: a literal or `localhost` host is refused before
 * any socket exists (Node skips the lookup for IP literals), names go through
 * {@link guardedLookup}, and the connected socket's remote address is checked again in case
 * anything between the lookup and the socket disagreed.
 */
function guardedConnector(buildConnector: typeof BuildConnector, allow: readonly string[], lookup: OutboundLookup, timeout: number): BuildConnector.connector {
  const connect = buildConnector({ timeout, lookup: guardedLookup(lookup, allow) });
  return (options, callback) => {
    const host = policyHost(options.hostname);
    const hostAllowed = isHostAllowed(host, allow);
    if (!hostAllowed && ((isIP(host) !== 0 && isBlockedAddress(host)) || isLocalhostName(host))) {
      callback(new OutboundBlockedError('The URL is not allowed: it points to a private, loopback or reserved address.'), null);
      return;
    }
    connect(options, (error, socket) => {
      if (error) {
        callback(error, null);
        return;
      }
      const refused = addressRefusal(socket!.remoteAddress ?? '', host, allow);
      if (refused) {
        socket!.destroy();
        callback(new OutboundBlockedError(refused), null);
        return;
      }
      callback(null, socket!);
    });
  };
}

/**
 * Reads at most `max` bytes of a body. Past that the body is destroyed, which makes undici close
 * the connection: a huge or endless response can hold neither memory nor the socket.
 */
function readCapped(body: Readable, max: number): Promise<{ body: string; truncated: boolean }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (truncated: boolean) => {
      body.off('data', onData);
      resolve({ body: Buffer.concat(chunks, size).toString('utf8'), truncated });
    };
    const onData = (chunk: Buffer) => {
      const room = max - size;
      if (chunk.length <= room) {
        chunks.push(chunk);
        size += chunk.length;
        return;
      }
      // A copy, so the rest of a large chunk is not kept alive by the slice.
      if (room > 0) chunks.push(Buffer.from(chunk.subarray(0, room)));
      size = max;
      done(true);
      body.destroy();
    };
    body.on('data', onData);
    body.once('end', () => done(false));
    // Stays attached after the promise settled: destroying an unfinished undici body emits an
    // abort error nobody needs, and an 'error' without a listener would crash the process.
    body.on('error', reject);
  });
}

/** Lower-case names to single strings; repeated headers (`set-cookie`) joined with `, `. */
function flattenHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    flat[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return flat;
}

/** Maps a failure that was neither the caller's abort nor the clock's timeout. */
function classify(error: unknown): OutboundResult {
  const blocked = findInChain(error, (e) => e instanceof OutboundBlockedError);
  if (blocked) return { kind: 'blocked', reason: (blocked as Error).message };
  const coded = findInChain(error, (e) => typeof (e as { code?: unknown }).code === 'string') as { code: string; message?: string } | undefined;
  const code = coded?.code ?? 'ERR_OUTBOUND';
  // undici's own safety-net timers (headers and body, 300 s of real time) mean the same as ours.
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') return { kind: 'timeout' };
  const message = String(coded?.message ?? (error instanceof Error ? error.message : error));
  return { kind: 'network', code, message };
}

/** The first error along `cause` chains and inside AggregateErrors (happy eyeballs) that matches. */
function findInChain(error: unknown, match: (e: object) => boolean): object | undefined {
  const queue: unknown[] = [error];
  for (let seen = 0; queue.length > 0 && seen < 20; seen += 1) {
    const current = queue.shift();
    if (!current || typeof current !== 'object') continue;
    if (match(current)) return current;
    if (current instanceof AggregateError) queue.push(...current.errors);
    queue.push((current as { cause?: unknown }).cause);
  }
  return undefined;
}

function integerAtLeast(min: number, value: number, name: string): number {
  if (!Number.isInteger(value) || value < min) throw new RangeError(`OutboundClientOptions.${name} must be an integer >= ${min}, got ${value}.`);
  return value;
}

import * as http from 'node:http';
import * as https from 'node:https';
import { isIP, Socket, type NetConnectOpts } from 'node:net';
import * as tls from 'node:tls';
import { guardedLookup, systemLookup, type OutboundLookup } from './outbound-client.js';
import { canonicalHost, hostRefusal, policyHost, urlRefusal } from './outbound-policy.js';
import { ConnectorError, type ConnectorOutbound, type OutboundConnectOptions } from '../plugin-api/index.js';

export type { ConnectorOutbound, OutboundConnectOptions };

/** The code of every outbound policy refusal, in API answers, checks and connector errors. */
export const URL_NOT_ALLOWED = 'url_not_allowed';

const RESOLVED_REFUSED = 'The host is not allowed: it resolves to a private, loopback or reserved address.';

/** Options of {@link createConnectorOutbound}. */
export interface ConnectorOutboundOptions {
  /**
   * Allow list in `FERRY_OUTBOUND_ALLOW` syntax: `*`, exact host names, IPs, CIDRs. Default none:
   * https to public addresses only.
   */
  allow?: readonly string[];
  /**
   * DNS resolution; default the system resolver (`/etc/hosts` included). Whatever it answers is
   * checked before use: tests inject names that resolve to loopback to prove it.
   */
  lookup?: OutboundLookup;
}

/** A non-retryable `url_not_allowed`: waiting will not make an address public. */
export function outboundRefusal(message: string, cause?: unknown): ConnectorError {
  return new ConnectorError(URL_NOT_ALLOWED, message, { retryable: false, ...(cause !== undefined ? { cause } : {}) });
}

const built = new WeakMap<readonly string[], ConnectorOutbound>();

/**
 * The policy for an allow list, one object per list (the engine's contexts share it, so its
 * agents and lookups are made once).
 */
export function connectorOutboundFor(allow: readonly string[]): ConnectorOutbound {
  let outbound = built.get(allow);
  if (!outbound) built.set(allow, (outbound = createConnectorOutbound({ allow })));
  return outbound;
}

/**
 * Builds a {@link ConnectorOutbound}: the engine makes one from `outboundAllow`; tests make their
 * own with an injected `lookup` (see `connectorContext` in `@ferry/testing`).
 *
 * @example
 * ```ts
 * const outbound = createConnectorOutbound({ allow: ['127.0.0.1'] });
 * const socket = outbound.connect({ host: 'db.internal', port: 5432 });
 * ```
 */
export function createConnectorOutbound(options: ConnectorOutboundOptions = {}): ConnectorOutbound {
  const allow = Object.freeze([...(options.allow ?? [])]);
  const lookup = guardedLookup(options.lookup ?? systemLookup, allow, () => outboundRefusal(RESOLVED_REFUSED));
  const hostProblem = (host: string) => {
    const why = hostRefusal(host, allow);
    return why ? `The host is not allowed: ${why}.` : null;
  };
  const assertHost = (host: string, port?: number) => {
    // A literal in any spelling is what Node would connect to without asking `lookup`; names
    // (`localhost` included) are left to the lookup, which checks their addresses.
    const canonical = canonicalHost(host);
    const literal = canonical === '' || host.startsWith('/') || isIP(canonical) !== 0;
    const why = literal ? hostProblem(host) : null;
    if (why) throw outboundRefusal(port === undefined ? why : why.replace('The host', `The host (port ${port})`));
  };
  // A socket that fails with `error` on the next tick, as a refused connection would: drivers
  // expect a socket back synchronously and an 'error' event, never a throw.
  const failed = (error: Error) => {
    const socket = new Socket();
    process.nextTick(() => socket.destroy(error));
    return socket;
  };
  const refusedHost = (host: string | undefined) => {
    try {
      assertHost(host ?? '');
      return null;
    } catch (error) {
      return error as ConnectorError;
    }
  };

  return Object.freeze({
    allow,
    lookup,
    hostProblem,
    urlProblem(raw: string) {
      let url: URL;
      try {
        url = new URL(raw);
      } catch {
        return 'The URL is not allowed: it is not a valid absolute URL.';
      }
      const why = urlRefusal(url, allow);
      return why ? `The URL is not allowed: ${why}.` : null;
    },
    assertHost,
    assertUrl(raw: string) {
      const why = this.urlProblem(raw);
      if (why) throw outboundRefusal(why);
      return new URL(raw);
    },
    async resolve(host: string) {
      assertHost(host);
      const bare = canonicalHost(host);
      if (isIP(bare) !== 0) return [{ address: bare, family: isIP(bare) as 4 | 6 }];
      return new Promise<Array<{ address: string; family: 4 | 6 }>>((resolve, reject) => {
        lookup(bare, { all: true }, (error, addresses) => {
          if (error) reject(error);
          else resolve((addresses as unknown as Array<{ address: string; family: number }>).map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 })));
        });
      });
    },
    connect(target: OutboundConnectOptions, onConnect?: () => void) {
      const refused = refusedHost(target.host);
      if (refused) return failed(refused);
      const host = policyHost(target.host);
      const base: NetConnectOpts = { host, port: target.port, lookup, ...(target.timeout !== undefined ? { timeout: target.timeout } : {}) };
      if (!target.tls) return new Socket().connect(base, onConnect);
      // SNI and certificate checks use the configured name; never an address (RFC 6066).
      const servername = target.tls.servername ?? (isIP(host) === 0 ? host : undefined);
      return tls.connect({ ...target.tls, ...base, ...(servername !== undefined ? { servername } : {}) }, onConnect);
    },
    socket() {
      const socket = new Socket();
      const connect = socket.connect.bind(socket) as (...args: unknown[]) => Socket;
      // Every form net.Socket#connect takes: (port, host?, cb?), ({ port, host } | { path }, cb?), (path, cb?).
      socket.connect = ((...args: unknown[]) => {
        const first = args[0];
        const callback = args.find((a) => typeof a === 'function') as (() => void) | undefined;
        let target: { port?: number; host?: string; path?: string };
        if (typeof first === 'object' && first !== null) target = first as typeof target;
        else if (typeof first === 'string' && !/^\d+$/.test(first)) target = { path: first };
        else target = { port: Number(first), host: typeof args[1] === 'string' ? args[1] : 'localhost' };
        const where = target.path ?? target.host ?? 'localhost';
        const refused = refusedHost(where);
        if (refused) {
          process.nextTick(() => socket.destroy(refused));
          return socket;
        }
        if (target.path !== undefined) return connect({ path: target.path }, ...(callback ? [callback] : []));
        return connect({ ...target, host: policyHost(where), lookup }, ...(callback ? [callback] : []));
      }) as typeof socket.connect;
      return socket;
    },
    agent(protocol: 'http:' | 'https:', agentOptions: https.AgentOptions = {}) {
      const agent = protocol === 'https:' ? new https.Agent({ ...agentOptions, lookup }) : new http.Agent({ ...agentOptions, lookup });
      const create = agent.createConnection.bind(agent) as (options: object, callback?: (error: Error | null, socket?: Socket) => void) => Socket | undefined;
      // Node calls `lookup` for names only; a literal host is checked here, before any socket
      // exists. The request then fails with the refusal.
      (agent as unknown as { createConnection: typeof create }).createConnection = (connectOptions, callback) => {
        const o = connectOptions as { host?: string; hostname?: string };
        const refused = refusedHost(o.host ?? o.hostname);
        if (refused) {
          if (callback) {
            process.nextTick(() => callback(refused));
            return undefined;
          }
          return failed(refused);
        }
        return create(connectOptions, callback);
      };
      return agent;
    },
    refusal(error: unknown) {
      const queue: unknown[] = [error];
      for (let seen = 0; queue.length > 0 && seen < 20; seen += 1) {
        const current = queue.shift();
        if (!current || typeof current !== 'object') continue;
        if (current instanceof ConnectorError && current.code === URL_NOT_ALLOWED) return current;
        // kafkajs and others rewrap a socket error keeping only its `code`.
        if ((current as { code?: unknown }).code === URL_NOT_ALLOWED) {
          return outboundRefusal(RESOLVED_REFUSED.replace('resolves to', 'is, or resolves to,'), current);
        }
        if (current instanceof AggregateError) queue.push(...current.errors);
        queue.push((current as { cause?: unknown }).cause);
      }
      return undefined;
    },
  } satisfies ConnectorOutbound);
}


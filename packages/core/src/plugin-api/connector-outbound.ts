import type * as http from 'node:http';
import type * as https from 'node:https';
import type { LookupFunction, Socket } from 'node:net';
import type * as tls from 'node:tls';
import type { ConnectorError } from './connector-error.js';

// The policy's interface, as plugins are handed it (`ctx.outbound`); `net/connector-outbound.ts`
// implements it.

/** Where a TCP or TLS connection goes, for {@link ConnectorOutbound.connect}. */
export interface OutboundConnectOptions {
  host: string;
  port: number;
  /**
   * TLS options for a TLS connection (`servername` defaults to `host` when it is a name, so the
   * certificate is verified against the configured name, not the address connected to); absent
   * for plain TCP.
   */
  tls?: tls.ConnectionOptions;
  /** Socket inactivity timeout, in milliseconds. */
  timeout?: number;
}

/**
 * The engine's outbound policy, as a connector plugin applies it (`ctx.outbound`, and the third
 * argument of `validateConfig`). One policy for every connector and the engine's webhooks: a
 * host that is, or resolves to, a private, loopback, link-local or metadata address is refused
 * unless the engine's allow list (`createEngine({ outboundAllow })`, `FERRY_OUTBOUND_ALLOW` on
 * `ferry serve`) names it; plain http only to allowed hosts; redirects are never followed.
 *
 * Two moments: at create and update, {@link ConnectorOutbound.hostProblem} and
 * {@link ConnectorOutbound.urlProblem} refuse what is refused whatever DNS says (a literal
 * address in any spelling, `localhost`); at connect time every driver connects through
 * {@link ConnectorOutbound.lookup}, {@link ConnectorOutbound.connect},
 * {@link ConnectorOutbound.socket} or {@link ConnectorOutbound.agent}, which resolve the name,
 * check every address, and connect only to a checked one, so a name re-pointed at an internal
 * address (DNS rebinding) gets no byte. A refusal is a non-retryable {@link ConnectorError}
 * with code `url_not_allowed`.
 */
export interface ConnectorOutbound {
  /** The allow list in force. */
  readonly allow: readonly string[];
  /**
   * A `dns.lookup`-compatible function for the `lookup` option of `net.connect`, `tls.connect`
   * and `http(s).Agent`: it resolves, drops refused addresses, and fails with the refusal when
   * none is left. Node skips `lookup` for IP literals: check those with
   * {@link ConnectorOutbound.assertHost} (or use `connect`, `socket`, `agent`, which do).
   */
  readonly lookup: LookupFunction;
  /** Why `host` is refused whatever it resolves to (a literal address the policy refuses in any spelling, `localhost`), or null. For `validateConfig`. */
  hostProblem(host: string): string | null;
  /**
   * Why `url` is refused (not http(s), http to a host not allowed, credentials in it, a refused
   * host), or null. For `validateConfig`.
   */
  urlProblem(url: string): string | null;
  /**
   * The connect-time check of what Node connects to without a lookup: throws the refusal when
   * `host` is a literal address the policy refuses (any spelling), empty, or a Unix socket path,
   * unless allowed. A name passes: {@link ConnectorOutbound.lookup} checks what it resolves to
   * (so `localhost` is refused there, unless its addresses are allowed). `port` only words the
   * message.
   */
  assertHost(host: string, port?: number): void;
  /** Throws the refusal when `url` is refused (see {@link ConnectorOutbound.urlProblem}); returns it parsed. */
  assertUrl(url: string): URL;
  /**
   * Resolves `host` and returns its permitted addresses (a literal address: itself, checked),
   * or throws the refusal when none is permitted. For drivers that must be given an address.
   */
  resolve(host: string): Promise<Array<{ address: string; family: 4 | 6 }>>;
  /** A TCP or TLS socket connected through the policy; a refused host fails it with the refusal, before any connection. */
  connect(options: OutboundConnectOptions, onConnect?: () => void): Socket;
  /**
   * A socket not yet connected whose `connect(port, host)` (or `connect({ port, host })`, or a
   * Unix socket path) goes through the policy: for drivers that take a socket factory and connect
   * it themselves (pg's `stream`).
   */
  socket(): Socket;
  /**
   * An `http.Agent` (`'http:'`) or `https.Agent` (`'https:'`) whose every connection goes through
   * the policy, for SDKs that take agents. It does not follow redirects (agents never do): the
   * SDK's own redirect handling must be off.
   */
  agent(protocol: 'http:' | 'https:', options?: https.AgentOptions): http.Agent;
  /**
   * The policy refusal inside `error` (its cause chain, an AggregateError, or a driver's wrapper
   * that kept only the `code`), as a non-retryable ConnectorError, or undefined.
   */
  refusal(error: unknown): ConnectorError | undefined;
}

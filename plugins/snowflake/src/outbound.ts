import type { Agent } from 'node:http';
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import type { ConnectorOutbound } from '@ferry/core';

/**
 * The HTTP agents of one driver connection, made by the outbound policy, and the driver's hook
 * that hands them out.
 */
export interface PolicyAgents {
  /**
   * The snowflake-sdk `agentClass` connection option: the driver calls it for every request
   * with `{ protocol }` and uses the agent it returns when the protocols match, so every
   * request of the connection (login, queries, renewals, logout, telemetry) goes through the
   * policy. The option is meant for tests, but it is the driver's only agent hook.
   */
  readonly agentClass: (options: { protocol?: string }) => Agent;
  /** Closes the agents' sockets. */
  destroy(): void;
}

// The driver's internals this module relies on (no `exports` map in the package, so they are
// importable): the axios instance every request of the driver goes through, and the OCSP check
// its own HTTPS agent applies to each TLS socket. Required on first use, with the driver (see
// driver.ts): loading them loads most of it.
const require = createRequire(import.meta.url);

interface DriverAxios {
  interceptors: { request: { use(onFulfilled: (config: AxiosRequestConfig) => AxiosRequestConfig): number } };
}
interface AxiosRequestConfig {
  httpAgent?: unknown;
  httpsAgent?: unknown;
  maxRedirects?: number;
  beforeRedirect?: unknown;
}
interface SocketUtil {
  secureSocket(socket: Socket, host: string, agent: null): Socket;
}

/** Every agent made here, to tell the plugin's requests from other users of the driver in the process. */
const ours = new WeakSet<object>();
let socketUtil: SocketUtil | undefined;

/** The driver's OCSP socket check, with the redirect rule installed on its axios instance the first time. */
function driverInternals(): SocketUtil {
  if (socketUtil) return socketUtil;
  const driverAxios = (require('snowflake-sdk/dist/lib/http/axios_instance') as { default: DriverAxios }).default;
  // axios, which the driver uses, follows up to 21 redirects by default and re-sends the body on
  // a 307 (a login request holds the password). Requests made with the plugin's agents follow
  // none: a 3xx is an answer like any other, and the driver reports it as a failed request.
  driverAxios.interceptors.request.use((config) => {
    const agent = config.httpsAgent ?? config.httpAgent;
    if (agent && typeof agent === 'object' && ours.has(agent)) {
      config.maxRedirects = 0;
      delete config.beforeRedirect;
    }
    return config;
  });
  socketUtil = require('snowflake-sdk/dist/lib/agent/socket_util') as SocketUtil;
  return socketUtil;
}

/**
 * Agents for one driver connection through `outbound`: each connection resolves the host,
 * checks every address and connects only to a permitted one (a literal address is checked
 * before any socket exists); TLS sockets keep the driver's OCSP check of the certificate chain.
 */
export function policyAgents(outbound: ConnectorOutbound): PolicyAgents {
  const sockets = driverInternals();
  // As the driver's own agents: keep-alive with a 30 s idle timeout.
  const options = { keepAlive: true, timeout: 30_000 };
  const http = outbound.agent('http:', options);
  const https = outbound.agent('https:', options);
  const create = (https as unknown as { createConnection: (o: { host?: string; servername?: string }, cb?: unknown) => Socket | undefined }).createConnection;
  (https as unknown as { createConnection: typeof create }).createConnection = (connectOptions, callback) => {
    const socket = create(connectOptions, callback);
    return socket ? sockets.secureSocket(socket, connectOptions.servername ?? connectOptions.host ?? '', null) : socket;
  };
  ours.add(http);
  ours.add(https);
  return {
    agentClass: (agentOptions) => (agentOptions.protocol === 'http:' ? http : https),
    destroy() {
      http.destroy();
      https.destroy();
    },
  };
}

/**
 * Outbound connections: the one outbound policy (no private addresses unless allowed), the HTTP
 * client that applies it, and its form for plugins' own clients.
 */
export { URL_NOT_ALLOWED, connectorOutboundFor, createConnectorOutbound, outboundRefusal, type ConnectorOutbound, type ConnectorOutboundOptions, type OutboundConnectOptions } from './connector-outbound.js';
export { DEFAULT_CONNECTIONS_PER_ORIGIN, DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_MAX_RESPONSE_BYTES, OutboundClient, type OutboundClientOptions, type OutboundLookup, type OutboundRequest, type OutboundResult } from './outbound-client.js';
export { assertUrlAllowed, canonicalHost, hostRefusal, isBlockedAddress, isHostAllowed } from './outbound-policy.js';

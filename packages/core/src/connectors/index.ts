/**
 * Connectors: the service, configs checked against their plugin, sealed secrets, opened
 * connectors with their health, and credential rotation.
 */
export { recoverRotations } from './connector-rotation.js';
export { ConnectorsService } from './connectors-service.js';
export { connectorContext, connectorInbox, openConnector, recordConnectorHealth, type OpenedConnector } from './opened-connector.js';

/**
 * The plugin API: connector and transform interfaces, their definition helpers, the registry,
 * secret fields, connector errors.
 */
export { joinSecrets, mergeConfig, scrub, secretPaths, secretStrings, splitSecrets, type ConfigPath, type SplitConfig } from './config-secrets.js';
export { ConnectorError, type ConnectorErrorOptions } from './connector-error.js';
export { type ConnectorOutbound, type OutboundConnectOptions } from './connector-outbound.js';
export { defineConnector, defineTransform } from './define.js';
export { probeCheck } from './probe-check.js';
export { madePayloadJson, payloadJson } from './payload-json.js';
export { PluginRegistry, type RegisteredConnector } from './registry.js';
export { REDACTED, SECRET_KEYWORD, Secret } from './secret.js';
export { type AnyConnectorDefinition, type AnyTransformDefinition, type BackfillPlan, type BackfillPlanInput, type BackfillReport, type BackfillRequest, type BackfillRequests, type CheckResult, type Checkpoint, type ConnectorContext, type ConnectorDefinition, type ConnectorDirection, type ConnectorHealth, type ConnectorInbox, type Destination, type DestinationEvent, type FerryPlugin, type JsonObject, type JsonValue, type PipelineConnectorContext, type PullSource, type PushSource, type RotateInput, type Source, type SourceBatch, type SourceRecord, type TransformContext, type TransformDefinition, type TransformEvent, type TransformOutcome, type WriteResult } from './types.js';

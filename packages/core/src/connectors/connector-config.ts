import { Value } from '@sinclair/typebox/value';
import { connectorOutboundFor, URL_NOT_ALLOWED } from '../net/index.js';
import type { EngineContext } from '../context/index.js';
import { FerryError, validationError, schemaErrors } from '../common/index.js';
import type { RegisteredConnector, JsonObject } from '../plugin-api/index.js';
import type { ConnectorRow } from '../storage/index.js';

/**
 * Checks a connector config: the schema first; the plugin's own rules (which fields a direction
 * needs, hosts the outbound policy refuses) only on a config the schema accepts, with schema
 * defaults applied. A config whose only problems are refused hosts is well formed but breaks a
 * rule: 422 `url_not_allowed`, as for a webhook subscription's url; anything else wrong is a 400.
 */
export function validateConnectorConfig(ctx: EngineContext, plugin: RegisteredConnector, config: JsonObject, direction: ConnectorRow['direction']): void {
  const errors = schemaErrors(plugin.definition.configSchema, config, { prefix: '/config' });
  if (errors.length === 0 && plugin.definition.validateConfig) {
    const withDefaults = Value.Default(plugin.definition.configSchema, structuredClone(config)) as JsonObject;
    const outbound = connectorOutboundFor(ctx.settings.outboundAllow);
    for (const e of plugin.definition.validateConfig(withDefaults, direction, outbound)) errors.push({ ...e, pointer: `/config${e.pointer}` });
  }
  if (errors.length > 0 && errors.every((e) => e.code === URL_NOT_ALLOWED)) {
    throw new FerryError(URL_NOT_ALLOWED, errors[0]!.detail, { errors });
  }
  if (errors.length > 0) throw validationError(errors, 'The connector config is not valid.');
}

/**
 * The connector's readable secret (see `ConnectorDefinition.readableSecret`) when the connector
 * generated it: absent from what the caller sent, present in what is stored. Undefined otherwise:
 * a secret the caller supplied is never echoed back.
 */
export function generatedReadableSecret(plugin: RegisteredConnector, sent: JsonObject, stored: JsonObject): JsonObject | undefined {
  const field = plugin.definition.readableSecret;
  if (field === undefined || sent[field] !== undefined || typeof stored[field] !== 'string') return undefined;
  return { [field]: stored[field] };
}

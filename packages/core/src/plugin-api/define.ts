import type { TObject, TSchema } from '@sinclair/typebox';
import type { AnyConnectorDefinition, ConnectorDefinition, FerryPlugin, TransformDefinition } from './types.js';

/**
 * Declares a connector type. Returns a frozen copy of its argument; its purpose is inference: the
 * config type of every context is derived from `configSchema`, with no casts.
 *
 * @example
 * ```ts
 * export const echo = () => defineConnector({
 *   type: 'echo', version: '1.0.0', directions: ['destination'],
 *   configSchema: Type.Object({ token: Secret(Type.String()) }),
 *   destination: (ctx) => ({ write: async (events) => events.map(() => ({ ok: true as const })) }),
 * });
 * ```
 */
export function defineConnector<TSchemaT extends TObject>(definition: ConnectorDefinition<TSchemaT>): ConnectorDefinition<TSchemaT> {
  return Object.freeze({ ...definition });
}

/**
 * Declares a transform step type; the built-in steps use it too.
 *
 * @example
 * ```ts
 * export const upper = defineTransform({
 *   type: 'upper',
 *   schema: Type.Object({ type: Type.Literal('upper'), path: Type.String() }),
 *   apply: (event, step) => event,
 * });
 * ```
 */
export function defineTransform<TStep extends TSchema>(definition: TransformDefinition<TStep>): TransformDefinition<TStep> {
  return Object.freeze({ ...definition });
}

/** True when a plugin is a connector definition (it has a config schema). */
export function isConnectorDefinition(plugin: FerryPlugin): plugin is AnyConnectorDefinition {
  return 'configSchema' in plugin && 'directions' in plugin;
}

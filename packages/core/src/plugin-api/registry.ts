import { FerryError } from '../common/index.js';
import type { AnyConnectorDefinition, AnyTransformDefinition, FerryPlugin } from './types.js';
import { isConnectorDefinition } from './define.js';
import { secretPaths, type ConfigPath } from './config-secrets.js';

/** A registered connector type with what the core derives from its schema once. */
export interface RegisteredConnector {
  definition: AnyConnectorDefinition;
  secretPaths: ConfigPath[];
}

/** The connector and transform types one engine knows. */
export class PluginRegistry {
  private readonly connectors = new Map<string, RegisteredConnector>();
  private readonly transforms = new Map<string, AnyTransformDefinition>();

  constructor(plugins: readonly FerryPlugin[], builtinTransforms: readonly AnyTransformDefinition[]) {
    for (const t of builtinTransforms) this.transforms.set(t.type, t);
    for (const plugin of plugins) {
      if (isConnectorDefinition(plugin)) {
        if (this.connectors.has(plugin.type)) {
          throw new FerryError('configuration_invalid', `Connector type ${JSON.stringify(plugin.type)} is registered twice.`);
        }
        const paths = secretPaths(plugin.configSchema);
        // Only a secret can be read back through the signing-secret route; anything else named
        // there is a mistake the plugin's author should hear about at once, not a silent 404.
        const readable = plugin.readableSecret;
        if (readable !== undefined && !paths.some((p) => p.length === 1 && p[0] === readable)) {
          throw new FerryError('configuration_invalid', `Connector type ${JSON.stringify(plugin.type)}: readableSecret ${JSON.stringify(readable)} is not a top-level Secret() field of its config schema.`);
        }
        this.connectors.set(plugin.type, { definition: plugin, secretPaths: paths });
      } else {
        // A plugin may replace a built-in step deliberately, but two plugins may not collide.
        if (this.transforms.has(plugin.type) && !builtinTransforms.some((b) => b.type === plugin.type)) {
          throw new FerryError('configuration_invalid', `Transform type ${JSON.stringify(plugin.type)} is registered twice.`);
        }
        this.transforms.set(plugin.type, plugin);
      }
    }
  }

  /** The connector type registered under `type`. */
  connector(type: string): RegisteredConnector | undefined {
    return this.connectors.get(type);
  }

  /** Registered connector type names, sorted. */
  connectorTypes(): string[] {
    return [...this.connectors.keys()].sort();
  }

  /** The transform step type registered under `type`. */
  transform(type: string): AnyTransformDefinition | undefined {
    return this.transforms.get(type);
  }

  /** Registered step type names, sorted. */
  transformTypes(): string[] {
    return [...this.transforms.keys()].sort();
  }
}

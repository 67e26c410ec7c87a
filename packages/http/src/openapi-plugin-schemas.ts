import type { Engine } from '@ferry/core';
import { engineContext, inputSchemas, REDACTED, resourceSchemas, SECRET_KEYWORD, type AnyConnectorDefinition, type AnyTransformDefinition, type ConfigPath } from '@ferry/core/internal';
import { addDescription, defaultsAsText, mapSchema, orNull, toJsonSchema, type JsonSchema } from './json-schema.js';

/** A connector type an engine registered, with the secret paths the engine derived from its schema. */
export interface CatalogConnector {
  definition: AnyConnectorDefinition;
  secretPaths: readonly ConfigPath[];
}

/** The connector and transform step types one engine knows, each by its registered definition. */
export interface PluginCatalog {
  connectors: readonly CatalogConnector[];
  transforms: readonly AnyTransformDefinition[];
}

/**
 * The types `engine` registered (its plugins, and the built-in steps unless a plugin replaced
 * one), sorted by type name: what the API accepts, so what the document declares.
 */
export function pluginCatalog(engine: Engine): PluginCatalog {
  const { registry } = engineContext(engine);
  return {
    connectors: registry.connectorTypes().flatMap((type) => registry.connector(type) ?? []),
    transforms: registry.transformTypes().flatMap((type) => registry.transform(type) ?? []),
  };
}

/** What the registered types add to the document. */
export interface PluginSchemas {
  /** New components, by name. */
  components: Record<string, JsonSchema>;
  /**
   * Generic nodes of the core's schemas (by identity) and the precise schema that replaces them
   * wherever they are used: the create-connector body, the `config` of an update or a rotation,
   * the connector record, the transform steps of a pipeline.
   */
  swaps: Map<object, JsonSchema>;
}

const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });
const isSchema = (value: unknown): value is JsonSchema => value !== null && typeof value === 'object' && !Array.isArray(value);
const isSecret = (node: JsonSchema): boolean => node[SECRET_KEYWORD] === true;

const SECRET_TEXT = 'Secret: write-only; stored encrypted, and every answer shows `"********"` in its place.';
const READABLE_TEXT = 'The answer of the create (or rotation) that generated it shows it once; `GET /v2/connectors/{id}/signing-secret` reads it back.';
const KEEP_TEXT = '`"********"` (what answers show) keeps the stored value.';

/** A secret field as a request takes it: the plugin's schema, marked write-only. */
function secretInRequest(node: JsonSchema): JsonSchema {
  const { [SECRET_KEYWORD]: _marker, ...rest } = node;
  return addDescription({ ...rest, writeOnly: true }, SECRET_TEXT);
}

/**
 * A plugin's schema made to stand inside the document: no `$id` or `$schema` of its own (the
 * document is the one resource), and defaults described rather than declared (see
 * {@link defaultsAsText}).
 */
function standalone(schema: JsonSchema): JsonSchema {
  return defaultsAsText(
    mapSchema(schema, (node) => {
      const { $id: _id, $schema: _dialect, ...rest } = node;
      return rest;
    }),
  );
}

/** A config as a create takes it: the plugin's schema, its secrets write-only. */
function configInRequest(config: JsonSchema): JsonSchema {
  return mapSchema(config, (node) => (isSecret(node) ? secretInRequest(node) : node));
}

/**
 * A config as answers show it (every secret reads `"********"`), the readable secret
 * excepted: it shows in clear in the one answer that generated it.
 */
function configInAnswer(config: JsonSchema, readable: string | undefined): JsonSchema {
  const shown = mapSchema(config, (node) => (isSecret(node) ? { type: 'string', const: REDACTED, description: 'A secret: always `"********"`.' } : node));
  const properties = shown.properties;
  if (readable !== undefined && isSchema(properties) && isSchema(properties[readable])) {
    properties[readable] = { type: 'string', description: `A secret: \`"********"\`. ${READABLE_TEXT}` };
  }
  return shown;
}

/**
 * A config as a merge takes it (the engine's `mergeConfig`): every field optional at every
 * object level, since objects are merged key by key; with `nulls`, `null` removes a field; with
 * `placeholder`, a secret sent back as `"********"` keeps its value. The merged config is then
 * validated as a whole.
 */
function configAsPatch(node: JsonSchema, options: { nulls: boolean; placeholder: boolean }): JsonSchema {
  if (isSecret(node)) {
    const secret = secretInRequest(node);
    if (!options.placeholder) return secret;
    const { description, ...rest } = secret;
    return { anyOf: [rest, { type: 'string', const: REDACTED }], description: `${String(description)} ${KEEP_TEXT}` };
  }
  if (Array.isArray(node.anyOf)) return { ...node, anyOf: node.anyOf.map((m: unknown) => (isSchema(m) ? configAsPatch(m, options) : m)) };
  const { required: _required, minProperties: _min, ...rest } = node;
  const field = (schema: unknown): unknown => {
    if (!isSchema(schema)) return schema;
    const patched = configAsPatch(schema, options);
    return options.nulls ? orNull(patched) : patched;
  };
  if (isSchema(node.properties)) {
    rest.properties = Object.fromEntries(Object.entries(node.properties).map(([k, s]) => [k, field(s)]));
  }
  if (isSchema(node.patternProperties)) {
    rest.patternProperties = Object.fromEntries(Object.entries(node.patternProperties).map(([k, s]) => [k, field(s)]));
  }
  return isSchema(node.properties) || isSchema(node.patternProperties) ? rest : node;
}

/** PascalCase of a type name, for component names: `my-db` is `MyDb`. */
function pascal(type: string): string {
  const words = type.split(/[^A-Za-z0-9]+/).filter((w) => w !== '');
  return words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join('') || 'Custom';
}

/**
 * A component name stem for `type` whose names (stem + each suffix) are all free, marked taken:
 * two types that read alike (`my-db`, `my_db`) or a type named like a core component never
 * share a name.
 */
function claimStem(type: string, suffixes: readonly string[], taken: Set<string>): string {
  const base = pascal(type);
  for (let n = 1; ; n++) {
    const stem = n === 1 ? base : `${base}${n}`;
    const names = suffixes.map((s) => stem + s);
    if (names.every((name) => !taken.has(name))) {
      for (const name of names) taken.add(name);
      return stem;
    }
  }
}

/** One schema, or the union of several (a single member needs no union). */
const anyOf = (members: JsonSchema[], description: string): JsonSchema =>
  members.length === 1 ? { ...members[0], description } : { anyOf: members, description };

function connectorSchemas(connectors: readonly CatalogConnector[], taken: Set<string>, out: PluginSchemas): void {
  if (connectors.length === 0) return; // nothing could be created: the generic schemas stay
  const createBody = toJsonSchema(inputSchemas.createConnector);
  const record = toJsonSchema(resourceSchemas.Connector);
  const createMapping: Record<string, string> = {};
  const recordMapping: Record<string, string> = {};
  const patches: JsonSchema[] = [];
  const rotations: JsonSchema[] = [];
  for (const { definition, secretPaths } of connectors) {
    const type = definition.type;
    const stem = claimStem(type, ['Config', 'ConfigPatch', 'ConfigSecrets', 'ConfigRedacted', 'ConnectorCreate', 'Connector'], taken);
    const config = standalone(toJsonSchema(definition.configSchema));
    const directions = [...definition.directions];
    const direction = directions.length === 1 ? { type: 'string', const: directions[0] } : { type: 'string', enum: directions };
    const typeSchema = { type: 'string', const: type };

    out.components[`${stem}Config`] = addDescription(configInRequest(config), `Config of a \`${type}\` connector (plugin version ${definition.version}).`);
    out.components[`${stem}ConfigRedacted`] = addDescription(configInAnswer(config, definition.readableSecret), `Config of a \`${type}\` connector as answers show it.`);
    out.components[`${stem}ConfigPatch`] = addDescription(configAsPatch(config, { nulls: true, placeholder: true }), `Changes to the config of a \`${type}\` connector.`);
    patches.push(ref(`${stem}ConfigPatch`));

    // Rotation takes the top-level fields that hold secrets, and nothing else (`not_secret`).
    const roots = new Set(secretPaths.map((p) => p[0]!));
    if (roots.size > 0 && isSchema(config.properties)) {
      const picked = Object.fromEntries(Object.entries(config.properties).filter(([key]) => roots.has(key)));
      const { required: _required, ...rest } = config;
      out.components[`${stem}ConfigSecrets`] = addDescription(configAsPatch({ ...rest, properties: picked }, { nulls: false, placeholder: false }), `New secrets of a \`${type}\` connector.`);
      rotations.push(ref(`${stem}ConfigSecrets`));
    }

    const createProps = createBody.properties as Record<string, JsonSchema>;
    out.components[`${stem}ConnectorCreate`] = {
      ...createBody,
      description: `A new \`${type}\` connector: ${directions.join(', ')}.`,
      properties: { ...createProps, type: typeSchema, direction, config: ref(`${stem}Config`) },
    };
    createMapping[type] = `#/components/schemas/${stem}ConnectorCreate`;

    const recordProps = record.properties as Record<string, JsonSchema>;
    out.components[`${stem}Connector`] = {
      ...record,
      description: `A \`${type}\` connector.`,
      properties: { ...recordProps, type: typeSchema, direction, config: ref(`${stem}ConfigRedacted`) },
    };
    recordMapping[type] = `#/components/schemas/${stem}Connector`;
  }

  out.components.ConnectorCreate = {
    description: "A new connector: `type` is one of this server's connector types, and `config` follows that type's schema.",
    oneOf: Object.values(createMapping).map(($ref) => ({ $ref })),
    discriminator: { propertyName: 'type', mapping: createMapping },
  };
  out.swaps.set(inputSchemas.createConnector, ref('ConnectorCreate'));
  out.components.Connector = {
    description: 'A connector, its `config` in the schema of its type; secret fields read `"********"`.',
    oneOf: Object.values(recordMapping).map(($ref) => ({ $ref })),
    discriminator: { propertyName: 'type', mapping: recordMapping },
  };
  out.swaps.set(resourceSchemas.Connector, ref('Connector'));
  out.swaps.set(
    inputSchemas.updateConnector.properties.config,
    anyOf(patches, "Merged over the stored config, object by object, then validated as a whole; in the schema of the connector's type (`<Type>ConfigPatch`)."),
  );
  if (rotations.length > 0) {
    out.swaps.set(
      inputSchemas.rotateConnector.properties.config,
      anyOf(rotations, "New values of the secret fields, in the schema of the connector's type (`<Type>ConfigSecrets`); absent when the plugin generates them."),
    );
  }
}

function stepSchemas(transforms: readonly AnyTransformDefinition[], taken: Set<string>, out: PluginSchemas): void {
  if (transforms.length === 0) return;
  const mapping: Record<string, string> = {};
  for (const definition of transforms) {
    const stem = claimStem(definition.type, ['Step'], taken);
    out.components[`${stem}Step`] = standalone(toJsonSchema(definition.schema));
    mapping[definition.type] = `#/components/schemas/${stem}Step`;
  }
  // A discriminator only where every step schema names its `type` (as `defineTransform` asks).
  const typed = transforms.every((t) => isSchema((t.schema as { properties?: unknown }).properties) && 'type' in (t.schema as { properties: object }).properties);
  out.components.TransformStep = {
    description: "One step of a pipeline's `transforms`, applied in order: `type` is one of this server's step types, and the other fields follow its schema.",
    oneOf: Object.values(mapping).map(($ref) => ({ $ref })),
    ...(typed ? { discriminator: { propertyName: 'type', mapping } } : {}),
  };
  out.swaps.set(inputSchemas.createPipeline.properties.transforms.items, ref('TransformStep'));
  out.swaps.set(inputSchemas.updatePipeline.properties.transforms.items, ref('TransformStep'));
  out.swaps.set(resourceSchemas.Pipeline.properties.transforms.items, ref('TransformStep'));
}

/**
 * The schemas the registered types make precise: per connector type its config as a create
 * takes it (secrets `writeOnly`), as answers show it (secrets `"********"`), as an update
 * merges it and as a rotation takes its secrets, the create body and the connector record as
 * unions discriminated by `type`; per step type its schema, and `TransformStep`, their union.
 * `taken` holds the component names already in use; new names avoid them.
 */
export function pluginSchemas(catalog: PluginCatalog, taken: ReadonlySet<string>): PluginSchemas {
  const out: PluginSchemas = { components: {}, swaps: new Map() };
  const names = new Set([...taken, 'ConnectorCreate', 'Connector', 'TransformStep']);
  connectorSchemas(catalog.connectors, names, out);
  stepSchemas(catalog.transforms, names, out);
  return out;
}

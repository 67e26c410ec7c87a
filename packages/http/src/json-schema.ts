import type { TSchema } from '@sinclair/typebox';

/** A JSON Schema as plain JSON, as the OpenAPI document holds it. */
export type JsonSchema = Record<string, unknown>;

/** Keywords whose value is one subschema. */
const SCHEMA_KEYWORDS = ['items', 'additionalProperties', 'not', 'if', 'then', 'else', 'contains', 'propertyNames', 'unevaluatedItems', 'unevaluatedProperties'] as const;
/** Keywords whose value is a list of subschemas. */
const LIST_KEYWORDS = ['anyOf', 'oneOf', 'allOf', 'prefixItems'] as const;
/** Keywords whose value is a map of subschemas. */
const MAP_KEYWORDS = ['properties', 'patternProperties', '$defs', 'dependentSchemas'] as const;

const isSchema = (value: unknown): value is JsonSchema => value !== null && typeof value === 'object' && !Array.isArray(value);

function copy(value: unknown, swaps: ReadonlyMap<object, JsonSchema> | undefined): unknown {
  if (value === null || typeof value !== 'object') return value;
  const swap = swaps?.get(value);
  if (swap) return structuredClone(swap);
  if (Array.isArray(value)) return value.map((v) => copy(v, swaps));
  const out: Record<string, unknown> = {};
  // String keys only: TypeBox's symbol keys (Kind, Optional) are not JSON.
  for (const [key, v] of Object.entries(value)) {
    if (v !== undefined && typeof v !== 'function') out[key] = copy(v, swaps);
  }
  return out;
}

/**
 * A TypeBox schema as plain JSON Schema, with each node found in `swaps` (by identity) replaced
 * by its substitute: how a generic part of a core schema (a connector's free-form `config`) is
 * replaced by the precise one the engine's plugins give, wherever the core schema uses it.
 */
export function toJsonSchema(schema: TSchema, swaps?: ReadonlyMap<object, JsonSchema>): JsonSchema {
  return copy(schema, swaps) as JsonSchema;
}

/**
 * Rewrites a schema bottom-up: `visit` gets every node (subschemas already rewritten) and returns
 * its replacement. Subschemas are found through the JSON Schema 2020-12 applicator keywords.
 */
export function mapSchema(schema: JsonSchema, visit: (node: JsonSchema) => JsonSchema): JsonSchema {
  const node: JsonSchema = { ...schema };
  for (const key of SCHEMA_KEYWORDS) {
    if (isSchema(node[key])) node[key] = mapSchema(node[key], visit);
  }
  for (const key of LIST_KEYWORDS) {
    const list = node[key];
    if (Array.isArray(list)) node[key] = list.map((s: unknown) => (isSchema(s) ? mapSchema(s, visit) : s));
  }
  for (const key of MAP_KEYWORDS) {
    const map = node[key];
    if (isSchema(map)) node[key] = Object.fromEntries(Object.entries(map).map(([k, s]) => [k, isSchema(s) ? mapSchema(s, visit) : s]));
  }
  return visit(node);
}

/** `schema` with `text` added to its description. */
export function addDescription(schema: JsonSchema, text: string): JsonSchema {
  const before = typeof schema.description === 'string' && schema.description !== '' ? `${schema.description.replace(/\.?\s*$/, '.')} ` : '';
  return { ...schema, description: `${before}${text}` };
}

/**
 * `schema` or JSON `null`: a union, its description kept on the outside where generators read
 * it.
 */
export function orNull(schema: JsonSchema): JsonSchema {
  const { description, ...rest } = schema;
  const members = Array.isArray(rest.anyOf) && Object.keys(rest).length === 1 ? (rest.anyOf as unknown[]) : [rest];
  return { anyOf: [...members, { type: 'null' }], ...(description !== undefined ? { description } : {}) };
}

/**
 * `default` keywords moved into the description (`Default: 5432.`). The server applies a
 * default when a field is absent, and never writes it back into what it stores; but
 * openapi-typescript types every property that has a `default` as always present
 * (`defaultNonNullable`), which would make a generated client send every defaulted field and
 * read fields the answers do not have.
 */
export function defaultsAsText(schema: JsonSchema): JsonSchema {
  return mapSchema(schema, (node) => {
    if (!('default' in node)) return node;
    const { default: value, ...rest } = node;
    return addDescription(rest, `Default: \`${JSON.stringify(value)}\`.`);
  });
}

/**
 * JSON Schema (the subset TypeBox writes, and the OpenAPI document made from it) to fast-check
 * arbitraries: values the schema accepts, so a property can send what the document says is
 * valid and hold the server to its answer. Every keyword is either generated for or listed as an
 * annotation; anything else throws, so a schema the converter does not understand is never
 * silently fed with values it might refuse.
 */
import fc from 'fast-check';

/** A JSON Schema as plain JSON. */
export type JsonSchema = Record<string, unknown>;

/** Options of {@link arbitraryOf}. */
export interface SchemaArbitraryOptions {
  /** The schema a `$ref` points at (`#/components/schemas/Pipeline`). */
  resolve(ref: string): JsonSchema;
  /** Most items of a generated array, whatever its `maxItems` allows: keeps requests small. Default 3. */
  maxItems?: number;
  /** Most characters of a generated string without a pattern or format, whatever its `maxLength` allows. Default 40. */
  maxLength?: number;
  /**
   * Whether a string with a larger `maxLength` is now and then exactly that long, where
   * disagreements over how length is counted show. Default true.
   */
  fullLength?: boolean;
}

/** Keywords that say nothing about which values are valid. */
const ANNOTATIONS = new Set(['description', 'title', 'examples', 'default', 'deprecated', 'readOnly', 'writeOnly', 'discriminator', '$comment']);

/**
 * One code point of a valid string: mostly printable ASCII, else any Unicode scalar value but
 * U+0000, which the API refuses wherever it appears (docs/api.md, Characters no storage keeps).
 * Lone surrogates are not scalar values, so `binary` never draws one.
 */
const codePoint = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }).filter((c) => c !== '\u0000') },
);

/**
 * A string of `min` to `max` UTF-16 code units, the length the API counts (its OpenAPI document
 * says so: JSON Schema would count code points, which only differ beyond U+FFFF). Drawn as code
 * points, then kept when it fits.
 */
export const textArbitrary = (min = 0, max = 40): fc.Arbitrary<string> =>
  fc.string({ unit: codePoint, minLength: min, maxLength: Math.max(min, max) }).filter((s) => s.length >= min && s.length <= max);

/** A string of exactly `length` UTF-16 code units, of printable ASCII: the longest value allowed. */
const fullLengthText = (length: number): fc.Arbitrary<string> => fc.string({ unit: 'grapheme-ascii', minLength: length, maxLength: length });

/** The days of a month, February of a leap year included. */
const daysIn = (year: number, month: number): number => new Date(Date.UTC(year, month, 0)).getUTCDate();
const two = (n: number): string => String(n).padStart(2, '0');

/**
 * An RFC 3339 date-time that names a real instant, in the spellings the API takes: with or
 * without milliseconds, in UTC (`Z`) or at a numeric offset.
 */
export const dateTimeArbitrary: fc.Arbitrary<string> = fc
  .record({
    year: fc.integer({ min: 1970, max: 2100 }),
    month: fc.integer({ min: 1, max: 12 }),
    day: fc.integer({ min: 1, max: 31 }),
    hour: fc.integer({ min: 0, max: 23 }),
    minute: fc.integer({ min: 0, max: 59 }),
    second: fc.integer({ min: 0, max: 59 }),
    fraction: fc.option(fc.integer({ min: 0, max: 999 }).map((ms) => `.${String(ms).padStart(3, '0')}`), { nil: '' }),
    zone: fc.constantFrom('Z', '+00:00', '+02:00', '-05:30', '+14:00'),
  })
  .map(({ year, month, day, hour, minute, second, fraction, zone }) => {
    const d = Math.min(day, daysIn(year, month));
    return `${year}-${two(month)}-${two(d)}T${two(hour)}:${two(minute)}:${two(second)}${fraction}${zone}`;
  });

/** Any JSON value a request may carry: strings without U+0000, finite numbers, shallow nesting. */
export const jsonArbitrary: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', maxDepth: 3 },
    textArbitrary(0, 20),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(textArbitrary(1, 10), tie('value'), { maxKeys: 3 }),
  ),
})).value;

function stringArbitrary(schema: JsonSchema, options: Required<Omit<SchemaArbitraryOptions, 'resolve'>>): fc.Arbitrary<string> {
  const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
  const max = typeof schema.maxLength === 'number' ? schema.maxLength : Number.POSITIVE_INFINITY;
  const fits = (s: string): boolean => s.length >= min && s.length <= max;
  if (schema.format === 'date-time') return dateTimeArbitrary.filter(fits);
  if (schema.format === 'uri') return fc.webUrl({ validSchemes: ['https'] }).filter(fits);
  if (schema.format !== undefined) throw new Error(`schema-arbitrary: no generator for format ${JSON.stringify(schema.format)}`);
  if (typeof schema.pattern === 'string') {
    const pattern = new RegExp(schema.pattern, 'u');
    let matching: fc.Arbitrary<string>;
    try {
      matching = fc.stringMatching(pattern);
    } catch {
      // fast-check builds no generator for some constructs (lookaheads): draw text and keep what matches.
      matching = textArbitrary(Math.max(min, 1), Math.min(max, options.maxLength));
    }
    return matching.filter((s) => fits(s) && pattern.test(s));
  }
  // Mostly short, but now and then exactly as long as allowed: the bound is where drift shows.
  const short = textArbitrary(min, Math.min(max, options.maxLength));
  return options.fullLength && Number.isFinite(max) && max > options.maxLength ? fc.oneof({ weight: 9, arbitrary: short }, { weight: 1, arbitrary: fullLengthText(max) }) : short;
}

function numberArbitrary(schema: JsonSchema, integer: boolean): fc.Arbitrary<number> {
  const num = (key: string): number | undefined => (typeof schema[key] === 'number' ? (schema[key] as number) : undefined);
  const exclusiveMin = num('exclusiveMinimum');
  const exclusiveMax = num('exclusiveMaximum');
  if (integer) {
    const min = num('minimum') ?? (exclusiveMin !== undefined ? Math.floor(exclusiveMin) + 1 : -(2 ** 31));
    const max = num('maximum') ?? (exclusiveMax !== undefined ? Math.ceil(exclusiveMax) - 1 : 2 ** 31 - 1);
    return fc.integer({ min, max });
  }
  return fc.double({
    noNaN: true,
    noDefaultInfinity: true,
    ...(num('minimum') !== undefined ? { min: num('minimum') } : exclusiveMin !== undefined ? { min: exclusiveMin, minExcluded: true } : {}),
    ...(num('maximum') !== undefined ? { max: num('maximum') } : exclusiveMax !== undefined ? { max: exclusiveMax, maxExcluded: true } : {}),
  });
}

function objectArbitrary(schema: JsonSchema, options: SchemaArbitraryOptions): fc.Arbitrary<Record<string, unknown>> {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required ?? []) as string[]);
  const names = Object.keys(properties);
  // A free-form object (an event payload, a step's extra fields): any small JSON object.
  if (names.length === 0) {
    if (schema.additionalProperties === false) return fc.constant({});
    const values = typeof schema.additionalProperties === 'object' ? arbitraryOf(schema.additionalProperties as JsonSchema, options) : jsonArbitrary;
    return fc.dictionary(textArbitrary(1, 10), values, { maxKeys: 3 });
  }
  const model = Object.fromEntries(names.map((name) => [name, arbitraryOf(properties[name]!, options)]));
  return fc.record(model, { requiredKeys: names.filter((name) => required.has(name)) }) as fc.Arbitrary<Record<string, unknown>>;
}

function arrayArbitrary(schema: JsonSchema, options: SchemaArbitraryOptions): fc.Arbitrary<unknown[]> {
  const items = schema.items === undefined ? jsonArbitrary : arbitraryOf(schema.items as JsonSchema, options);
  const minLength = typeof schema.minItems === 'number' ? schema.minItems : 0;
  const maxLength = Math.max(minLength, Math.min(typeof schema.maxItems === 'number' ? schema.maxItems : Infinity, options.maxItems ?? 3));
  return schema.uniqueItems === true ? fc.uniqueArray(items, { minLength, maxLength, selector: (v) => JSON.stringify(v) }) : fc.array(items, { minLength, maxLength });
}

/**
 * Values `schema` accepts: `$ref`, `const`, `enum`, `anyOf`/`oneOf` (a member at a time, with
 * the keywords around it), `type` (one or a list) with `null`, `boolean`, `integer` and `number`
 * bounds, strings with `minLength`/`maxLength`/`pattern`/`format` (`date-time`, `uri`), objects
 * with their required and optional `properties` (free-form ones when none are listed), and
 * arrays with `items`, `minItems`/`maxItems` and `uniqueItems`. A schema of annotations only
 * (`{}`) takes any JSON value.
 */
export function arbitraryOf(schema: JsonSchema, options: SchemaArbitraryOptions): fc.Arbitrary<unknown> {
  const settings = { maxItems: options.maxItems ?? 3, maxLength: options.maxLength ?? 40, fullLength: options.fullLength ?? true };
  const { $ref, const: constant, enum: members, anyOf, oneOf, type, ...rest } = schema;
  if (typeof $ref === 'string') return arbitraryOf({ ...rest, ...options.resolve($ref) }, options);
  if (constant !== undefined) return fc.constant(constant);
  if (Array.isArray(members)) return fc.constantFrom(...(members as unknown[]));
  // With oneOf, the members must exclude each other (a discriminator's `const` does): one is drawn.
  const union = (anyOf ?? oneOf) as JsonSchema[] | undefined;
  if (union) {
    const around = Object.fromEntries(Object.entries({ type, ...rest }).filter(([key, value]) => value !== undefined && !ANNOTATIONS.has(key)));
    return fc.oneof(...union.map((member) => arbitraryOf({ ...around, ...member }, options)));
  }
  if (Array.isArray(type)) return fc.oneof(...(type as string[]).map((t) => arbitraryOf({ ...rest, type: t }, options)));
  const unknown = Object.keys(rest).filter((key) => !ANNOTATIONS.has(key) && !KNOWN[String(type)]?.includes(key));
  if (unknown.length > 0) throw new Error(`schema-arbitrary: no generator for ${unknown.join(', ')} in ${JSON.stringify(schema).slice(0, 200)}`);
  switch (type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
    case 'number':
      return numberArbitrary(rest, type === 'integer');
    case 'string':
      return stringArbitrary(rest, settings);
    case 'object':
      return objectArbitrary(rest, options);
    case 'array':
      return arrayArbitrary(rest, options);
    case undefined:
      return jsonArbitrary;
    default:
      throw new Error(`schema-arbitrary: no generator for type ${JSON.stringify(type)}`);
  }
}

/** The keywords each type's generator honours. */
const KNOWN: Record<string, readonly string[]> = {
  null: [],
  boolean: [],
  integer: ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'],
  number: ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'],
  string: ['minLength', 'maxLength', 'pattern', 'format'],
  object: ['properties', 'required', 'additionalProperties'],
  array: ['items', 'minItems', 'maxItems', 'uniqueItems'],
  undefined: [],
};

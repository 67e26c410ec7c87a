import { Kind, type TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors';
import { validationError, type FerryError, type FieldError } from './errors.js';
import { TimestampSchema } from './schemas.js';
import { parseIsoTimestamp } from './timestamps.js';

const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>();

/** The compiled checker of a schema, compiled once and cached. */
export function compile<T extends TSchema>(schema: T): TypeCheck<T> {
  let check = compiled.get(schema);
  if (!check) {
    check = TypeCompiler.Compile(schema);
    compiled.set(schema, check);
  }
  return check as TypeCheck<T>;
}

const CODES: Partial<Record<ValueErrorType, string>> = {
  [ValueErrorType.ObjectRequiredProperty]: 'required',
  [ValueErrorType.ObjectAdditionalProperties]: 'unknown_field',
  [ValueErrorType.String]: 'type',
  [ValueErrorType.Number]: 'type',
  [ValueErrorType.Integer]: 'type',
  [ValueErrorType.Boolean]: 'type',
  [ValueErrorType.Object]: 'type',
  [ValueErrorType.Array]: 'type',
  [ValueErrorType.Null]: 'type',
  [ValueErrorType.Literal]: 'enum',
  [ValueErrorType.Union]: 'invalid',
  [ValueErrorType.StringMinLength]: 'too_short',
  [ValueErrorType.StringMaxLength]: 'too_long',
  [ValueErrorType.StringPattern]: 'pattern',
  [ValueErrorType.StringFormat]: 'format',
  [ValueErrorType.NumberMinimum]: 'out_of_range',
  [ValueErrorType.NumberMaximum]: 'out_of_range',
  [ValueErrorType.NumberExclusiveMinimum]: 'out_of_range',
  [ValueErrorType.NumberExclusiveMaximum]: 'out_of_range',
  [ValueErrorType.IntegerMinimum]: 'out_of_range',
  [ValueErrorType.IntegerMaximum]: 'out_of_range',
  [ValueErrorType.IntegerExclusiveMinimum]: 'out_of_range',
  [ValueErrorType.IntegerExclusiveMaximum]: 'out_of_range',
  [ValueErrorType.ArrayMinItems]: 'too_short',
  [ValueErrorType.ArrayMaxItems]: 'too_long',
  [ValueErrorType.ArrayUniqueItems]: 'duplicate',
};

/** One key as a JSON Pointer reference token (RFC 6901): `~` becomes `~0`, `/` becomes `~1`. */
export function pointerToken(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** Options of {@link schemaErrors}. */
export interface SchemaErrorOptions {
  /** Prefix of every pointer (`/config` when validating a connector's config). */
  prefix?: string;
  /** Top-level fields that exist on the resource but cannot be written: reported as `read_only`. */
  readOnly?: readonly string[];
}

/** The members of a union of literals (`null` allowed), the TypeBox spelling of an enum; else undefined. */
function enumMembers(schema: TSchema): TSchema[] | undefined {
  const members = (schema as { anyOf?: TSchema[] }).anyOf;
  if (!members || members.length === 0) return undefined;
  return members.every((m) => m[Kind] === 'Literal' || m[Kind] === 'Null') ? members : undefined;
}

/** The one member of `X | null` other than null, the TypeBox spelling of a nullable field; else undefined. */
function nullableMember(schema: TSchema): TSchema | undefined {
  const members = (schema as { anyOf?: TSchema[] }).anyOf;
  if (!members || members.length !== 2 || enumMembers(schema)) return undefined;
  const others = members.filter((m) => m[Kind] !== 'Null');
  return others.length === 1 ? others[0] : undefined;
}

function describe(error: ValueError, code: string): string {
  if (code === 'unknown_field') return 'This field is not allowed here.';
  if (code === 'enum' && error.type === ValueErrorType.Union) {
    // The allowed values come from the schema, never from the offending value.
    const allowed = enumMembers(error.schema)!.map((m) => (m[Kind] === 'Null' ? 'null' : JSON.stringify(m.const)));
    return `Expected one of ${allowed.join(', ')}`;
  }
  if (code === 'required') return 'This field is required.';
  if (code === 'read_only') return 'This field is read-only.';
  // TypeBox messages describe the expectation, never the offending value (which may be secret).
  return error.message;
}

/**
 * Every problem of `value` against `schema`, one per pointer, as field errors. Messages never
 * include the offending value, so a secret typed into the wrong field is not echoed back.
 */
export function schemaErrors(schema: TSchema, value: unknown, options: SchemaErrorOptions = {}): FieldError[] {
  const check = compile(schema);
  const prefix = options.prefix ?? '';
  if (check.Check(value)) return characterErrors(value, prefix, []);
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const error of check.Errors(value)) {
    let code = CODES[error.type] ?? 'invalid';
    if (error.type === ValueErrorType.Union && enumMembers(error.schema)) code = 'enum';
    const top = error.path.split('/')[1];
    if (code === 'unknown_field' && top !== undefined && error.path.split('/').length === 2 && options.readOnly?.includes(top)) {
      code = 'read_only';
    }
    const pointer = prefix + error.path;
    if (seen.has(pointer)) continue;
    // A nullable field given something else than null: what is wrong is what its type says
    // (`out_of_range`, `type`...), not "no member of the union matched".
    const member = error.type === ValueErrorType.Union && error.value !== null ? nullableMember(error.schema) : undefined;
    const inner = member ? schemaErrors(member, error.value, { prefix: pointer }).filter((e) => !seen.has(e.pointer)) : [];
    if (inner.length > 0) {
      for (const e of inner) seen.add(e.pointer);
      out.push(...inner);
      continue;
    }
    seen.add(pointer);
    out.push({ pointer, code, detail: describe(error, code) });
  }
  return characterErrors(value, prefix, out);
}

// A lone surrogate: a high one not followed by a low one, or a low one not preceded by a high one.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * True when `text` holds U+0000 or a lone UTF-16 surrogate. Neither survives storage: Postgres
 * text and jsonb cannot hold U+0000, and a lone surrogate has no UTF-8 form, so each storage
 * would keep a different replacement (three distinct names could become one). They are refused
 * wherever a string enters the engine, on every storage alike.
 */
export function hasInvalidCharacter(text: string): boolean {
  return text.includes('\u0000') || LONE_SURROGATE.test(text);
}

const INVALID_CHARACTER_DETAIL = 'Text cannot contain the NUL character (U+0000) or a lone UTF-16 surrogate.';

/** The `invalid_character` error of one string the engine received, at `pointer`. */
export function invalidCharacterError(pointer: string): FerryError {
  return validationError([{ pointer, code: 'invalid_character', detail: INVALID_CHARACTER_DETAIL }]);
}

/** Throws {@link invalidCharacterError} when `text` is set and holds a character no storage keeps. */
export function assertText(text: string | undefined, pointer: string): void {
  if (text !== undefined && hasInvalidCharacter(text)) throw invalidCharacterError(pointer);
}

/**
 * Adds an `invalid_character` error for every string (or object key) that
 * {@link hasInvalidCharacter} refuses: an application must not work on SQLite and then fail on
 * Postgres. Appends to `out` (skipping pointers already reported) and returns it.
 */
function characterErrors(value: unknown, pointer: string, out: FieldError[]): FieldError[] {
  // An explicit stack, not recursion: an embedder may hand a service any depth of object, and
  // the walk that checks it must not be what overflows. Children are pushed in reverse, so the
  // errors come out in document order.
  const reported = new Set(out.map((e) => e.pointer));
  const report = (at: string) => {
    if (reported.has(at)) return;
    reported.add(at);
    out.push({ pointer: at, code: 'invalid_character', detail: INVALID_CHARACTER_DETAIL });
  };
  const stack: Array<[unknown, string]> = [[value, pointer]];
  while (stack.length > 0) {
    const [item, at] = stack.pop()!;
    if (typeof item === 'string') {
      if (hasInvalidCharacter(item)) report(at);
    } else if (Array.isArray(item)) {
      for (let i = item.length - 1; i >= 0; i--) stack.push([item[i], `${at}/${i}`]);
    } else if (item !== null && typeof item === 'object') {
      const entries = Object.entries(item);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i]!;
        const childPointer = `${at}/${pointerToken(key)}`;
        // A bad key is reported at its own pointer (pushed as the string it is), its value unchecked.
        if (hasInvalidCharacter(key)) stack.push([key, childPointer]);
        else stack.push([child, childPointer]);
      }
    }
  }
  return out;
}

/** Throws `validation_failed` with every field error when `value` does not match `schema`. */
export function assertSchema<T extends TSchema>(schema: T, value: unknown, options: SchemaErrorOptions = {}): void {
  const errors = schemaErrors(schema, value, options);
  if (errors.length > 0) throw validationError(errors);
}

/**
 * Normalizes an ISO 8601 bound to the stored form (UTC, milliseconds) so it compares correctly
 * with `occurred_at` on both dialects; `pointer` names the field in errors.
 */
export function normalizeTimestamp(value: string, pointer: string): string {
  // The pattern fixes the spelling the API takes; the parse refuses a date no calendar has
  // (`2026-02-30`), which `Date.parse` would roll over into March.
  const ms = compile(TimestampSchema).Check(value) ? parseIsoTimestamp(value) : Number.NaN;
  if (Number.isNaN(ms)) {
    throw validationError([{ pointer, code: 'format', detail: 'Expected an ISO 8601 timestamp such as 2026-11-22T10:00:00.000Z.' }]);
  }
  return new Date(ms).toISOString();
}

import { Type, type Static } from '@sinclair/typebox';
import { defineTransform, type JsonObject } from '../../plugin-api/index.js';
import { DOT_PATH_MAX_LENGTH, DOT_PATH_PATTERN, getPath } from './dot-path.js';

/** Longest event type `retype` may produce, once its placeholders are filled. */
export const RETYPE_MAX_LENGTH = 256;

/** Schema of a `retype` step. */
export const RetypeStepSchema = Type.Object(
  {
    type: Type.Literal('retype'),
    to: Type.String({
      minLength: 1,
      maxLength: RETYPE_MAX_LENGTH,
      description: 'The new event type; `{payload.<dot path>}` placeholders are filled from the payload.',
    }),
  },
  { additionalProperties: false },
);

/** A `retype` step definition. */
export type RetypeStep = Static<typeof RetypeStepSchema>;

// `{payload.` followed by anything up to the next closing brace; braces that do not open a
// `payload.` placeholder are literal text. The path itself is checked separately, so a bad one
// is reported instead of silently staying literal.
const PLACEHOLDER = /\{payload\.([^{}]*)\}/g;
const VALID_PATH = new RegExp(DOT_PATH_PATTERN);

/** The dot paths of every placeholder in a `retype` template, in order. */
export function retypePlaceholders(template: string): string[] {
  return [...template.matchAll(PLACEHOLDER)].map((match) => match[1] as string);
}

/**
 * Fills the `{payload.<path>}` placeholders of `template`. Strings are inserted as they are,
 * any other value (numbers, booleans, `null`, objects) as its JSON text. Throws when a
 * placeholder's value is missing: the event cannot be given a meaningful type, so it is
 * dead-lettered at this stage rather than sent on with a half-filled one.
 */
export function fillRetypeTemplate(template: string, payload: JsonObject): string {
  return template.replace(PLACEHOLDER, (_match, path: string) => {
    const value = getPath(payload, path);
    if (value === undefined) throw new Error(`Cannot retype: the payload has no value at ${JSON.stringify(path)}.`);
    return typeof value === 'string' ? value : JSON.stringify(value);
  });
}

/**
 * The `retype` step: sets the event type to `to`, with `{payload.<dot path>}` placeholders
 * filled from the payload (`order.{payload.status}` gives `order.shipped`). Throws when a
 * placeholder's value is missing or the result is empty or longer than
 * {@link RETYPE_MAX_LENGTH} characters; the payload is never changed.
 */
export const retypeStep = defineTransform({
  type: 'retype',
  schema: RetypeStepSchema,
  validate(step) {
    // Placeholder paths follow the same rules as every other path field; checking them here
    // makes a typo a 400 at create time instead of every event being dead-lettered.
    return retypePlaceholders(step.to)
      .filter((path) => path.length > DOT_PATH_MAX_LENGTH || !VALID_PATH.test(path))
      .map((path) => ({
        pointer: '/to',
        code: 'invalid_placeholder',
        detail: `Placeholder {payload.${path}} does not name a valid dot path (no empty or reserved segments).`,
      }));
  },
  apply(event, step) {
    const type = fillRetypeTemplate(step.to, event.payload);
    // A placeholder may bring in an arbitrary string; an empty or oversized type would be stored
    // and indexed as is, so it is refused like a missing value.
    if (type.length === 0) throw new Error('Cannot retype: the filled event type is empty.');
    if (type.length > RETYPE_MAX_LENGTH) {
      throw new Error(`Cannot retype: the filled event type is longer than ${RETYPE_MAX_LENGTH} characters.`);
    }
    return { ...event, type };
  },
});

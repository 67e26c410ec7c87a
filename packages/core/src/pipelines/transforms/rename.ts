import { Type, type Static } from '@sinclair/typebox';
import { defineTransform } from '../../plugin-api/index.js';
import { copyAlong, DotPath, getPath, setPath, withoutPath } from './dot-path.js';

/** Schema of a `rename` step. */
export const RenameStepSchema = Type.Object(
  {
    type: Type.Literal('rename'),
    from: DotPath('Dot path of the value to move.'),
    to: DotPath('Dot path to move it to; an existing value there is replaced.'),
  },
  { additionalProperties: false },
);

/** A `rename` step definition. */
export type RenameStep = Static<typeof RenameStepSchema>;

/**
 * The `rename` step: moves the value at `from` to `to`, replacing what was there and creating
 * missing intermediate objects. A missing `from` leaves the event unchanged, since sources often
 * omit optional fields. Throws (dead-letter) when a non-object value blocks `to`.
 */
export const renameStep = defineTransform({
  type: 'rename',
  schema: RenameStepSchema,
  apply(event, step) {
    if (step.from === step.to) return { ...event };
    // Only what lies on the two paths is copied (a moved object or array one level deep); the
    // rest is shared with the input event, which no step changes in place.
    const found = getPath(event.payload, step.from);
    const value = Array.isArray(found) ? [...found] : typeof found === 'object' && found !== null ? { ...found } : found;
    const rest = value === undefined ? undefined : withoutPath(event.payload, step.from);
    if (value === undefined || rest === undefined) return { ...event };
    const payload = copyAlong(rest, [step.to]);
    setPath(payload, step.to, value);
    return { ...event, payload };
  },
});

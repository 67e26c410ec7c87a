import { Type, type Static } from '@sinclair/typebox';
import { defineTransform } from '../../plugin-api/index.js';
import { DotPath, hasPath, withoutPath } from './dot-path.js';

/** Schema of a `drop` step: at least one path. */
export const DropStepSchema = Type.Object(
  {
    type: Type.Literal('drop'),
    paths: Type.Array(DotPath('Dot path of a value to remove.'), { minItems: 1 }),
  },
  { additionalProperties: false },
);

/** A `drop` step definition. */
export type DropStep = Static<typeof DropStepSchema>;

/**
 * The `drop` step: removes the value at each of `paths`, in order; missing paths are skipped.
 * An array element is spliced out, so later elements move up (and later paths in the same step
 * see the shifted indexes).
 */
export const dropStep = defineTransform({
  type: 'drop',
  schema: DropStepSchema,
  apply(event, step) {
    // Most events of a stream lack most dropped fields: skip the clone when nothing would change.
    if (!step.paths.some((path) => hasPath(event.payload, path))) return { ...event };
    let payload = event.payload;
    for (const path of step.paths) payload = withoutPath(payload, path) ?? payload;
    return { ...event, payload };
  },
});

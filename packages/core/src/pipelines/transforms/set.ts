import { Type, type Static } from '@sinclair/typebox';
import { defineTransform, type JsonValue } from '../../plugin-api/index.js';
import { DotPath, setPath } from './dot-path.js';

/** Schema of a `set` step. `value` is required and may be any JSON value, `null` included. */
export const SetStepSchema = Type.Object(
  {
    type: Type.Literal('set'),
    path: DotPath('Dot path to write; missing intermediate objects are created.'),
    value: Type.Unknown({ description: 'The constant JSON value to write.' }),
  },
  { additionalProperties: false },
);

/** A `set` step definition. */
export type SetStep = Static<typeof SetStepSchema>;

/**
 * The `set` step: writes a constant at `path`, replacing any value there and creating missing
 * intermediate objects. Throws (dead-letter) when a non-object value blocks the path.
 */
export const setStep = defineTransform({
  type: 'set',
  schema: SetStepSchema,
  apply(event, step) {
    const payload = structuredClone(event.payload);
    // The constant is cloned too: the step object is shared by every event of the pipeline, and
    // a later step changing one event's copy must not change the constant for the next event.
    // The schema leaves `value` unconstrained, but it arrives in a JSON body, so it is JSON.
    setPath(payload, step.path, structuredClone(step.value) as JsonValue);
    return { ...event, payload };
  },
});

import { hash } from 'node:crypto';
import { Type, type Static } from '@sinclair/typebox';
import { defineTransform, type JsonValue } from '../../plugin-api/index.js';
import { copyAlong, DotPath, getPath, setPath } from './dot-path.js';

/** What `redact` writes in place of the value. */
export const REDACTED = '***';

/** Schema of a `mask` step. `method` defaults to `hash`. */
export const MaskStepSchema = Type.Object(
  {
    type: Type.Literal('mask'),
    path: DotPath('Dot path of the value to mask.'),
    method: Type.Optional(Type.Union([Type.Literal('hash'), Type.Literal('redact')], { description: 'Defaults to `hash`.' })),
  },
  { additionalProperties: false },
);

/** A `mask` step definition. */
export type MaskStep = Static<typeof MaskStepSchema>;

/**
 * The salted hash `mask` writes: hex SHA-256 of `salt + ':' + JSON.stringify(value)`. The salt is
 * per pipeline, so equal values hash equally within a pipeline (joins and counts still work)
 * while a hash cannot be matched against a precomputed table or across pipelines. The JSON form
 * keeps `1` and `"1"` apart.
 */
export function maskHash(salt: string, value: JsonValue): string {
  return hash('sha256', `${salt}:${JSON.stringify(value)}`, 'hex');
}

/**
 * The `mask` step: replaces the value at `path` with its salted hash (`hash`, the default) or
 * with `"***"` (`redact`). Any JSON value may be masked, objects included; a missing path is
 * left alone, since there is nothing to hide.
 */
export const maskStep = defineTransform({
  type: 'mask',
  schema: MaskStepSchema,
  apply(event, step, ctx) {
    const value = getPath(event.payload, step.path);
    if (value === undefined) return { ...event };
    const payload = copyAlong(event.payload, [step.path]);
    setPath(payload, step.path, step.method === 'redact' ? REDACTED : maskHash(ctx.salt, value));
    return { ...event, payload };
  },
});

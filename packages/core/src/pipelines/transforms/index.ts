import type { AnyTransformDefinition } from '../../plugin-api/index.js';
import { castStep } from './cast.js';
import { dropStep } from './drop.js';
import { filterStep } from './filter.js';
import { maskStep } from './mask.js';
import { renameStep } from './rename.js';
import { retypeStep } from './retype.js';
import { setStep } from './set.js';

export { castStep, castValue, CAST_TARGETS, CastStepSchema, type CastStep, type CastTarget } from './cast.js';
export {
  DOT_PATH_MAX_LENGTH,
  DOT_PATH_PATTERN,
  DotPath,
  DotPathError,
  FORBIDDEN_PATH_SEGMENTS,
  deletePath,
  getPath,
  hasPath,
  parseDotPath,
  setPath,
  withoutPath,
} from './dot-path.js';
export { dropStep, DropStepSchema, type DropStep } from './drop.js';
export { filterStep, FILTER_OPS, FilterStepSchema, type FilterOp, type FilterStep } from './filter.js';
export { maskHash, maskStep, MaskStepSchema, REDACTED, type MaskStep } from './mask.js';
export { renameStep, RenameStepSchema, type RenameStep } from './rename.js';
export { fillRetypeTemplate, RETYPE_MAX_LENGTH, retypePlaceholders, retypeStep, RetypeStepSchema, type RetypeStep } from './retype.js';
export { setStep, SetStepSchema, type SetStep } from './set.js';

/**
 * The seven built-in transform steps, in the order docs/writing-a-connector.md (Built-in
 * transform steps) lists them. The engine registers them before any plugin, so a plugin may replace one deliberately.
 */
export const builtinTransforms: readonly AnyTransformDefinition[] = Object.freeze([
  filterStep,
  setStep,
  renameStep,
  dropStep,
  maskStep,
  retypeStep,
  castStep,
]);

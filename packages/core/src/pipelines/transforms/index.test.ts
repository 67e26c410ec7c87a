import { TypeCompiler } from '@sinclair/typebox/compiler';
import { describe, expect, it } from 'vitest';
import { builtinTransforms, castStep, dropStep, filterStep, maskStep, renameStep, retypeStep, setStep } from './index.js';

describe('builtinTransforms', () => {
  it('lists the seven built-in steps, each under its own type', () => {
    expect(builtinTransforms.map((t) => t.type)).toEqual(['filter', 'set', 'rename', 'drop', 'mask', 'retype', 'cast']);
    expect(builtinTransforms).toEqual([filterStep, setStep, renameStep, dropStep, maskStep, retypeStep, castStep]);
    expect(Object.isFrozen(builtinTransforms)).toBe(true);
  });

  it.each(builtinTransforms.map((t) => [t.type, t] as const))('%s: schema pins its type literal and compiles', (type, t) => {
    // The engine validates with the TypeBox compiler; the path pattern must compile there too.
    const check = TypeCompiler.Compile(t.schema);
    expect(t.schema.properties.type.const).toBe(type);
    expect(t.schema.additionalProperties).toBe(false);
    expect(check.Check({ type: 'nope' })).toBe(false);
  });
});

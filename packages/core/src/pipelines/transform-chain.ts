import type { TransformStep } from '../common/index.js';
import type { PluginRegistry, AnyTransformDefinition, TransformContext, TransformEvent } from '../plugin-api/index.js';

/** Where an event ended up after the steps. */
export type StepsOutcome =
  | { kind: 'passed'; event: TransformEvent }
  | { kind: 'filtered'; event: TransformEvent; step: number }
  | { kind: 'failed'; event: TransformEvent; step: number; error: unknown; attempts: number };

/**
 * A pipeline's transform steps, resolved against the registry once per definition (not per
 * event). Steps return a new event and leave their input alone, so the event that entered a
 * failing step is still at hand to be dead-lettered and replayed from there.
 */
export class TransformChain {
  private readonly steps: { definition: AnyTransformDefinition; step: TransformStep }[];

  constructor(
    steps: readonly TransformStep[],
    registry: PluginRegistry,
    private readonly context: TransformContext,
  ) {
    this.steps = steps.map((step, index) => {
      const definition = registry.transform(step.type);
      // Step types are checked when a pipeline is saved; one missing now was unregistered since.
      if (!definition) throw new UnknownStepError(index, step.type);
      return { definition, step };
    });
  }

  /** How many steps there are: a replay that starts at this index goes straight to the destination. */
  get length(): number {
    return this.steps.length;
  }

  /**
   * Runs the steps from index `from` on. A step that throws is tried again on the same input,
   * `maxAttempts` times in all, before the event is reported as failed at that step.
   */
  async apply(event: TransformEvent, from: number, maxAttempts: number): Promise<StepsOutcome> {
    let current = event;
    for (let index = from; index < this.steps.length; index++) {
      const { definition, step } = this.steps[index]!;
      let attempts = 0;
      for (;;) {
        attempts++;
        try {
          const result = definition.apply(current, step, this.context);
          const next = result instanceof Promise ? await result : result;
          if (next === null) return { kind: 'filtered', event: current, step: index };
          current = next;
          break;
        } catch (error) {
          if (attempts >= maxAttempts) return { kind: 'failed', event: current, step: index, error, attempts };
        }
      }
    }
    return { kind: 'passed', event: current };
  }
}

/** A pipeline names a step type this engine does not have (a plugin was removed). */
export class UnknownStepError extends Error {
  readonly code = 'unknown_step_type';

  constructor(
    readonly index: number,
    readonly type: string,
  ) {
    super(`Transform step ${index} has type ${JSON.stringify(type)}, which this engine does not register.`);
    this.name = 'UnknownStepError';
  }
}

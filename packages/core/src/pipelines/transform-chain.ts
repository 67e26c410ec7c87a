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
   * `maxAttempts` times in all, before the event is reported as failed at that step. Synchronous
   * while the steps are (the built-in ones are): a promise and a turn of the microtask queue
   * per event cost more than a rename.
   */
  apply(event: TransformEvent, from: number, maxAttempts: number): StepsOutcome | Promise<StepsOutcome> {
    let current = event;
    for (let index = from; index < this.steps.length; index++) {
      const { definition, step } = this.steps[index]!;
      let attempts = 0;
      for (;;) {
        attempts++;
        let result;
        try {
          result = definition.apply(current, step, this.context);
        } catch (error) {
          if (attempts >= maxAttempts) return { kind: 'failed', event: current, step: index, error, attempts };
          continue;
        }
        if (result instanceof Promise) return this.settle(result, current, index, attempts, maxAttempts);
        if (result === null) return { kind: 'filtered', event: current, step: index };
        current = result;
        break;
      }
    }
    return { kind: 'passed', event: current };
  }

  /** The rest of {@link apply} once the step at `index` answered with a promise: awaited (and tried again as apply does), then on from the next step. */
  private async settle(first: Promise<TransformEvent | null>, input: TransformEvent, index: number, attempts: number, maxAttempts: number): Promise<StepsOutcome> {
    const { definition, step } = this.steps[index]!;
    // An async wrapper: a step that throws instead of rejecting is a rejection here too.
    const again = async () => definition.apply(input, step, this.context);
    let pending = first;
    for (;;) {
      let result: TransformEvent | null;
      try {
        result = await pending;
      } catch (error) {
        if (attempts >= maxAttempts) return { kind: 'failed', event: input, step: index, error, attempts };
        attempts++;
        pending = again();
        continue;
      }
      if (result === null) return { kind: 'filtered', event: input, step: index };
      return this.apply(result, index + 1, maxAttempts);
    }
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

import type { PipelineRow } from '../storage/index.js';

/**
 * What the services tell the engine's workers, given to each service when the engine builds it:
 * state changes wait for in-flight work (a pause or a delete lets the current batch finish), and
 * new work starts at once instead of at the next poll. The workers are built first, from the
 * engine's context alone, so nothing is wired after construction. Without workers (a service
 * built on its own, in a test) nothing is in flight: {@link NO_ENGINE_HOOKS}.
 */
export interface EngineHooks {
  /** Resolves when the pipeline has no batch in flight in this engine. */
  drain(pipelineId: string): Promise<void>;
  /** The pipeline's definition or state changed. */
  pipelineChanged(pipelineId: string): void;
  /** Dead-letter replays were requested. */
  replayRequested(): void;
  /**
   * Lets a deleted pipeline's source release what it keeps for it (see the plugin API's
   * `releaseSource`); false when the deletion must wait for a later try.
   */
  releaseSource(row: PipelineRow): Promise<boolean>;
  /** A redelivery or recovery made webhook deliveries due. */
  deliveriesDue(): void;
}

/** Hooks of an engine with no workers: nothing is in flight, every release may go ahead. */
export const NO_ENGINE_HOOKS: EngineHooks = {
  drain: async () => undefined,
  pipelineChanged: () => undefined,
  replayRequested: () => undefined,
  releaseSource: async () => true,
  deliveriesDue: () => undefined,
};

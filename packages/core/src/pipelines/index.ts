/**
 * Pipelines: the service (CRUD, states, runs), the runtime (streaming workers, cron, run queue),
 * one pipeline's flow from source batch to commit, and the transform steps.
 */
export { assertSchedule, nextFireAfter } from './cron-schedule.js';
export { processItems, type ItemResult, type WorkItem } from './event-processor.js';
export { FlowError } from './flow-error.js';
export { compileSteps, openConnections } from './pipeline-connections.js';
export { type FlowDeps } from './pipeline-flow.js';
export { PipelineRuntime } from './pipeline-runtime.js';
export { PipelinesService, type DeletePipelineResult } from './pipelines-service.js';
export { RunFeed, runsStream, storedRuns, type RunsReader, type RunsStreamOptions } from './run-feed.js';
export { DEFAULT_RUNTIME_OPTIONS, resolveRuntimeOptions, type RuntimeOptions, type RuntimeOptionsInput } from './runtime-options.js';
export { DOT_PATH_PATTERN, DotPath, getPath } from './transforms/dot-path.js';
export { builtinTransforms } from './transforms/index.js';

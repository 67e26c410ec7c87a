/**
 * The engine and its wiring: `createEngine`, the context every part shares, the container that
 * builds the services, the hooks from services into workers, platform events in process, retention.
 */
export { afterCommit, assertWorkspaceId, nowIso, reader, transact, type Emit, type EngineContext } from './engine-context.js';
export { NO_ENGINE_HOOKS, type EngineHooks } from './engine-hooks.js';
export { Engine, createEngine, engineContext, idempotencyRecords, type EngineOptions, type EngineState } from './engine.js';
export { type PlatformEventListener } from './platform-event-bus.js';
export { type RetentionOptions, type RetentionOptionsInput } from './retention.js';

/**
 * The floor every feature stands on: the context one engine's parts share (storage, clock, ids,
 * the platform event bus, settings), transactions and what runs after they commit, and the hooks
 * from services into the workers. The composition root (`engine/`) builds it; the features
 * (`connectors/`, `pipelines/`, `events/`, `webhooks/`, `access/`) only use it.
 */
export { afterCommit, assertWorkspaceId, newPlatformEvent, nowIso, reader, transact, type Emit, type BackfillProgress, type EngineContext, type OpenTransaction, type ServiceSettings } from './engine-context.js';
export { NO_ENGINE_HOOKS, type EngineHooks } from './engine-hooks.js';
export { type BackfillChange, type BackfillChanges, type EventLogRecorder, type RunChange, type RunChanges } from './feeds.js';
export { PlatformEventBus, type PlatformEventListener } from './platform-event-bus.js';
export { TransactionScope } from './transaction-scope.js';

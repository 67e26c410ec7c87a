/**
 * The composition root: `createEngine`, the container that builds the services and wires them
 * to the context (`context/`), retention.
 */
export { Engine, createEngine, engineContext, idempotencyRecords, type EngineOptions, type EngineState } from './engine.js';
export { type RetentionOptions, type RetentionOptionsInput } from './retention.js';

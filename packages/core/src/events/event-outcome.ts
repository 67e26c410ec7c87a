import type { TransformEvent } from '../plugin-api/index.js';

// The unit of the event log: an event on its way (a batch's, or a replay's), and what became
// of it. The pipelines produce them (`pipelines/event-processor.ts`); the log records them.

/** One event to take through the steps and the destination. */
export interface WorkItem {
  event: TransformEvent;
  /** Index of the first step to run; `chain.length` sends it straight to the destination (a replay of a destination failure). */
  fromStep: number;
  /** Attempts already spent on it (replays carry their past ones). */
  attemptsBefore: number;
}

/** What became of one event. */
export type ItemResult =
  | { status: 'delivered'; event: TransformEvent; attempts: number }
  | { status: 'filtered'; event: TransformEvent; attempts: number }
  | {
      status: 'dead_lettered';
      /** The event as it entered the stage that failed: what a replay starts from. */
      event: TransformEvent;
      attempts: number;
      stage: string;
      code: string;
      message: string;
    };

/** The result of an event that exhausted its attempts. */
export type DeadLettered = Extract<ItemResult, { status: 'dead_lettered' }>;

import { madePayloadJson } from '../plugin-api/index.js';
import type { EventRow } from '../storage/index.js';
import type { ItemResult } from './event-outcome.js';

/** What the event log keeps of events' payloads: a pipeline's `event_log.payloads`. */
export type PayloadsKept = 'all' | 'failed';

/**
 * The event-log rows of processed events: what a batch (or a replay) records, and, presented,
 * what `engine.events$` hears of it. `now` is the commit's time. With `payloads: 'failed'` only a
 * dead-lettered event keeps its payload (a replay's events were dead-lettered, and keep theirs).
 */
export function eventRows(workspaceId: string, pipelineId: string, results: readonly ItemResult[], now: string, payloads: PayloadsKept = 'all'): EventRow[] {
  const all = payloads === 'all';
  const rows: EventRow[] = new Array(results.length);
  for (let i = 0; i < results.length; i++) {
    const r = results[i]!;
    const dead = r.status === 'dead_lettered';
    rows[i] = {
      id: r.event.id,
      workspace_id: workspaceId,
      pipeline_id: pipelineId,
      type: r.event.type,
      occurred_at: r.event.occurredAt,
      payload: all || dead ? r.event.payload : null,
      // The text the destination made of it, if it did (see payloadJson): the log's unit reuses it.
      payload_json: all || dead ? madePayloadJson(r.event) : undefined,
      status: r.status,
      attempts: r.attempts,
      error: dead ? { stage: r.stage, code: r.code, message: r.message } : null,
      dead_lettered_at: dead ? now : null,
      created_at: now,
      updated_at: now,
    };
  }
  return rows;
}

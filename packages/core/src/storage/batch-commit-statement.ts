import type { Knex } from 'knex';
import { toJson } from './sql-helpers.js';
import { keyLookup } from './event-units.js';
import type { AppendedUnit } from './repositories/events-repo.js';
import type { Checkpoint } from '../plugin-api/index.js';
import type { Fence } from './leases.js';
import type { MinuteCounts, PipelineMinuteRow } from './repositories/pipeline-minutes-repo.js';

/** The run and minute counters, in the order of the statement's parameters. */
const COUNTERS = ['events_read', 'events_written', 'events_filtered', 'events_dead_lettered'] as const;

/** What of a batch's commit (`BatchCommit` of `batch-commits.ts`) the statement writes beside its unit. */
export interface CommittedBatch {
  pipelineId: string;
  runId: string | null;
  fence: Fence;
  checkpoint: Checkpoint;
  counts: MinuteCounts;
  minute?: PipelineMinuteRow;
  now: string;
}

/** A statement and its parameters, for `knex.raw`. */
export interface Statement {
  sql: string;
  bindings: Knex.RawBinding[];
}

/**
 * A batch's whole commit as one Postgres statement: the fence, the checkpoint, the event log's
 * unit and its types, the run's counters and the minute's row, as data-modifying CTEs. One
 * statement is its own transaction: one round trip instead of seven (BEGIN, five statements,
 * COMMIT), which on a 2-core machine cost the engine's main thread more than everything else
 * the commit does (each write and read of the socket is a system call).
 *
 * Everything after the checkpoint selects `FROM fenced`: when the lease is no longer held
 * (`held` is empty), no checkpoint is written, so nothing else is either, and the answer's
 * `fenced` is 0. Data-modifying CTEs run to completion whether or not the final SELECT reads
 * them. Only the common batch is written this way: one unit, no dead letters, no change rows
 * and no platform events (the others take a transaction of several statements).
 *
 * `unit` is absent for a batch without events; `body` is the unit's packed body.
 */
export function batchCommitStatement(batch: CommittedBatch, unit: AppendedUnit | undefined, body: Buffer | undefined): Statement {
  const bindings: Knex.RawBinding[] = [batch.fence.name, batch.fence.token, batch.now, batch.pipelineId, toJson(batch.checkpoint), batch.runId, batch.now];
  // Postgres locks the lease row until the commit, so a takeover cannot slip in before it.
  const ctes = [
    'held AS (SELECT name FROM leases WHERE name = ? AND token = ? AND expires_at > ? FOR UPDATE)',
    `fenced AS (INSERT INTO checkpoints (pipeline_id, value, run_id, updated_at) SELECT ?, ?, ?, ? FROM held
      ON CONFLICT (pipeline_id) DO UPDATE SET value = excluded.value, run_id = excluded.run_id, updated_at = excluded.updated_at RETURNING pipeline_id)`,
  ];
  if (unit !== undefined && body !== undefined) {
    const u = unit.unit;
    const lookup = keyLookup(unit.keys);
    ctes.push(
      `logged AS (INSERT INTO event_units (workspace_id, pipeline_id, count, min_occurred_at, max_occurred_at, failed, filtered, created_at, min_key, max_key, keys, body)
        SELECT ?, ?, ?::integer, ?, ?, ?::integer, ?::integer, ?, ?::bigint, ?::bigint, ?::bigint[], ?::bytea FROM fenced RETURNING id)`,
      `typed AS (INSERT INTO event_unit_types (pipeline_id, type, unit_id, events)
        SELECT ?, t.type, logged.id, t.events FROM logged, unnest(?::text[], ?::text[]) AS t(type, events)
        ON CONFLICT (pipeline_id, type, unit_id) DO NOTHING)`,
    );
    bindings.push(unit.workspace_id, unit.pipeline_id, u.count, u.min_occurred_at, u.max_occurred_at, u.failed, u.filtered, unit.created_at);
    bindings.push(lookup.min_key, lookup.max_key, lookup.keys, body);
    // A text[] with NULLs: node-postgres spells a JS array as an array literal, null as NULL.
    bindings.push(unit.pipeline_id, u.types, u.types.map((type) => u.inline.get(type) ?? null) as unknown as string[]);
  }
  if (batch.runId !== null) {
    ctes.push(`counted AS (UPDATE runs SET ${COUNTERS.map((c) => `${c} = ${c} + ?::integer`).join(', ')} WHERE id = ? AND EXISTS (SELECT 1 FROM fenced))`);
    bindings.push(...COUNTERS.map((c) => batch.counts[c] ?? 0), batch.runId);
  }
  if (batch.minute !== undefined) {
    const m = batch.minute;
    ctes.push(
      `minuted AS (INSERT INTO pipeline_minutes (pipeline_id, workspace_id, minute, ${COUNTERS.join(', ')})
        SELECT ?, ?, ?, ${COUNTERS.map(() => '?::integer').join(', ')} FROM fenced
        ON CONFLICT (pipeline_id, minute) DO UPDATE SET ${COUNTERS.map((c) => `${c} = pipeline_minutes.${c} + excluded.${c}`).join(', ')})`,
    );
    bindings.push(m.pipeline_id, m.workspace_id, m.minute, ...COUNTERS.map((c) => m[c]));
  }
  return { sql: `WITH ${ctes.join(',\n')}\nSELECT count(*)::integer AS fenced FROM fenced`, bindings };
}

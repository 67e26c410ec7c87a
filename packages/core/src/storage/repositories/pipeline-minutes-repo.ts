import { affected, toInt, type Db } from '../sql-helpers.js';
import { singleStep, type WriterStep } from '../sqlite-writer-thread.js';

/** The counters of a minute, as a batch's commit adds to them. */
export interface MinuteCounts {
  events_read: number;
  events_written: number;
  events_filtered: number;
  events_dead_lettered: number;
}

/** Row of `pipeline_minutes`: what a pipeline's batches committed in one minute (UTC). */
export interface PipelineMinuteRow extends MinuteCounts {
  pipeline_id: string;
  workspace_id: string;
  /** The minute's start, ISO 8601 UTC with milliseconds: `2026-11-26T19:04:00.000Z`. */
  minute: string;
}

const COUNTERS = ['events_read', 'events_written', 'events_filtered', 'events_dead_lettered'] as const;

/**
 * Adds a batch to its minute's row in one statement, whoever commits first in that minute: the
 * same SQL on SQLite (3.24 and later) and Postgres, on the engine's connection (`?` placeholders,
 * which knex turns into `$n` for Postgres) and on the SQLite writer thread alike.
 */
const ADD_MINUTE = `INSERT INTO pipeline_minutes (pipeline_id, workspace_id, minute, ${COUNTERS.join(', ')}) VALUES (?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (pipeline_id, minute) DO UPDATE SET ${COUNTERS.map((c) => `${c} = pipeline_minutes.${c} + excluded.${c}`).join(', ')}`;

const addParams = (row: PipelineMinuteRow) => [row.pipeline_id, row.workspace_id, row.minute, ...COUNTERS.map((c) => row[c])];

const map = (row: Record<string, unknown>): PipelineMinuteRow => ({
  pipeline_id: String(row.pipeline_id),
  workspace_id: String(row.workspace_id),
  minute: String(row.minute),
  events_read: toInt(row.events_read),
  events_written: toInt(row.events_written),
  events_filtered: toInt(row.events_filtered),
  events_dead_lettered: toInt(row.events_dead_lettered),
});

/** Per pipeline and minute, the events its batches committed (`pipelines.stats`). */
export class PipelineMinutesRepo {
  constructor(private readonly db: Db) {}

  /** Adds a batch's counts to the row of its pipeline and minute, creating it when it is the minute's first. */
  async add(row: PipelineMinuteRow): Promise<void> {
    await this.db.raw(ADD_MINUTE, addParams(row));
  }

  /** A pipeline's rows of the workspace whose minute is in `[since, until)`, oldest first; minutes without a commit have none. */
  async range(workspaceId: string, pipelineId: string, since: string, until: string): Promise<PipelineMinuteRow[]> {
    const rows = (await this.db('pipeline_minutes')
      .where({ workspace_id: workspaceId, pipeline_id: pipelineId })
      .andWhere('minute', '>=', since)
      .andWhere('minute', '<', until)
      .orderBy('minute')) as Record<string, unknown>[];
    return rows.map(map);
  }

  /** The earliest minute any pipeline has a row for, or null when the table is empty (the `minute` index answers it). */
  async oldest(): Promise<string | null> {
    const row = (await this.db('pipeline_minutes').min({ m: 'minute' }).first()) as { m: unknown } | undefined;
    return row?.m === null || row?.m === undefined ? null : String(row.m);
  }

  /** Deletes up to `limit` rows whose minute is before `before`, oldest first, across every pipeline; returns how many. */
  async deleteBefore(before: string, limit: number): Promise<number> {
    const oldest = this.db('pipeline_minutes').select('pipeline_id', 'minute').where('minute', '<', before).orderBy('minute').limit(limit);
    // A row value against the chunk: both dialects compare `(a, b) IN (SELECT a, b ...)`.
    return affected(await this.db('pipeline_minutes').whereIn(['pipeline_id', 'minute'], oldest).delete());
  }
}

/** {@link PipelineMinutesRepo.add} as a step of a SQLite writer-thread transaction. */
export function pipelineMinuteStep(row: PipelineMinuteRow): WriterStep {
  return singleStep(ADD_MINUTE, addParams(row));
}

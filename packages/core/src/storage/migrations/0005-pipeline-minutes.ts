import type { Knex } from 'knex';

/**
 * `pipeline_minutes`: what each pipeline's batches committed, per minute of commit (UTC), for
 * `pipelines.stats` (`GET /v2/pipelines/{id}/stats`). Neither the runs (a streaming run spans
 * hours) nor the event log (a count over it grows with the log) answer "events per minute over
 * the last hour" cheaply; a row per pipeline and minute, added to by each batch's commit in one
 * upsert, does, in at most 1,440 rows read.
 *
 * - `minute` is the minute's start, spelled like every timestamp (`2026-11-26T19:04:00.000Z`),
 *   so ranges compare as text on both dialects.
 * - The primary key `(pipeline_id, minute)` is what the commit's upsert conflicts on, and the
 *   order a pipeline's window is read in.
 * - The index on `minute` lets retention find the oldest rows across every pipeline (deleted
 *   ones included) without walking the table; it gets an entry per pipeline and minute, not per
 *   batch, since the upsert's updates never change `minute`.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('pipeline_minutes', (t) => {
    t.text('pipeline_id').notNullable();
    t.text('workspace_id').notNullable();
    t.text('minute').notNullable();
    t.integer('events_read').notNullable().defaultTo(0);
    t.integer('events_written').notNullable().defaultTo(0);
    t.integer('events_filtered').notNullable().defaultTo(0);
    t.integer('events_dead_lettered').notNullable().defaultTo(0);
    t.primary(['pipeline_id', 'minute']);
    t.index(['minute']);
  });
}

/** Drops the table. */
export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('pipeline_minutes');
}

import type { Knex } from 'knex';

/**
 * `pipeline_holds`: what a pipeline whose flow is held waits on (`held` of the pipeline record):
 * since when, how many attempts, the last error, the next attempt, the events waiting. One row
 * per held pipeline, written by the engine that runs its flow at each failed attempt and deleted
 * when the flow goes on or ends, so any engine sharing the database answers the same.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('pipeline_holds', (t) => {
    t.text('pipeline_id').primary();
    t.text('workspace_id').notNullable();
    t.text('since').notNullable();
    t.integer('attempts').notNullable();
    t.text('error_code').notNullable();
    t.text('error_message').notNullable();
    t.text('next_attempt_at').notNullable();
    t.integer('events_waiting').notNullable();
    t.text('updated_at').notNullable();
  });
}

/** Drops the table. */
export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('pipeline_holds');
}

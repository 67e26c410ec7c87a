import type { Knex } from 'knex';

/**
 * `pipelines.event_log`: what the event log keeps of a pipeline, as JSON text
 * (`{"payloads":"all"|"failed","retention_days":n|null}`). Existing pipelines keep everything
 * for the server's retention, as before.
 */
export const DEFAULT_EVENT_LOG = '{"payloads":"all","retention_days":null}';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('pipelines', (t) => {
    t.text('event_log').notNullable().defaultTo(DEFAULT_EVENT_LOG);
  });
}

/** Drops the column. */
export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('pipelines', (t) => {
    t.dropColumn('event_log');
  });
}

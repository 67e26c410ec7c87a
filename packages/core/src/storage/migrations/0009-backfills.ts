import type { Knex } from 'knex';

/**
 * `backfills`: re-reads of what a pipeline's source holds (docs/api.md, Backfills), asked for
 * through the API or started by the source itself (an incremental first snapshot). The source
 * keeps the exact position in its checkpoint, committed with each batch; this row is what the
 * API shows: the state, the tables with their progress, the filter and the chunk size asked for.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('backfills', (t) => {
    t.text('id').primary();
    t.text('workspace_id').notNullable();
    t.text('pipeline_id').notNullable();
    t.text('state').notNullable();
    // JSON: [{ table, rows_read, rows_estimated, state }], in reading order.
    t.text('tables').notNullable();
    // JSON: { "<table>": "<predicate>" } as given, or null.
    t.text('where_filter');
    t.integer('chunk_size');
    t.bigInteger('rows_read').notNullable().defaultTo(0);
    // JSON: { code, message }, or null.
    t.text('error');
    t.text('created_at').notNullable();
    t.text('started_at');
    t.text('finished_at');
    t.text('updated_at').notNullable();
    t.index(['pipeline_id', 'id'], 'backfills_pipeline_idx');
  });
}

/** Drops the table. */
export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('backfills');
}

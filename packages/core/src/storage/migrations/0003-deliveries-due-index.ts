import type { Knex } from 'knex';

/**
 * The delivery queue's index: deliveries still to attempt, by when they are due. The claim reads
 * it in order and stops at `limit`, whatever the backlog; the 0001 index on (status,
 * next_attempt_at) needed a sort of every due row for two statuses, and kept entries for the
 * delivered and failed rows that are nearly all of the table. Queries state the same literal
 * `status IN ('pending', 'retrying')` so both planners can prove the partial index applies.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS deliveries_status_next_attempt_at_index');
  await knex.raw(`CREATE INDEX deliveries_due ON deliveries (next_attempt_at, id) WHERE status IN ('pending', 'retrying')`);
}

/** Restores the index of 0001. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS deliveries_due');
  await knex.raw('CREATE INDEX deliveries_status_next_attempt_at_index ON deliveries (status, next_attempt_at)');
}

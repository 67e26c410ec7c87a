import type { Knex } from 'knex';

/**
 * The initial schema. Conventions that hold on both dialects:
 * - timestamps are ISO 8601 UTC strings with milliseconds (`text`): they sort the same way on
 *   SQLite and Postgres, so keyset cursors compare identically;
 * - JSON is stored as `text` and parsed by the repositories, for the same reason;
 * - every resource row carries `workspace_id`, and every query filters on it;
 * - queue tables (runs, dead_letters, deliveries) carry `lease_token`, `lease_holder` and
 *   `lease_expires_at`: a claim is a lease, so a crashed instance's work is taken over and a
 *   zombie's completion is refused.
 */
export async function up(knex: Knex): Promise<void> {
  const leaseColumns = (t: Knex.CreateTableBuilder) => {
    t.text('lease_token');
    t.text('lease_holder');
    t.text('lease_expires_at');
  };

  await knex.schema.createTable('workspaces', (t) => {
    t.text('id').primary();
    t.text('created_at').notNullable();
  });

  await knex.schema.createTable('api_keys', (t) => {
    t.text('id').primary();
    t.text('key_id').notNullable().unique();
    t.text('workspace_id').notNullable().references('workspaces.id');
    t.text('name');
    t.text('scopes').notNullable();
    t.text('secret_hash').notNullable();
    t.text('last4').notNullable();
    t.text('rate_limit');
    t.text('created_at').notNullable();
    t.text('last_used_at');
    t.text('revoked_at');
    t.index(['workspace_id', 'id']);
  });

  await knex.schema.createTable('connectors', (t) => {
    t.text('id').primary();
    t.text('workspace_id').notNullable().references('workspaces.id');
    t.text('name');
    t.text('type').notNullable();
    t.text('direction').notNullable();
    t.text('config').notNullable();
    t.text('secrets');
    t.text('health').notNullable();
    t.text('health_checked_at');
    t.text('last_error');
    t.text('rotation_status');
    t.text('rotation_started_at');
    t.text('rotation_state');
    t.text('created_at').notNullable();
    t.text('updated_at').notNullable();
    t.index(['workspace_id', 'id']);
    t.index(['workspace_id', 'type', 'id']);
  });

  await knex.schema.createTable('pipelines', (t) => {
    t.text('id').primary();
    t.text('workspace_id').notNullable().references('workspaces.id');
    t.text('name').notNullable();
    // No foreign key to connectors: a deleted pipeline keeps its row (and its references) while
    // its connectors may be deleted; live references are enforced by the connectors service.
    t.text('source_connector_id').notNullable();
    t.text('destination_connector_id').notNullable();
    t.text('transforms').notNullable();
    t.text('schedule');
    t.text('state').notNullable();
    t.integer('batch_size').notNullable();
    t.integer('flush_interval_ms').notNullable();
    t.integer('max_attempts').notNullable();
    t.text('salt').notNullable();
    t.text('last_tick_at');
    // Who paused it: null (a user, or never), or `rotation:<connector id>` so a rotation resumes
    // exactly the pipelines it paused.
    t.text('paused_by');
    t.text('created_at').notNullable();
    t.text('updated_at').notNullable();
    t.text('deleted_at');
    t.index(['workspace_id', 'id']);
    t.index(['source_connector_id']);
    t.index(['destination_connector_id']);
  });
  // Names are unique among live pipelines only: a deleted pipeline's name may be reused.
  await knex.raw('CREATE UNIQUE INDEX pipelines_workspace_name_live ON pipelines (workspace_id, name) WHERE deleted_at IS NULL');

  await knex.schema.createTable('runs', (t) => {
    t.text('id').primary();
    t.text('workspace_id').notNullable();
    t.text('pipeline_id').notNullable().references('pipelines.id');
    t.text('trigger').notNullable();
    t.text('scheduled_for');
    t.text('status').notNullable();
    t.text('started_at');
    t.text('finished_at');
    t.integer('events_read').notNullable().defaultTo(0);
    t.integer('events_written').notNullable().defaultTo(0);
    t.integer('events_filtered').notNullable().defaultTo(0);
    t.integer('events_dead_lettered').notNullable().defaultTo(0);
    t.text('error');
    leaseColumns(t);
    t.text('created_at').notNullable();
    // One run per pipeline and cron tick, however many engines see the tick (NULLs are distinct,
    // so manual runs never collide).
    t.unique(['pipeline_id', 'scheduled_for']);
    t.index(['pipeline_id', 'id']);
    t.index(['status', 'lease_expires_at']);
  });

  await knex.schema.createTable('checkpoints', (t) => {
    t.text('pipeline_id').primary().references('pipelines.id');
    t.text('value').notNullable();
    t.text('run_id');
    t.text('updated_at').notNullable();
  });

  await knex.schema.createTable('events', (t) => {
    t.text('id').primary();
    t.text('workspace_id').notNullable();
    t.text('pipeline_id').notNullable();
    t.text('type').notNullable();
    t.text('occurred_at').notNullable();
    t.text('payload').notNullable();
    t.text('status').notNullable();
    t.integer('attempts').notNullable().defaultTo(1);
    t.text('error');
    t.text('dead_lettered_at');
    t.text('created_at').notNullable();
    t.text('updated_at').notNullable();
    t.index(['pipeline_id', 'occurred_at', 'id']);
    t.index(['pipeline_id', 'status']);
  });

  // What is needed to replay a dead-lettered event from the stage where it failed; also the
  // replay queue (a replay request is a due row, claimed with a lease).
  await knex.schema.createTable('dead_letters', (t) => {
    t.text('event_id').primary();
    t.text('workspace_id').notNullable();
    t.text('pipeline_id').notNullable();
    t.text('stage').notNullable();
    t.text('record').notNullable();
    t.text('replay_requested_at');
    leaseColumns(t);
    t.text('created_at').notNullable();
    t.index(['pipeline_id', 'replay_requested_at']);
  });
  // The replay queue's claim scans requested replays across all pipelines.
  await knex.raw('CREATE INDEX dead_letters_replay_queue ON dead_letters (replay_requested_at) WHERE replay_requested_at IS NOT NULL');

  await knex.schema.createTable('webhook_subscriptions', (t) => {
    t.text('id').primary();
    t.text('workspace_id').notNullable().references('workspaces.id');
    t.text('url').notNullable();
    t.text('events').notNullable();
    t.text('description');
    t.boolean('enabled').notNullable();
    t.text('disabled_reason');
    t.text('secret').notNullable();
    t.text('previous_secrets');
    t.text('failing_since');
    t.text('created_at').notNullable();
    t.text('updated_at').notNullable();
    t.index(['workspace_id', 'id']);
  });

  // The outbox: a platform event exists if and only if the state change that caused it committed.
  await knex.schema.createTable('platform_events', (t) => {
    t.bigIncrements('seq').primary();
    t.text('id').notNullable().unique();
    t.text('workspace_id').notNullable();
    t.text('type').notNullable();
    t.text('data').notNullable();
    t.text('occurred_at').notNullable();
    t.text('fanned_out_at');
    t.index(['fanned_out_at', 'seq']);
  });

  await knex.schema.createTable('deliveries', (t) => {
    t.text('id').primary();
    t.text('workspace_id').notNullable();
    t.text('subscription_id').notNullable();
    t.text('event_id').notNullable();
    t.text('event_type').notNullable();
    t.text('body').notNullable();
    t.text('status').notNullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.text('next_attempt_at');
    t.text('cycle_started_at').notNullable();
    t.text('last_attempt_at');
    t.integer('last_response_status');
    t.text('last_error');
    leaseColumns(t);
    t.text('created_at').notNullable();
    t.text('updated_at').notNullable();
    t.unique(['subscription_id', 'event_id']);
    t.index(['subscription_id', 'id']);
    t.index(['status', 'next_attempt_at']);
  });

  await knex.schema.createTable('delivery_attempts', (t) => {
    t.text('id').primary();
    t.text('delivery_id').notNullable();
    t.text('workspace_id').notNullable();
    t.text('attempted_at').notNullable();
    t.integer('response_status');
    t.integer('duration_ms').notNullable();
    t.text('response_body');
    t.text('error');
    t.index(['delivery_id', 'id']);
  });

  await knex.schema.createTable('idempotency_keys', (t) => {
    t.text('api_key_id').notNullable();
    t.text('key').notNullable();
    t.text('workspace_id').notNullable();
    t.text('request_hash').notNullable();
    t.text('owner_token').notNullable();
    t.text('status').notNullable();
    t.integer('response_status');
    t.text('response_headers');
    t.text('response_body');
    t.text('locked_until');
    t.text('created_at').notNullable();
    t.text('expires_at').notNullable();
    t.primary(['api_key_id', 'key']);
    t.index(['expires_at']);
  });

  await knex.schema.createTable('leases', (t) => {
    t.text('name').primary();
    t.text('holder').notNullable();
    t.text('token').notNullable();
    t.text('acquired_at').notNullable();
    t.text('heartbeat_at').notNullable();
    t.text('expires_at').notNullable();
  });

  await knex.schema.createTable('webhook_inbox', (t) => {
    t.bigIncrements('seq').primary();
    t.text('id').notNullable().unique();
    t.text('workspace_id').notNullable();
    t.text('connector_id').notNullable();
    t.text('message_id').notNullable();
    t.text('type').notNullable();
    t.text('occurred_at').notNullable();
    t.text('payload').notNullable();
    t.text('received_at').notNullable();
    t.unique(['connector_id', 'message_id']);
    t.index(['connector_id', 'seq']);
  });
}

/** Drops everything {@link up} created. */
export async function down(knex: Knex): Promise<void> {
  for (const table of [
    'webhook_inbox', 'leases', 'idempotency_keys', 'delivery_attempts', 'deliveries', 'platform_events',
    'webhook_subscriptions', 'dead_letters', 'events', 'checkpoints', 'runs', 'pipelines', 'connectors',
    'api_keys', 'workspaces',
  ]) {
    await knex.schema.dropTableIfExists(table);
  }
}

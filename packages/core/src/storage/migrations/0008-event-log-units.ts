import type { Knex } from 'knex';
import { compressUnit, encodeUnit, eventKey, keyLookup, type UnitEvent } from '../event-units.js';

/**
 * The event log as units (see `event-units.ts`): a row per batch in `event_units` instead of a
 * row per event in `events`.
 *
 * - `event_units`: the batch's events as one compressed body; its id is the log position of the
 *   pipeline's units (it only grows: AUTOINCREMENT on SQLite, so an id is never given out twice).
 *   Beside the body, what a listing prunes whole units by: the span of `occurred_at`, and how many
 *   events were dead-lettered or filtered. On Postgres a unit is found by an event id's key
 *   (`eventKey`) through the span of its keys (`min_key`, `max_key`, a GiST index) or, when that
 *   span is wide, its `keys` (a GIN index): see `keyLookup`. SQLite has `event_keys` for that.
 * - `event_unit_types`: a unit's distinct types, so a type filter reads only the units that have
 *   it; a type rare in its unit carries a copy of its events (`events`, JSON), so a filter on it
 *   reads these rows rather than the units' bodies.
 * - `event_changes`: what happened to an event after its unit was written, keyed by event id: every
 *   dead-lettered event has its row (status, attempts, error, payload), which a replay updates.
 *   A listing overlays it on the units; `status=dead_lettered` and `replaying` read only it.
 *
 * Today's `events` rows are moved into units, 1,000 events of a pipeline each in the order of
 * the old listing (`occurred_at`, `id`), then the table is dropped.
 */
export async function up(knex: Knex): Promise<void> {
  const postgres = knex.client.config.client === 'pg';
  if (postgres) {
    await knex.raw(`CREATE TABLE event_units (
      id bigserial PRIMARY KEY, workspace_id text NOT NULL, pipeline_id text NOT NULL, count integer NOT NULL,
      min_occurred_at text NOT NULL, max_occurred_at text NOT NULL, failed integer NOT NULL, filtered integer NOT NULL,
      created_at text NOT NULL, min_key bigint NOT NULL, max_key bigint NOT NULL, keys bigint[], body bytea NOT NULL)`);
    // The body is compressed already: Postgres trying again costs CPU for nothing.
    await knex.raw('ALTER TABLE event_units ALTER COLUMN body SET STORAGE EXTERNAL');
    await knex.raw(`CREATE INDEX event_units_key_span ON event_units USING gist (int8range(min_key, max_key, '[]')) WHERE keys IS NULL`);
    await knex.raw('CREATE INDEX event_units_keys ON event_units USING gin (keys) WHERE keys IS NOT NULL');
  } else {
    await knex.raw(`CREATE TABLE event_units (
      id INTEGER PRIMARY KEY AUTOINCREMENT, workspace_id TEXT NOT NULL, pipeline_id TEXT NOT NULL, count INTEGER NOT NULL,
      min_occurred_at TEXT NOT NULL, max_occurred_at TEXT NOT NULL, failed INTEGER NOT NULL, filtered INTEGER NOT NULL,
      created_at TEXT NOT NULL, body BLOB NOT NULL)`);
    await knex.raw('CREATE TABLE event_keys (key INTEGER NOT NULL, unit_id INTEGER NOT NULL, PRIMARY KEY (key, unit_id)) WITHOUT ROWID');
  }
  // A pipeline's units in log order, with what prunes them: read without touching the bodies.
  await knex.raw('CREATE INDEX event_units_pipeline ON event_units (pipeline_id, id, max_occurred_at, min_occurred_at, failed, filtered)');
  await knex.raw(
    `CREATE TABLE event_unit_types (pipeline_id text NOT NULL, type text NOT NULL, unit_id bigint NOT NULL, events text, PRIMARY KEY (pipeline_id, type, unit_id))${postgres ? '' : ' WITHOUT ROWID'}`,
  );
  await knex.schema.createTable('event_changes', (t) => {
    t.text('event_id').primary();
    t.text('workspace_id').notNullable();
    t.text('pipeline_id').notNullable();
    t.bigInteger('unit_id').notNullable();
    t.integer('idx').notNullable();
    t.text('type').notNullable();
    t.text('occurred_at').notNullable();
    t.text('payload');
    t.text('status').notNullable();
    t.integer('attempts').notNullable();
    t.text('error');
    t.text('dead_lettered_at');
    t.text('updated_at').notNullable();
    t.index(['pipeline_id', 'status', 'unit_id', 'idx']);
    t.index(['unit_id']);
  });
  await moveEvents(knex, postgres);
  await knex.schema.dropTable('events');
}

/** Moves the rows of `events` into units, pipeline by pipeline, 1,000 events a unit. */
async function moveEvents(knex: Knex, postgres: boolean): Promise<void> {
  const pipelines = (await knex('events').distinct('pipeline_id', 'workspace_id')) as { pipeline_id: string; workspace_id: string }[];
  for (const { pipeline_id, workspace_id } of pipelines) {
    let after: [string, string] | undefined;
    for (;;) {
      const query = knex('events').where({ pipeline_id, workspace_id }).orderBy([{ column: 'occurred_at' }, { column: 'id' }]).limit(1000);
      if (after) query.andWhereRaw('(occurred_at, id) > (?, ?)', after);
      const rows = (await query) as Record<string, unknown>[];
      if (rows.length === 0) break;
      const last = rows[rows.length - 1]!;
      after = [String(last.occurred_at), String(last.id)];
      const events: UnitEvent[] = rows.map((r) => ({
        id: String(r.id),
        type: String(r.type),
        occurred_at: String(r.occurred_at),
        payload: r.payload === null || r.payload === 'null' ? null : (JSON.parse(String(r.payload)) as UnitEvent['payload']),
        status: r.status as UnitEvent['status'],
        attempts: Number(r.attempts),
        error: r.error === null || r.error === undefined ? null : (JSON.parse(String(r.error)) as UnitEvent['error']),
        dead_lettered_at: (r.dead_lettered_at as string | null) ?? null,
      }));
      const unit = encodeUnit(events);
      const keys = [...new Set(events.map((e) => eventKey(e.id)))];
      const createdAt = rows.reduce((m, r) => (String(r.created_at) > m ? String(r.created_at) : m), '');
      const row = {
        workspace_id, pipeline_id, count: unit.count, min_occurred_at: unit.min_occurred_at, max_occurred_at: unit.max_occurred_at,
        failed: unit.failed, filtered: unit.filtered, created_at: createdAt, body: compressUnit(unit),
      };
      const [inserted] = (await knex('event_units').insert(postgres ? { ...row, ...keyLookup(keys) } : row).returning('id')) as Array<{ id: unknown } | number>;
      const unitId = Number(typeof inserted === 'object' ? inserted.id : inserted);
      if (!postgres) {
        for (let k = 0; k < keys.length; k += 400) await knex('event_keys').insert(keys.slice(k, k + 400).map((key) => ({ key, unit_id: unitId })));
      }
      await knex('event_unit_types').insert(unit.types.map((type) => ({ pipeline_id, type, unit_id: unitId, events: unit.inline.get(type) ?? null })));
      const changed = rows.flatMap((r, idx) => (r.status === 'dead_lettered' || r.status === 'replaying' ? [{ r, idx }] : []));
      for (const { r, idx } of changed) {
        await knex('event_changes').insert({
          event_id: r.id, workspace_id, pipeline_id, unit_id: unitId, idx, type: r.type, occurred_at: r.occurred_at, payload: r.payload,
          status: r.status, attempts: r.attempts, error: r.error, dead_lettered_at: r.dead_lettered_at, updated_at: r.updated_at,
        });
      }
    }
  }
}

/** Back to a row per event: the tables of 0001 and 0004, empty (the units' events are not moved back). */
export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('event_changes');
  await knex.schema.dropTableIfExists('event_unit_types');
  await knex.schema.dropTableIfExists('event_keys');
  await knex.schema.dropTableIfExists('event_units');
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
  });
  await knex.raw('CREATE INDEX events_pipeline_type ON events (pipeline_id, type, occurred_at, id)');
  await knex.raw(`CREATE INDEX events_pipeline_open_status ON events (pipeline_id, status, occurred_at, id) WHERE status <> 'delivered'`);
}

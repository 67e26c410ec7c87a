import type { Knex } from 'knex';
import { DecodedUnit, eventKey } from '../event-units.js';

/**
 * `event_key_spans` (SQLite): how a unit whose events' keys lie in a narrow span (a stream's
 * batch of ULID ids, see `keyLookup`) is found by an event's key, a row or two per unit on a grid
 * of cells (`keySpanCells`) instead of a row per event in `event_keys`. Postgres keeps the span on
 * the unit's row already (0008). The units written before stay found by their `event_keys` rows:
 * a lookup reads both tables, and retention deletes from both.
 */
export async function up(knex: Knex): Promise<void> {
  if (knex.client.config.client === 'pg') return;
  await knex.raw(
    'CREATE TABLE event_key_spans (level INTEGER NOT NULL, cell INTEGER NOT NULL, unit_id INTEGER NOT NULL, min_key INTEGER NOT NULL, max_key INTEGER NOT NULL, PRIMARY KEY (level, cell, unit_id)) WITHOUT ROWID',
  );
}

/** Back to a key row per event: the units filed by their span get their `event_keys` rows, then the spans go. */
export async function down(knex: Knex): Promise<void> {
  if (knex.client.config.client === 'pg') return;
  let after = 0;
  for (;;) {
    const units = (await knex('event_units')
      .select('id', 'body')
      .whereIn('id', knex('event_key_spans').distinct('unit_id'))
      .andWhere('id', '>', after)
      .orderBy('id')
      .limit(100)) as { id: number; body: Buffer }[];
    if (units.length === 0) break;
    for (const unit of units) {
      const keys = [...new Set(new DecodedUnit(unit.body).ids().map(eventKey))];
      for (let k = 0; k < keys.length; k += 400) {
        await knex('event_keys').insert(keys.slice(k, k + 400).map((key) => ({ key, unit_id: unit.id }))).onConflict(['key', 'unit_id']).ignore();
      }
    }
    after = units[units.length - 1]!.id;
  }
  await knex.schema.dropTableIfExists('event_key_spans');
}

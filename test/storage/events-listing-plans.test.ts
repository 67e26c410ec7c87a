import { afterAll, beforeAll, expect, it } from 'vitest';
import { sqliteStorage } from '@ferry/core';
import { openStorage, type FerryStorage } from '@ferry/core/internal';

/**
 * Every filter of the events listing reads by an index in log order: SQLite's plan searches the
 * units of the pipeline (`event_units_pipeline`), the units of a type (`event_unit_types`' key)
 * or, for `dead_lettered` and `replaying`, the change rows by status; never a walk of the whole
 * log, never a sort. The time it saves shows at scale (bench/README.md); the plan is what can be
 * checked here.
 */
let storage: FerryStorage;
const queries: { sql: string; bindings: readonly (string | number)[] }[] = [];
beforeAll(async () => {
  storage = await openStorage(sqliteStorage({ filename: ':memory:' }));
  storage.knex.on('query', (q: { sql: string; bindings?: (string | number)[] }) => queries.push({ sql: q.sql, bindings: q.bindings ?? [] }));
});
afterAll(() => storage.close());

const AT = '2026-01-01T00:00:00.000Z';
const FILTERS = [
  {},
  { type: 'order.created' },
  { status: 'dead_lettered' as const },
  { status: 'replaying' as const },
  { type: 'order.created', status: 'dead_lettered' as const },
  { since: AT },
  { until: AT },
  { type: 'order.created', since: AT, until: '2026-02-01T00:00:00.000Z' },
];

it.each(FILTERS.map((f) => [JSON.stringify(f), f] as const))('the listing with %s searches an index in order, first page and next', async (_name, filters) => {
  for (const after of [undefined, ['12', '34']]) {
    queries.length = 0;
    await storage.repos.events.list('default', 'pip_1', filters, after, 100);
    const listing = queries.find((q) => /from [`"](event_units|event_unit_types|event_changes)[`"]/i.test(q.sql));
    expect(listing).toBeDefined();
    const plan = (await storage.knex.raw(`EXPLAIN QUERY PLAN ${listing!.sql}`, [...listing!.bindings])) as { detail: string }[];
    const details = plan.map((p) => p.detail).join(' | ');
    expect(details).not.toContain('TEMP B-TREE');
    expect(details).not.toMatch(/SCAN /);
    if (filters.status === 'dead_lettered' || filters.status === 'replaying') {
      expect(details).toMatch(/^SEARCH event_changes USING INDEX event_changes_pipeline_id_status_unit_id_idx_index/);
    } else if ('type' in filters) {
      // The unit's types, then each unit by its id.
      expect(details).toMatch(/^SEARCH t USING PRIMARY KEY .* \| SEARCH u USING INTEGER PRIMARY KEY/);
    } else {
      expect(details).toMatch(/^SEARCH u USING (COVERING )?INDEX event_units_pipeline/);
    }
  }
});

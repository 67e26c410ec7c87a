import { afterAll, beforeAll, expect, it } from 'vitest';
import { sqliteStorage } from '@ferry/core';
import { openStorage, type FerryStorage } from '@ferry/core/internal';

/**
 * Every filter of the events listing is answered by an index in the listing's order: SQLite's
 * plan searches an index (no walk of the whole pipeline's log checking each row) and needs no
 * sort. The time it saves shows at scale (bench/README.md); the plan is what can be checked here.
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
  for (const after of [undefined, [AT, 'evt_00000000000000000000000000']]) {
    queries.length = 0;
    await storage.repos.events.list('default', 'pip_1', filters, after, 100);
    const listing = queries.find((q) => /from [`"]events[`"]/i.test(q.sql));
    expect(listing).toBeDefined();
    const plan = (await storage.knex.raw(`EXPLAIN QUERY PLAN ${listing!.sql}`, [...listing!.bindings])) as { detail: string }[];
    const details = plan.map((p) => p.detail).join(' | ');
    expect(details).toMatch(/^SEARCH events USING (COVERING )?INDEX events_pipeline_/);
    expect(details).not.toContain('TEMP B-TREE');
    // A type filter is served by the type index, a status other than delivered by the open-status
    // one; with a time range as well, the planner may take the range of the time index instead.
    if ('type' in filters && !('status' in filters) && !('since' in filters)) expect(details).toContain('events_pipeline_type');
    if ('status' in filters) expect(details).toContain('events_pipeline_open_status');
  }
});

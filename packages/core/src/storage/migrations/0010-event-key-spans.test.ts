import { describe, expect, it } from 'vitest';
import { deriveEventId } from '../../events/index.js';
import { eventKey } from '../event-units.js';
import { openStorage } from '../ferry-storage.js';
import { sqliteStorage } from '../storage-config.js';
import { down, up } from './0010-event-key-spans.js';

const T0 = '2026-01-01T00:00:00.000Z';

describe('migration 0010: event key spans', () => {
  it('down gives the units filed by their span a key row per event; up files new ones by span again', async () => {
    const storage = await openStorage(sqliteStorage({ filename: ':memory:' }));
    try {
      const t0 = Date.parse(T0);
      const rows = Array.from({ length: 300 }, (_, k) => ({
        id: deriveEventId('pip_1', `p${k}`, t0 + k), workspace_id: 'ws_a', pipeline_id: 'pip_1', type: 't', occurred_at: new Date(t0 + k).toISOString(),
        payload: { k }, status: 'delivered' as const, attempts: 1, error: null, dead_lettered_at: null, created_at: T0, updated_at: T0,
      }));
      await storage.repos.events.append(rows);
      expect((await storage.knex('event_keys').count({ n: '*' }))[0]!.n).toBe(0);
      await down(storage.knex);
      expect(await storage.knex.schema.hasTable('event_key_spans')).toBe(false);
      const keys = (await storage.knex('event_keys').select('key', 'unit_id')) as { key: number; unit_id: number }[];
      expect(new Set(keys.map((k) => k.key))).toEqual(new Set(rows.map((r) => eventKey(r.id))));
      expect(new Set(keys.map((k) => k.unit_id))).toEqual(new Set([1]));
      await up(storage.knex);
      await storage.repos.events.append(rows.map((r, k) => ({ ...r, id: deriveEventId('pip_1', `q${k}`, t0 + k) })));
      expect(await storage.repos.events.get('ws_a', rows[7]!.id)).toMatchObject({ payload: { k: 7 }, log: { unit: 1, index: 7 } });
      expect(await storage.repos.events.get('ws_a', deriveEventId('pip_1', 'q8', t0 + 8))).toMatchObject({ payload: { k: 8 }, log: { unit: 2, index: 8 } });
    } finally {
      await storage.close();
    }
  });
});

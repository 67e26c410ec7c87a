/**
 * The snowflake destination under SIGKILL: a child engine streams a Postgres table into a
 * Snowflake table (the emulator in this process, on a real Postgres database) and is killed
 * mid-stream; a successor resumes from the checkpoint. No row may be missing, and none may be
 * there twice: the batches sent but not yet committed when the engine died are sent again with
 * the same event ids, and the destination's MERGE on ID adds nothing for them.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, generateSecretKey, sqliteStorage } from '@ferry/core';
import { engineContext } from '@ferry/core/internal';
import { postgres } from '@ferry/postgres';
import { snowflake } from '@ferry/snowflake';
import { getSharedTestPostgres, startTestSnowflake } from '@ferry/test-servers';
import { startChildEngine, untilReal } from '../support/child-engine.js';

const child = join(import.meta.dirname, 'fixtures', 'pipeline-engine.ts');
const WS = 'default';
const ROWS = 20_000;
const BATCH = 200;
const TABLE = 'orders_out';

describe('snowflake destination survives SIGKILL', () => {
  const cleanup: Array<() => unknown> = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it('misses no row and duplicates none after the engine is killed mid-stream (MERGE on ID)', async () => {
    const dataUrl = await (await getSharedTestPostgres()).createDatabase('snowflake_crash_data');
    const db = new pg.Pool({ connectionString: dataUrl, max: 2 });
    cleanup.push(() => db.end());
    await db.query(`CREATE TABLE orders (id bigint PRIMARY KEY, amount int NOT NULL)`);
    await db.query(`INSERT INTO orders SELECT g, g % 1000 FROM generate_series(1, ${ROWS}) g`);

    const sf = await startTestSnowflake({ database: 'snowflake_crash_warehouse' });
    cleanup.push(() => sf.stop());
    // The destination creates its table on its first write: until then nothing has landed.
    const landed = async () => {
      try {
        return Number((await sf.query<{ n: string }>(`SELECT count(*) AS n FROM ${TABLE}`))[0]!.n);
      } catch (error) {
        if ((error as { code?: string }).code === '42P01') return 0;
        throw error;
      }
    };

    // The API side, on the engines' SQLite file: it creates the pipeline and runs nothing.
    const filename = join(mkdtempSync(join(tmpdir(), 'ferry-snowflake-crash-')), 'ferry.db');
    const secretKey = generateSecretKey();
    const api = await createEngine({ storage: sqliteStorage({ filename }), secretKey, runtime: false, webhookDelivery: false, plugins: [postgres(), snowflake()], outboundAllow: ['127.0.0.1'] });
    await api.start();
    cleanup.push(() => api.stop());
    const source = await api.connectors.create(WS, { type: 'postgres', direction: 'source', config: { connection_string: dataUrl, table: 'orders', cursor_column: 'id', type: 'order.created' } });
    const destination = await api.connectors.create(WS, {
      type: 'snowflake',
      direction: 'destination',
      config: { account: sf.account, username: sf.username, password: sf.password, access_url: sf.url, warehouse: 'FERRY_WH', database: 'FERRY', schema: 'PUBLIC', table: TABLE, create_table: true },
    });
    const pipeline = await api.pipelines.create(WS, { name: 'orders-to-snowflake', source_connector_id: source.id, destination_connector_id: destination.id, batch_size: BATCH, activate: true });

    const first = await startChildEngine(child, [filename, secretKey]);
    cleanup.push(() => first.kill('SIGKILL'));
    await untilReal(async () => (await landed()) >= 2_000, 'the first rows', 90_000, 20);
    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));
    const rowsAtKill = await landed();

    const second = await startChildEngine(child, [filename, secretKey]);
    cleanup.push(() => second.kill('SIGKILL'));
    await untilReal(async () => (await engineContext(api).storage.repos.checkpoints.get(pipeline.id)) === String(ROWS), 'the checkpoint to reach the last row', 90_000, 50);

    // Every row of the table, counted by the Postgres row it carries.
    const groups = await sf.query<{ id: string; n: number }>(`SELECT payload->>'id' AS id, count(*)::int AS n FROM ${TABLE} GROUP BY 1`);
    const seen = new Map(groups.map((g) => [g.id, g.n]));
    const missing = Array.from({ length: ROWS }, (_, i) => String(i + 1)).filter((id) => !seen.has(id));
    const duplicates = groups.reduce((n, g) => n + g.n - 1, 0);
    console.log(JSON.stringify({ connector: 'snowflake', rows: ROWS, rows_at_kill: rowsAtKill, missing: missing.length, duplicates }));
    expect(rowsAtKill).toBeLessThan(ROWS);
    expect(missing).toEqual([]);
    // The successor re-sends the uncommitted batches with the same event ids: MERGE skips them.
    expect(duplicates).toBe(0);
    expect(await landed()).toBe(ROWS);
    const [ids] = await sf.query<{ n: number }>(`SELECT count(DISTINCT id)::int AS n FROM ${TABLE}`);
    expect(ids!.n).toBe(ROWS);
  }, 180_000);
});

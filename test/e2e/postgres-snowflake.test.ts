/**
 * Postgres to Snowflake over the /v2 API, on both adapters and both engine storages: a Postgres
 * table streams into a Snowflake table (the emulator, on a real Postgres database) that the
 * destination creates and merges into by event id. Rows inserted while the pipeline runs arrive
 * too; at the end every row is in the Snowflake table exactly once, with the type and payload it
 * left Postgres with.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { postgres } from '@ferry/postgres';
import { snowflake } from '@ferry/snowflake';
import { eventually } from '@ferry/testing';
import { startTestSnowflake, type TestSnowflake } from '@ferry/test-servers';
import { describeMatrix } from '../http/harness.js';
import { createConnector, createPipeline, ordersDatabase } from './orders.js';

let sf: TestSnowflake;
beforeAll(async () => {
  sf = await startTestSnowflake({ database: 'e2e_snowflake' });
});
afterAll(async () => {
  await sf?.stop();
});

/** A row of the destination table, as Postgres returns it (the VARIANT payload is jsonb). */
type Landed = {
  id: string;
  type: string;
  occurred_at: string | null;
  payload: Record<string, unknown>;
};

/** The rows of a table in the emulator's database; none while the destination has not created it yet. */
async function rowsIn(table: string): Promise<Landed[]> {
  try {
    return await sf.query<Landed>(`SELECT id, type, occurred_at::text AS occurred_at, payload FROM ${table}`);
  } catch (error) {
    if ((error as { code?: string }).code === '42P01') return [];
    throw error;
  }
}

let cells = 0;

describeMatrix(
  'postgres to snowflake over the API',
  (ctx) => {
    it('merges every row into the Snowflake table, once', async () => {
      const cell = cells++;
      const { url, db, insert } = await ordersDatabase('e2e_snowflake_src');
      const table = `orders_out_${cell}`;
      try {
        await insert(1, 40);

        const source = await createConnector(ctx.api, 'postgres', 'source', { connection_string: url, table: 'orders', cursor_column: 'id', type: 'order.created', batch_size: 25 });
        const destination = await createConnector(ctx.api, 'snowflake', 'destination', {
          account: sf.account,
          username: sf.username,
          password: sf.password,
          access_url: sf.url,
          warehouse: 'FERRY_WH',
          database: 'FERRY',
          schema: 'PUBLIC',
          table,
          create_table: true,
          mode: 'merge',
        });
        const pipeline = await createPipeline(ctx.api, { name: `orders-to-snowflake-${ctx.adapter}-${ctx.storage}`, source_connector_id: source, destination_connector_id: destination, batch_size: 25, flush_interval_ms: 1000 });

        // The driver's login and statements are real HTTP round trips: small clock steps, real waits.
        const arrived = async (n: number) => (await rowsIn(table)).length >= n;
        await eventually(ctx.clock, () => arrived(40), 100, 3000, 20);
        // Rows inserted while it runs.
        await insert(41, 30);
        await eventually(ctx.clock, () => arrived(70), 100, 3000, 20);

        const rows = await rowsIn(table);
        const orderIds = rows.map((r) => Number(r.payload.id));
        expect(rows).toHaveLength(70);
        expect(new Set(orderIds).size).toBe(70);
        expect(orderIds.sort((a, b) => a - b)).toEqual(Array.from({ length: 70 }, (_, i) => i + 1));
        expect(new Set(rows.map((r) => r.id)).size).toBe(70);
        expect(rows.every((r) => r.id.startsWith('evt_'))).toBe(true);
        expect(rows.every((r) => r.type === 'order.created')).toBe(true);
        expect(rows.every((r) => r.occurred_at !== null)).toBe(true);
        expect(rows.find((r) => r.payload.id === '7')!.payload).toEqual({ id: '7', amount: 7, email: 'user7@example.com' });
        expect(rows.find((r) => r.payload.id === '55')!.payload).toEqual({ id: '55', amount: 55, email: 'user55@example.com' });

        // The event log agrees: seventy events, each delivered, each with the id it landed under.
        // A batch is in the table before the engine commits it to the log, so the log may trail.
        const logged = async () => {
          const events = await ctx.api.request('GET', `/v2/pipelines/${pipeline}/events?limit=100`);
          expect(events.status, events.text).toBe(200);
          return (events.body as { data: Array<{ id: string; status: string }> }).data;
        };
        await eventually(ctx.clock, async () => (await logged()).filter((e) => e.status === 'delivered').length === 70, 100, 3000, 20);
        const data = await logged();
        expect(data).toHaveLength(70);
        expect(new Set(data.map((e) => e.id))).toEqual(new Set(rows.map((r) => r.id)));
      } finally {
        await db.end();
      }
    }, 180_000);
  },
  // The test servers listen on loopback, which the outbound policy refuses unless allowed.
  { plugins: [postgres(), snowflake()], outboundAllow: ['127.0.0.1'] },
);

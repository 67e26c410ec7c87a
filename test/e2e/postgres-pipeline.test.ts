/**
 * Postgres to Postgres over the /v2 API, on both adapters and both engine storages: a source
 * table streams through transform steps into another table; rows inserted while the pipeline runs
 * all arrive, once; a row the destination refuses is dead-lettered, the cause is fixed, it is
 * replayed, and it lands.
 */
import pg from 'pg';
import { expect, it } from 'vitest';
import { postgres } from '@ferry/postgres';
import { eventually } from '@ferry/testing';
import { getSharedTestPostgres } from '@ferry/test-servers';
import { describeMatrix } from '../http/harness.js';

describeMatrix(
  'postgres to postgres over the API',
  (ctx) => {
    it('streams rows through transforms, once; a refused row is dead-lettered, fixed, replayed and lands', async () => {
      const url = await (await getSharedTestPostgres()).createDatabase('e2e');
      const db = new pg.Pool({ connectionString: url, max: 2 });
      try {
        await db.query('CREATE TABLE orders (id bigserial PRIMARY KEY, kind text NOT NULL, amount int NOT NULL, email text NOT NULL)');
        // The destination refuses negative amounts: the cause of the dead letter, fixed later.
        await db.query(`CREATE TABLE copied (id text PRIMARY KEY, type text, occurred_at timestamptz, payload jsonb,
          CONSTRAINT no_refunds CHECK ((payload->>'amount')::int >= 0))`);
        const insert = (from: number, count: number, amount = (n: number) => n) =>
          db.query(`INSERT INTO orders (kind, amount, email) SELECT 'order', a, 'user' || a || '@example.com' FROM unnest($1::int[]) AS a`, [
            Array.from({ length: count }, (_, i) => amount(from + i)),
          ]);
        await insert(1, 40);

        const connector = async (direction: string, config: object) => {
          const res = await ctx.api.request('POST', '/v2/connectors', { body: { type: 'postgres', direction, config } });
          expect(res.status, res.text).toBe(201);
          return res.body as { id: string };
        };
        const source = await connector('source', { connection_string: url, table: 'orders', cursor_column: 'id', type: 'order.created', batch_size: 25 });
        const destination = await connector('destination', { connection_string: url, table: 'copied' });
        const created = await ctx.api.request('POST', '/v2/pipelines', {
          body: {
            name: `orders-${ctx.adapter}-${ctx.storage}`,
            source_connector_id: source.id,
            destination_connector_id: destination.id,
            transforms: [
              { type: 'mask', path: 'email' },
              { type: 'rename', from: 'kind', to: 'category' },
            ],
            batch_size: 25,
            flush_interval_ms: 1000,
            max_attempts: 2,
            activate: true,
          },
        });
        expect(created.status, created.text).toBe(201);
        const pipeline = created.body as { id: string };
        const copied = async () => Number((await db.query('SELECT count(*) AS n FROM copied')).rows[0].n);

        await eventually(ctx.clock, async () => (await copied()) === 40, 1000, 400, 5);
        // Rows inserted while it runs, one of them refused by the destination.
        await insert(41, 30, (n) => (n === 55 ? -55 : n));
        const deadLetters = async () => {
          const res = await ctx.api.request('GET', `/v2/pipelines/${pipeline.id}/events?status=dead_lettered`);
          expect(res.status, res.text).toBe(200);
          return (res.body as { data: Array<{ id: string; payload: { amount: number } }> }).data;
        };
        await eventually(ctx.clock, async () => (await copied()) === 69 && (await deadLetters()).length === 1, 1000, 400, 5);
        const [dead] = await deadLetters();
        expect(dead!.payload.amount).toBe(-55);

        // The cause fixed, the event replayed from where it failed: it lands.
        await db.query('ALTER TABLE copied DROP CONSTRAINT no_refunds');
        const replay = await ctx.api.request('POST', `/v2/events/${dead!.id}/replay`);
        expect(replay.status, replay.text).toBe(202);
        await eventually(ctx.clock, async () => (await copied()) === 70, 1000, 400, 5);

        const rows = (await db.query('SELECT id, type, payload FROM copied ORDER BY (payload->>\'amount\')::int')).rows as Array<{ id: string; type: string; payload: Record<string, unknown> }>;
        expect(new Set(rows.map((r) => r.id)).size).toBe(70);
        expect(rows.every((r) => r.type === 'order.created')).toBe(true);
        const sample = rows.find((r) => r.payload.amount === 7)!.payload;
        expect(sample).toMatchObject({ category: 'order', amount: 7 });
        expect(sample.kind).toBeUndefined();
        expect(sample.email).not.toBe('user7@example.com');
        const delivered = await ctx.api.request('GET', `/v2/pipelines/${pipeline.id}/events?status=dead_lettered`);
        expect((delivered.body as { data: unknown[] }).data).toEqual([]);

        const paused = await ctx.api.request('POST', `/v2/pipelines/${pipeline.id}/pause`);
        expect(paused.status, paused.text).toBe(200);
      } finally {
        await db.end();
      }
    }, 120_000);
  },
  // The test Postgres listens on loopback, which the outbound policy refuses unless allowed.
  { plugins: [postgres()], outboundAllow: ['127.0.0.1'] },
);

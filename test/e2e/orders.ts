/**
 * What the end-to-end pipeline tests share: a Postgres `orders` table to stream from, and the
 * two API calls that set a pipeline up.
 */
import pg from 'pg';
import { expect } from 'vitest';
import { getSharedTestPostgres } from '@ferry/test-servers';
import type { TestApi } from '../http/harness.js';

/** A fresh database holding `orders (id bigserial, amount, email)`, and a way to add rows. */
export interface OrdersDatabase {
  readonly url: string;
  readonly db: pg.Pool;
  /** Inserts orders with amounts `from .. from + count - 1`; ids follow in that order. */
  insert(from: number, count: number): Promise<unknown>;
}

/** Creates a database named after `name` with an empty `orders` table. */
export async function ordersDatabase(name: string): Promise<OrdersDatabase> {
  const url = await (await getSharedTestPostgres()).createDatabase(name);
  const db = new pg.Pool({ connectionString: url, max: 2 });
  await db.query('CREATE TABLE orders (id bigserial PRIMARY KEY, amount int NOT NULL, email text NOT NULL)');
  return {
    url,
    db,
    insert: (from, count) =>
      db.query(`INSERT INTO orders (amount, email) SELECT a, 'user' || a || '@example.com' FROM unnest($1::int[]) AS a`, [Array.from({ length: count }, (_, i) => from + i)]),
  };
}

/** POST /v2/connectors, expecting 201; the new connector's id. */
export async function createConnector(api: TestApi, type: string, direction: string, config: object): Promise<string> {
  const res = await api.request('POST', '/v2/connectors', { body: { type, direction, config } });
  expect(res.status, res.text).toBe(201);
  return (res.body as { id: string }).id;
}

/** POST /v2/pipelines, active, expecting 201; the new pipeline's id. */
export async function createPipeline(api: TestApi, body: { name: string; source_connector_id: string; destination_connector_id: string; batch_size: number; flush_interval_ms: number }): Promise<string> {
  const res = await api.request('POST', '/v2/pipelines', { body: { ...body, activate: true } });
  expect(res.status, res.text).toBe(201);
  return (res.body as { id: string }).id;
}

import type { JsonObject } from '@ferry/core';
import { closedPort } from '@ferry/testing';
import { runConnectorSuite } from '@ferry/testing/suites';
import { getSharedTestPostgres } from '@ferry/test-servers';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { postgres } from './index.js';

let url: string;
let admin: pg.Pool;
let tables = 0;

beforeAll(async () => {
  url = await (await getSharedTestPostgres()).createDatabase('plugin_postgres_suite');
  admin = new pg.Pool({ connectionString: url, max: 2 });
});
afterAll(async () => {
  await admin.end();
});

runConnectorSuite('postgres', {
  plugin: postgres({ connectTimeoutMs: 3000 }),
  secretFields: ['connection_string', 'password', 'admin_connection_string'],
  source: {
    async config() {
      const table = `suite_src_${tables++}`;
      await admin.query(`CREATE TABLE ${table} (seq bigserial PRIMARY KEY, n int NOT NULL)`);
      return { connection_string: url, table, cursor_column: 'seq', type: 'suite.row' };
    },
    async produce(config, from, count) {
      await admin.query(`INSERT INTO ${String(config.table)} (n) SELECT g FROM generate_series($1::int, $2::int) g ORDER BY g`, [from, from + count - 1]);
    },
  },
  destination: {
    async config() {
      const table = `suite_dst_${tables++}`;
      // The CHECK lets the suite send one record this table refuses while the others land.
      await admin.query(`CREATE TABLE ${table} (id text PRIMARY KEY, type text, occurred_at timestamptz, payload jsonb CHECK (NOT payload ? 'refuse_me'))`);
      return { connection_string: url, table };
    },
    async landed(config) {
      const { rows } = await admin.query<{ id: string; type: string; payload: JsonObject }>(`SELECT id, type, payload FROM ${String(config.table)}`);
      return rows;
    },
    async rejectable() {
      return { id: 'evt_refused', type: 'suite.event', occurredAt: '2026-01-01T00:00:00.000Z', payload: { refuse_me: true } };
    },
  },
  async unreachable() {
    return { host: '127.0.0.1', port: await closedPort(), database: 'x', user: 'u', password: 'suite-secret', table: 't', cursor_column: 'seq', type: 't' };
  },
  rotation: {
    async config() {
      const role = `suite_role_${tables++}`;
      await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD 'before'`);
      // A destination's check proves its table takes the role's inserts.
      await admin.query(`CREATE TABLE ${role}_out (id text PRIMARY KEY, type text, occurred_at timestamptz, payload jsonb)`);
      await admin.query(`GRANT INSERT ON ${role}_out TO ${role}`);
      const u = new URL(url);
      u.username = role;
      u.password = 'before';
      return { connection_string: u.toString(), admin_connection_string: url, table: `${role}_out` };
    },
  },
});

import type { JsonObject } from '@ferry/core';
import { closedPort } from '@ferry/testing';
import { runConnectorSuite } from '@ferry/testing/suites';
import { startTestSnowflake, type TestSnowflake } from '@ferry/test-servers';
import { afterAll, beforeAll } from 'vitest';
import { snowflake } from './index.js';

let sf: TestSnowflake;
let tables = 0;

beforeAll(async () => {
  sf = await startTestSnowflake({ database: 'plugin_snowflake_suite' });
});
afterAll(async () => {
  await sf?.stop();
});

/** The login part of a config reaching the emulator. */
const login = () => ({ account: sf.account, username: sf.username, password: sf.password, access_url: sf.url, warehouse: 'FERRY_WH', database: 'FERRY', schema: 'PUBLIC' });

runConnectorSuite('snowflake', {
  plugin: snowflake({ loginTimeoutMs: 3000, loginRetries: 0 }),
  secretFields: ['password', 'private_key', 'private_key_passphrase'],
  source: {
    async config() {
      const table = `suite_src_${tables++}`;
      await sf.query(`CREATE TABLE ${table} (seq bigserial PRIMARY KEY, n int NOT NULL)`);
      return { ...login(), table, cursor_column: 'seq', type: 'suite.row' };
    },
    async produce(config, from, count) {
      await sf.query(`INSERT INTO ${String(config.table)} (n) SELECT g FROM generate_series($1::int, $2::int) g ORDER BY g`, [from, from + count - 1]);
    },
    // Snowflake returns unquoted column names in upper case.
    numberOf: (record) => Number((record.payload as { N?: unknown }).N),
  },
  destination: {
    async config() {
      const table = `suite_dst_${tables++}`;
      // The CHECK stands in for a row Snowflake refuses (a NOT NULL or a length), so the suite
      // can send one record this table refuses while the others land.
      await sf.query(`CREATE TABLE ${table} (id varchar NOT NULL, type varchar NOT NULL, occurred_at timestamp_tz NOT NULL, payload variant CHECK (NOT payload ? 'refuse_me'))`);
      return { ...login(), table };
    },
    async landed(config) {
      return sf.query<{ id: string; type: string; payload: JsonObject }>(`SELECT id, type, payload FROM ${String(config.table)}`);
    },
    async rejectable() {
      return { id: 'evt_refused', type: 'suite.event', occurredAt: '2026-01-01T00:00:00.000Z', payload: { refuse_me: true } };
    },
  },
  async unreachable(direction) {
    const config = { ...login(), access_url: `http://127.0.0.1:${await closedPort()}`, password: 'suite-secret' };
    return direction === 'source' ? { ...config, table: 't', cursor_column: 'seq', type: 't' } : { ...config, table: 't' };
  },
  rotation: {
    async config() {
      const user = `suite_user_${tables++}`;
      sf.setUser(user, { password: 'before' });
      const table = `${user}_out`;
      await sf.query(`CREATE TABLE ${table} (id varchar, type varchar, occurred_at timestamp_tz, payload variant)`);
      return { ...login(), username: user, password: 'before', table };
    },
    // As an administrator would: ALTER USER ... SET PASSWORD, then hand the new one to Ferry.
    async supplied(config) {
      sf.setUser(String(config.username), { password: 'after' });
      return { password: 'after' };
    },
  },
});

import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { postgresConfigSchema, validatePostgresConfig, type PostgresConfig } from './config.js';
import { parseTableName, quoteTable } from './identifiers.js';
import { createTableSql, destinationSettings, insertRows, insertSql, valueAt } from './destination.js';
import { readSql, sourceSettings } from './source.js';

const conn = { host: 'db', database: 'app', user: 'ferry' } satisfies PostgresConfig;
const pointers = (config: PostgresConfig, direction: 'source' | 'destination') => validatePostgresConfig(config, direction).map((p) => `${p.pointer} ${p.code}`);

describe('postgres config', () => {
  it('marks the credentials secret and applies the documented defaults', () => {
    const props = postgresConfigSchema.properties as Record<string, Record<string, unknown>>;
    for (const field of ['connection_string', 'password', 'admin_connection_string']) expect(props[field]!['x-ferry-secret']).toBe(true);
    expect(props.host!['x-ferry-secret']).toBeUndefined();
    const withDefaults = Value.Default(postgresConfigSchema, { ...conn }) as PostgresConfig;
    expect(withDefaults).toMatchObject({ port: 5432, statement_timeout_ms: 30000, batch_size: 1000, poll_interval_ms: 1000, create_table: false, mode: 'upsert' });
  });

  it('accepts a complete source and destination', () => {
    expect(validatePostgresConfig({ ...conn, table: 'public.orders', cursor_column: 'seq', type: 'order.created' }, 'source')).toEqual([]);
    expect(validatePostgresConfig({ connection_string: 'postgres://u:p@h/db', query: 'select * from t', cursor_column: 'id', type_column: 'kind' }, 'source')).toEqual([]);
    expect(validatePostgresConfig({ ...conn, table: 'events', columns: { customer: 'customer.id' } }, 'destination')).toEqual([]);
  });

  it('says what is missing to connect, never repeating values', () => {
    expect(pointers({}, 'destination')).toEqual(['/host required', '/database required', '/user required', '/table required']);
    const problems = validatePostgresConfig({ connection_string: 'mysql://u:hunter2@h/db', password: 'hunter2', table: 't' }, 'destination');
    expect(problems.map((p) => `${p.pointer} ${p.code}`)).toEqual(['/connection_string format', '/password conflict']);
    expect(JSON.stringify(problems)).not.toContain('hunter2');
  });

  it('says what a source needs', () => {
    expect(pointers({ ...conn }, 'source')).toEqual(['/table required', '/cursor_column required', '/type required']);
    expect(pointers({ ...conn, table: 't', query: 'select 1', cursor_column: 'id', type: 'x' }, 'source')).toEqual(['/query conflict']);
    expect(pointers({ ...conn, table: 't', cursor_column: 'id; drop table t', type_column: 'a b', type: 'x' }, 'source')).toEqual([
      '/cursor_column invalid_identifier',
      '/type_column invalid_identifier',
    ]);
  });

  it('says what a destination needs, and refuses unsafe names and reserved columns', () => {
    expect(pointers({ ...conn, table: 'a.b.c' }, 'destination')).toEqual(['/table invalid_identifier']);
    expect(pointers({ ...conn, table: 't"; drop table x; --' }, 'destination')).toEqual(['/table invalid_identifier']);
    expect(pointers({ ...conn, table: 't', query: 'select 1' }, 'destination')).toEqual(['/query not_applicable']);
    expect(pointers({ ...conn, table: 't', columns: { id: 'x', 'bad name': 'y', ok: 'a..b' } }, 'destination')).toEqual([
      '/columns/id reserved',
      '/columns/bad name invalid_identifier',
      '/columns/ok invalid_path',
    ]);
  });
});

describe('postgres SQL', () => {
  it('quotes every identifier', () => {
    expect(quoteTable(parseTableName('sales.Orders')!)).toBe('"sales"."Orders"');
    expect(parseTableName('"x"')).toBeNull();
    expect(readSql(sourceSettings({ ...conn, table: 'orders', cursor_column: 'seq', type: 't' }), true)).toBe(
      'SELECT ferry_rows.*, ferry_rows."seq"::text AS __ferry_cursor FROM "orders" AS ferry_rows WHERE ferry_rows."seq" > $1 ORDER BY ferry_rows."seq" LIMIT $2',
    );
    expect(readSql(sourceSettings({ ...conn, query: 'select * from t; ', cursor_column: 'seq', type: 't' }), false)).toBe(
      'SELECT ferry_rows.*, ferry_rows."seq"::text AS __ferry_cursor FROM (select * from t\n) AS ferry_rows ORDER BY ferry_rows."seq" LIMIT $1',
    );
  });

  it('builds one insert of a JSON parameter, cast to the column types', () => {
    const settings = destinationSettings({ ...conn, table: 'public.events' });
    const types = ['text', 'text', 'timestamp with time zone', 'jsonb'];
    expect(insertSql(settings, types)).toBe(
      'INSERT INTO "public"."events" ("id", "type", "occurred_at", "payload") SELECT x.c0::text, x.c1::text, x.c2::timestamp with time zone, x.c3::jsonb FROM json_to_recordset($1::json) AS x(c0 text, c1 text, c2 text, c3 text) ON CONFLICT ("id") DO NOTHING',
    );
    expect(insertSql({ ...settings, mode: 'insert' }, types)).not.toContain('ON CONFLICT');
    expect(createTableSql(settings)).toBe('CREATE TABLE IF NOT EXISTS "public"."events" ("id" text PRIMARY KEY, "type" text NOT NULL, "occurred_at" timestamptz NOT NULL, "payload" jsonb)');
    const asText = (v: unknown) => (v === undefined || v === null ? null : typeof v === 'string' ? v : JSON.stringify(v));
    const rows = insertRows([{ id: 'evt_1', type: 't', occurredAt: '2026-01-01T00:00:00.000Z', payload: { a: 'x"\n' } }], settings, [asText, asText, asText, (v) => JSON.stringify(v)]);
    expect(JSON.parse(rows)).toEqual([{ c0: 'evt_1', c1: 't', c2: '2026-01-01T00:00:00.000Z', c3: '{"a":"x\\"\\n"}' }]);
  });

  it('reads payload paths', () => {
    expect(valueAt({ a: { b: 1 } }, ['a', 'b'])).toBe(1);
    expect(valueAt({ a: [1] }, ['a', '0'])).toBeUndefined();
    expect(valueAt({ a: null }, ['a', 'b'])).toBeUndefined();
  });
});

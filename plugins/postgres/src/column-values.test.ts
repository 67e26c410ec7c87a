import { getSharedTestPostgres } from '@ferry/test-servers';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientConfig } from './connection.js';
import { columnConverter } from './column-values.js';
import { createConnectorOutbound } from '@ferry/core/internal';

// Values as a real server writes them, read through the plugin's connection settings and
// converters: what a polling source, a snapshot and a change stream all put in a payload.
let client: pg.Client;

beforeAll(async () => {
  const url = await (await getSharedTestPostgres()).createDatabase('plugin_pg_values');
  client = new pg.Client(clientConfig({ connection_string: url }, { connectTimeoutMs: 5000, outbound: createConnectorOutbound({ allow: ['127.0.0.1'] }) }));
  await client.connect();
});
afterAll(async () => {
  await client.end();
});

const one = async (sql: string): Promise<unknown> => Object.values((await client.query(`SELECT ${sql} AS v`)).rows[0] as object)[0];

describe('column values', () => {
  it('numbers: int8 and numeric as exact strings, small integers and floats as numbers', async () => {
    expect(await one(`9223372036854775807::int8`)).toBe('9223372036854775807');
    expect(await one(`1::int8`)).toBe('1');
    expect(await one(`12345678901234567890.123456789012345678::numeric`)).toBe('12345678901234567890.123456789012345678');
    expect(await one(`'NaN'::numeric`)).toBe('NaN');
    expect(await one(`32767::int2`)).toBe(32767);
    expect(await one(`(-2147483648)::int4`)).toBe(-2147483648);
    expect(await one(`0.1::float8`)).toBe(0.1);
    expect(await one(`1.7976931348623157e308::float8`)).toBe(1.7976931348623157e308);
    expect(await one(`'Infinity'::float8`)).toBe('Infinity');
    expect(await one(`'NaN'::float4`)).toBe('NaN');
    expect(await one(`'12.34'::money`)).toBe('$12.34');
  });

  it('json and jsonb: numbers a double cannot hold stay exact strings; unicode is exact', async () => {
    const text = '{"a": 12345678901234567890, "b": 1.5, "c": 1e400, "d": 0.12345678901234567890, "s": "é 👍 \\u2028"}';
    // jsonb stores numbers as numeric: 1e400 is written out in full, still exact.
    expect(await one(`'${text}'::jsonb`)).toEqual({ a: '12345678901234567890', b: 1.5, c: `1${'0'.repeat(400)}`, d: '0.12345678901234567890', s: 'é 👍 \u2028' });
    expect(await one(`'${text}'::json`)).toEqual({ a: '12345678901234567890', b: 1.5, c: '1e400', d: '0.12345678901234567890', s: 'é 👍 \u2028' });
    expect(await one(`'[1, 2, {"x": null}]'::jsonb`)).toEqual([1, 2, { x: null }]);
  });

  it('bytea as base64 of the bytes; booleans; text exact', async () => {
    expect(await one(`'\\x00ff10'::bytea`)).toBe(Buffer.from([0, 255, 16]).toString('base64'));
    expect(await one(`''::bytea`)).toBe('');
    expect(await one(`true`)).toBe(true);
    expect(await one(`false`)).toBe(false);
    expect(await one(`E'e\\u0301 \\u2028 👍'::text`)).toBe('e\u0301 \u2028 👍');
  });

  it('timestamps keep their microseconds as ISO 8601; dates and intervals stay the server text', async () => {
    expect(await one(`'2026-11-26 10:00:00.123456+00'::timestamptz`)).toBe('2026-11-26T10:00:00.123456Z');
    expect(await one(`'2026-11-26 10:00:00+02'::timestamptz`)).toBe('2026-11-26T08:00:00Z');
    expect(await one(`'2026-11-26 10:00:00.5'::timestamp`)).toBe('2026-11-26T10:00:00.5');
    expect(await one(`'infinity'::timestamptz`)).toBe('infinity');
    expect(await one(`'0044-03-15 12:00:00 BC'::timestamp`)).toBe('0044-03-15 12:00:00 BC');
    expect(await one(`'2026-02-28'::date`)).toBe('2026-02-28');
    expect(await one(`'1 day 02:03:04.5'::interval`)).toBe('1 day 02:03:04.5');
    expect(await one(`'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid`)).toBe('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11');
  });

  it('arrays convert their elements, nested and with nulls', async () => {
    expect(await one(`ARRAY[1, NULL, 3]::int4[]`)).toEqual([1, null, 3]);
    expect(await one(`ARRAY[9223372036854775807]::int8[]`)).toEqual(['9223372036854775807']);
    expect(await one(`ARRAY[ARRAY[1.5, 2.25], ARRAY[3, 4]]::numeric[]`)).toEqual([['1.5', '2.25'], ['3', '4']]);
    expect(await one(`ARRAY['a,b', 'c"d', NULL]::text[]`)).toEqual(['a,b', 'c"d', null]);
    expect(await one(`ARRAY['\\x0102'::bytea]`)).toEqual(['AQI=']);
    expect(await one(`ARRAY['2026-11-26 10:00:00.000001+00'::timestamptz]`)).toEqual(['2026-11-26T10:00:00.000001Z']);
    expect(await one(`ARRAY['{"n": 12345678901234567890}'::jsonb]`)).toEqual([{ n: '12345678901234567890' }]);
    expect(await one(`ARRAY[true, false]`)).toEqual([true, false]);
  });
});

describe('timestamp text', () => {
  // The rule as it was first written, one regular expression: the converters must agree with it
  // on every text, the server's usual forms and everything else.
  const PATTERN = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?)(?:([+-]\d{2})(?::(\d{2}))?(?::(\d{2}))?)?$/;
  const reference = (zoned: boolean) => (text: string) => {
    const m = PATTERN.exec(text);
    if (!zoned) return m && m[3] === undefined ? `${m[1]}T${m[2]}` : text;
    if (!m || m[3] === undefined || m[5] !== undefined) return text;
    const offset = m[3] === '+00' && (m[4] === undefined || m[4] === '00') ? 'Z' : `${m[3]}:${m[4] ?? '00'}`;
    return `${m[1]}T${m[2]}${offset}`;
  };

  it('is converted as the regular expression it was defined by converts it, whatever the text', () => {
    const pieces = ['2026-11-26', ' ', '10:00:00', '.', '123456', '1234567', '5', '+00', '+02', '-05:30', '+00:00', '+05:30:15', ' BC', 'T', 'x', '', '2026-1-26', '99:99:99', '10:00', 'infinity', '-infinity', '0044-03-15', '10000-01-01', '2026-11-26 10:00:00', '.123456', '.5', '.1234567', '.'];
    const texts = ['2026-11-26 10:00:00+00', '2026-11-26 10:00:00.123456+00', '2026-11-26 10:00:00.5', '2026-11-26 10:00:00', '2026-11-26 10:00:00.+00', '2026-11-26 10:00:00.1234567+00', '2026-11-26 10:00:0', ''];
    // Every sequence of up to three pieces: 22,764 texts.
    for (const a of pieces) {
      texts.push(a);
      for (const b of pieces) {
        texts.push(a + b);
        for (const c of pieces) texts.push(a + b + c);
      }
    }
    for (const [oid, zoned] of [[1184, true], [1114, false]] as const) {
      const convert = columnConverter(oid);
      const expected = reference(zoned);
      for (const text of texts) expect(convert(text), `${oid}: ${text}`).toBe(expected(text));
    }
  });
});

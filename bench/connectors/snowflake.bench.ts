/**
 * The snowflake plugin as a source and as a destination, against snowflake-sdk doing the same
 * work, measured in the same run (the workload and engine: ./harness.ts), on the loopback
 * emulator of @ferry/testing, which runs every statement on the embedded Postgres. The figures
 * therefore measure the plugin's and the engine's overhead over the driver, not Snowflake.
 *
 *  - `snowflake: destination raw`: events/s of the driver running the MERGE the plugin runs (on
 *    ID, 500 rows of four binds a statement), one statement after another, nothing else.
 *  - `snowflake: destination`: events/s of a streaming pipeline from a memory source to the
 *    snowflake destination (mode merge), timed from the pipeline's creation until its checkpoint
 *    holds the last event.
 *  - `snowflake: destination insert raw` / `snowflake: destination insert`: the same for
 *    `insert` mode, one array-bound INSERT of 1,000 rows a statement.
 *  - `snowflake: source raw`: events/s of the driver paging through a table by its cursor,
 *    `BATCH` rows a SELECT, as the plugin reads.
 *  - `snowflake: source`: events/s of a streaming pipeline from the snowflake source (the same
 *    table) to a memory sink, until the sink holds every event.
 * Each engine case's ratio is against the raw case just before it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import sdk from 'snowflake-sdk';
import { snowflake } from '@ferry/snowflake';
import { MemoryHub } from '@ferry/testing';
import { startTestSnowflake, type TestSnowflake } from '@ferry/test-servers';
import { emit } from '../emit.js';
import { BATCH, EVENTS, WS, log, prebuiltRecords, record, startEngine, until } from './harness.js';
import { engineContext } from '@ferry/core/internal';

const COLUMNS = 'ID, TYPE, OCCURRED_AT, PAYLOAD';
const TYPED = 'SELECT column1 AS ID, column2 AS TYPE, column3::TIMESTAMP_TZ AS OCCURRED_AT, PARSE_JSON(column4) AS PAYLOAD FROM VALUES';
const mergeSql = (table: string, rows: number) =>
  `MERGE INTO ${table} AS t USING (${TYPED} ${new Array<string>(rows).fill('(?, ?, ?, ?)').join(', ')}) AS s ON t.ID = s.ID WHEN NOT MATCHED THEN INSERT (${COLUMNS}) VALUES (s.ID, s.TYPE, s.OCCURRED_AT, s.PAYLOAD)`;
const insertSql = (table: string) => `INSERT INTO ${table} (${COLUMNS}) ${TYPED} (?, ?, ?, ?)`;

function run(connection: sdk.Connection, sqlText: string, binds?: sdk.Binds): Promise<Record<string, unknown>[]> {
  return new Promise((resolve, reject) => {
    connection.execute({ sqlText, ...(binds ? { binds } : {}), complete: (error, _statement, rows) => (error ? reject(error) : resolve((rows ?? []) as Record<string, unknown>[])) });
  });
}

async function benchSnowflake(dir: string): Promise<void> {
  let server: TestSnowflake | undefined;
  let connection: sdk.Connection | undefined;
  try {
    server = await startTestSnowflake({ database: 'bench_snowflake' });
    const login = { account: server.account, username: server.username, password: server.password, access_url: server.url, warehouse: 'BENCH', database: 'BENCH', schema: 'PUBLIC' };
    sdk.configure({ logLevel: 'OFF' });
    const conn = sdk.createConnection({ account: server.account, username: server.username, password: server.password, accessUrl: server.url, schema: 'PUBLIC' });
    connection = conn;
    await new Promise<void>((resolve, reject) => conn.connect((error) => (error ? reject(error) : resolve())));
    for (const table of ['raw_merge', 'engine_merge', 'raw_insert', 'engine_insert']) {
      await server.query(`CREATE TABLE ${table} (id varchar NOT NULL, type varchar NOT NULL, occurred_at timestamp_tz NOT NULL, payload variant)`);
    }
    const occurredAt = new Date(Date.UTC(2026, 0, 1)).toISOString();
    const rowsOf = (start: number) => {
      const rows: string[][] = [];
      for (let i = start; i < Math.min(EVENTS, start + BATCH); i++) rows.push([`evt_${String(i).padStart(26, '0')}`, 'bench.event', occurredAt, JSON.stringify(record(i))]);
      return rows;
    };

    const destination = async (mode: 'merge' | 'insert') => {
      // Raw: the statements the plugin sends, built here, one after another.
      let started = performance.now();
      for (let start = 0; start < EVENTS; start += BATCH) {
        const rows = rowsOf(start);
        if (mode === 'insert') await run(conn, insertSql('raw_insert'), rows);
        else for (let k = 0; k < rows.length; k += 500) await run(conn, mergeSql('raw_merge', Math.min(500, rows.length - k)), rows.slice(k, k + 500).flat());
      }
      const raw = EVENTS / ((performance.now() - started) / 1000);
      const label = mode === 'merge' ? 'destination' : 'destination insert';
      emit('connectors', `snowflake: ${label} raw`, raw, 'events/s');

      const hub = new MemoryHub();
      const records = prebuiltRecords(EVENTS);
    hub.stream('in').generate(EVENTS, (i) => records[i]!);
      const engine = await startEngine(hub, dir, [snowflake()]);
      try {
        const source = await engine.connectors.create(WS, { type: 'memory', direction: 'source', config: { name: 'in' } });
        const target = await engine.connectors.create(WS, { type: 'snowflake', direction: 'destination', config: { ...login, table: `engine_${mode}`, mode } });
        started = performance.now();
        const pipeline = await engine.pipelines.create(WS, { name: `to-snowflake-${mode}`, source_connector_id: source.id, destination_connector_id: target.id, batch_size: BATCH, activate: true });
        await until(async () => (await engineContext(engine).storage.repos.checkpoints.get(pipeline.id)) === EVENTS, `the snowflake destination (${mode}) to take every event`);
        emit('connectors', `snowflake: ${label}`, EVENTS / ((performance.now() - started) / 1000), 'events/s', raw);
        await engine.pipelines.pause(WS, pipeline.id);
      } finally {
        await engine.stop();
      }
    };
    await destination('merge');
    await destination('insert');

    // Source, raw: the table paged by its cursor, BATCH rows a SELECT, as the plugin reads it.
    await server.query(`CREATE TABLE src (seq bigint PRIMARY KEY, order_id bigint, sku varchar, amount int, currency varchar, customer variant)`);
    await server.query(`INSERT INTO src SELECT g, g, 'SKU-' || (g % 10000), g % 1000, 'EUR', jsonb_build_object('email', 'c' || g || '@example.com') FROM generate_series(0, $1::int - 1) g`, [EVENTS]);
    await server.query('ANALYZE src');
    let started = performance.now();
    let read = 0;
    let cursor: string | undefined;
    for (;;) {
      const rows = await run(
        conn,
        `SELECT r.*, r.seq::VARCHAR AS c FROM src AS r${cursor === undefined ? '' : ' WHERE r.seq > ?'} ORDER BY r.seq LIMIT ${BATCH}`,
        cursor === undefined ? [] : [cursor],
      );
      if (rows.length === 0) break;
      read += rows.length;
      cursor = String(rows.at(-1)!.C);
    }
    const rawRead = read / ((performance.now() - started) / 1000);
    emit('connectors', 'snowflake: source raw', rawRead, 'events/s');

    const readHub = new MemoryHub();
    const sink = readHub.sink('out', { keep: false });
    const reader = await startEngine(readHub, dir, [snowflake()]);
    try {
      const source = await reader.connectors.create(WS, { type: 'snowflake', direction: 'source', config: { ...login, table: 'src', cursor_column: 'seq', type: 'bench.order', batch_size: BATCH } });
      const target = await reader.connectors.create(WS, { type: 'memory', direction: 'destination', config: { name: 'out' } });
      started = performance.now();
      const pipeline = await reader.pipelines.create(WS, { name: 'from-snowflake', source_connector_id: source.id, destination_connector_id: target.id, batch_size: BATCH, activate: true });
      await until(() => sink.accepted >= EVENTS, 'the snowflake source to read every row');
      emit('connectors', 'snowflake: source', EVENTS / ((performance.now() - started) / 1000), 'events/s', rawRead);
      if (sink.accepted !== EVENTS) log(`snowflake source: the sink took ${sink.accepted} events for ${EVENTS}`);
      await reader.pipelines.pause(WS, pipeline.id);
    } finally {
      await reader.stop();
    }
  } finally {
    if (connection !== undefined) await new Promise<void>((resolve) => connection!.destroy(() => resolve()));
    await server?.stop();
  }
}

const dir = mkdtempSync('/dev/shm/ferry-bench-snowflake-');
try {
  log(`snowflake: ${EVENTS} events, batches of ${BATCH}`);
  await benchSnowflake(dir);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

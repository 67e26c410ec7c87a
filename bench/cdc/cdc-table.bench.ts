/**
 * Postgres change capture into a Postgres table: changes/s from the slot to rows committed in a
 * destination table, through the engine against a hand-written pipeline doing the same work, in
 * the same run. One embedded Postgres (wal_level=logical, `synchronous_commit = on` as on a
 * production server); a table `accounts (id bigint primary key, note text, amount int)`.
 *
 *  - `hand-written: pgoutput + COPY (engine on X)`: changes/s of a logical replication client
 *    written with the `pg-logical-replication` package (its pgoutput plugin decodes the stream,
 *    values through pg's type parsers: int8 a string, int4 a number, text a string, as Ferry's
 *    payloads have them) reading a slot of its own. For each insert it builds the row the Ferry
 *    postgres destination writes, in the destination's default layout `(id text primary key,
 *    type text, occurred_at timestamptz, payload jsonb)`: an id as long as an event id (`evt_`,
 *    then the commit LSN's 16 hex digits and the change's place in its transaction in 10), the
 *    type `accounts.insert`, the commit time to the millisecond, and the payload a change event
 *    has (`action`, `record`, `metadata` with schema, table, commit LSN and the commit time to
 *    the microsecond). Every 1,000 changes (and at the end) it COPYs them (pg-copy-streams, text
 *    format, escaped as the destination escapes them) into its own empty table, while the next
 *    1,000 are decoded; it confirms a transaction's end LSN to the server only once the COPY
 *    holding its last change has committed (the library's timed acknowledgement, which confirms
 *    what was received, is off). Timed from its subscription until every change is in its table.
 *  - `into a postgres table (engine on X): changes/s`: the engine (its storage, and so its event
 *    log, on a SQLite file in /dev/shm or on another database of the same Postgres;
 *    BENCH_CDC_TABLE_CASES picks, default `sqlite,postgres`) with a pipeline from a postgres
 *    `capture: "changes"` source (snapshot `never`, batches of 1,000; its `slot` and `publication`
 *    named in the config and made beforehand, so the pipeline need not run before the backlog
 *    to make them) to a postgres destination (`connection_string`, `table`) into its own empty
 *    table of the default layout, the pipeline's batches of 1,000 too. Timed from the
 *    activation until the pipeline's runs count every event written (polled every 100 ms, and
 *    sooner when the last changes are due: at most 100 ms late; a `count(*)` of the growing
 *    table would scan it on the server being measured), then `SELECT count(*)` must show every
 *    row. stderr also shows how busy the engine's event loop was.
 * Both drain the same backlog: BENCH_CDC_TABLE_ROWS inserts (default 200,000) committed in
 * transactions of 1,000 after every slot exists and before any reads. The machine's speed drifts
 * by a third within minutes, so they are measured in turns, BENCH_CDC_TABLE_REPEAT times (default
 * 3; each turn the hand-written pipeline, then the engine, each with a fresh slot and table), and
 * the medians are compared. A side that has not finished in BENCH_CDC_TABLE_DEADLINE_S seconds
 * (default 600) fails the bench. stderr shows per turn the rates, the CPU this process and the
 * Postgres server's processes used per change, and one landed row of each side.
 * The goal on this 2-core machine: the engine at least 0.95 of the hand-written pipeline's
 * changes/s, on both storages.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { pipeline as streamPipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { LogicalReplicationService, PgoutputPlugin, type Pgoutput } from 'pg-logical-replication';
import { createEngine, generateSecretKey, postgresStorage, sqliteStorage, type StorageConfig } from '@ferry/core';
import { postgres } from '@ferry/postgres';
import { startTestPostgres } from '@ferry/test-servers';
import { emit } from '../emit.js';
import { serverCpuSeconds } from '../server-cpu.js';

const ROWS = Number(process.env.BENCH_CDC_TABLE_ROWS ?? 200_000);
const REPEAT = Math.max(1, Number(process.env.BENCH_CDC_TABLE_REPEAT ?? 3));
const CASES = (process.env.BENCH_CDC_TABLE_CASES ?? 'sqlite,postgres').split(',').filter(Boolean);
const DEADLINE_MS = Number(process.env.BENCH_CDC_TABLE_DEADLINE_S ?? 600) * 1000;
const BATCH = 1000;
const POLL_MS = 100;
const WS = 'bench';
const HAND_PUBLICATION = 'bench_hand';
const ENGINE_PUBLICATION = 'bench_engine';
const log = (message: string) => console.error(`cdc-table bench: ${message}`);

/** The postgres destination's default layout. */
const landedSql = (table: string) => `CREATE TABLE ${table} (id text PRIMARY KEY, type text NOT NULL, occurred_at timestamptz NOT NULL, payload jsonb)`;

/** What a timed side used: wall time, this process's CPU, the server's CPU. */
function meter() {
  const cpu = process.cpuUsage();
  const server = serverCpuSeconds();
  const started = performance.now();
  return () => {
    const used = process.cpuUsage(cpu);
    return { seconds: (performance.now() - started) / 1000, cpuMicros: used.user + used.system, serverMicros: (serverCpuSeconds() - server) * 1e6 };
  };
}

/** A value in COPY's text format, as the destination escapes it: backslash, tab, newline, carriage return. */
function copyText(value: string): string {
  if (value.indexOf('\\') === -1 && value.indexOf('\t') === -1 && value.indexOf('\n') === -1 && value.indexOf('\r') === -1) return value;
  return value.replace(/[\\\t\n\r]/g, (c) => ({ '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' })[c]!);
}

/** JSON text as a COPY field: only backslashes need doubling (JSON.stringify escapes every control character). */
function copyJson(json: string): string {
  return json.indexOf('\\') === -1 ? json : json.replaceAll('\\', '\\\\');
}

/** `00000000/01A2B3C8` (the library's LSN text) as Postgres spells it, `0/1A2B3C8`. */
function shortLsn(lsn: string): string {
  const [high, low] = lsn.split('/');
  return `${parseInt(high!, 16).toString(16).toUpperCase()}/${parseInt(low!, 16).toString(16).toUpperCase()}`;
}

/** A commit time (microseconds since 1970, as the library gives it) as ISO 8601 with its microseconds. */
function isoMicros(micros: bigint): string {
  const fraction = (micros % 1_000_000n).toString().padStart(6, '0');
  return `${new Date(Number(micros / 1_000_000n) * 1000).toISOString().slice(0, 19)}.${fraction}Z`;
}

/**
 * The hand-written pipeline: pg-logical-replication's pgoutput decoding, a destination row per
 * insert, a COPY per 1,000 changes (one in flight while the next 1,000 are decoded), each
 * transaction's end confirmed once the COPY with its last change committed. Resolves when `want`
 * changes are in `table`.
 */
async function handWritten(url: string, slot: string, table: string, want: number, name: string) {
  const service = new LogicalReplicationService(
    { connectionString: url },
    // No timed acknowledgement: it confirms the last position received, written or not.
    { acknowledge: { auto: false, timeoutSeconds: 0 }, flowControl: { enabled: true } },
  );
  const plugin = new PgoutputPlugin({ protoVersion: 1, publicationNames: [HAND_PUBLICATION] });
  const writer = new pg.Client({ connectionString: url });
  writer.on('error', () => undefined);
  const copySql = `COPY ${table} (id, type, occurred_at, payload) FROM STDIN`;
  const types = new Map<number, string>();
  let txn: { key: string; lsn: string; commitTime: string; occurredAt: string; index: number } | undefined;
  let lines: string[] = [];
  /** The end of the last transaction whose last change is in `lines`. */
  let ack: string | null | undefined;
  let seen = 0;
  let written = 0;
  let inflight: Promise<void> = Promise.resolve();

  const copy = async (batch: string[], end: string | null | undefined) => {
    batch.push('');
    await streamPipeline(Readable.from([Buffer.from(batch.join('\n'))]), writer.query(copyFrom(copySql)));
    written += batch.length - 1;
    if (end) await service.acknowledge(end);
  };
  /** Hands `lines` to the writer once the COPY before has committed. */
  const dispatch = async () => {
    const batch = lines;
    const end = ack;
    lines = [];
    ack = undefined;
    await inflight;
    inflight = copy(batch, end);
    inflight.catch(() => undefined); // its failure surfaces where it is awaited next
  };

  const take = meter();
  await writer.connect();
  let deadline: NodeJS.Timeout | undefined;
  let result: ReturnType<typeof take>;
  try {
    await new Promise<void>((resolve, reject) => {
      let finished = false;
      const fail = (error: unknown) => {
        if (!finished) reject(error instanceof Error ? error : new Error(String(error)));
        finished = true;
      };
      deadline = setTimeout(() => fail(new Error(`${name}: only ${written} of ${want} changes in ${table} after ${DEADLINE_MS / 1000} s`)), DEADLINE_MS);
      service.on('error', fail);
      service.on('data', async (_lsn: string, message: Pgoutput.Message) => {
        if (finished) return;
        switch (message.tag) {
          case 'begin': {
            const lsn = message.commitLsn!;
            const micros = message.commitTime as bigint;
            txn = { key: lsn.replace('/', ''), lsn: shortLsn(lsn), commitTime: isoMicros(micros), occurredAt: new Date(Number(micros / 1000n)).toISOString(), index: 0 };
            return;
          }
          case 'insert': {
            if (lines.length === BATCH) await dispatch();
            const open = txn!;
            const relation = message.relation;
            let type = types.get(relation.relationOid);
            if (type === undefined) {
              type = copyText(`${relation.schema === 'public' ? relation.name : `${relation.schema}.${relation.name}`}.insert`);
              types.set(relation.relationOid, type);
            }
            const index = ++open.index;
            const payload = { action: 'insert', record: message.new, metadata: { schema: relation.schema, table: relation.name, commit_lsn: open.lsn, commit_time: open.commitTime } };
            // The id and the time are hex digits and ISO text: nothing in them to escape.
            lines.push(`evt_${open.key}${String(index).padStart(10, '0')}\t${type}\t${open.occurredAt}\t${copyJson(JSON.stringify(payload))}`);
            seen++;
            return;
          }
          case 'commit': {
            txn = undefined;
            ack = message.commitEndLsn;
            if (lines.length >= BATCH || seen >= want) await dispatch();
            if (seen >= want) {
              await inflight;
              finished = true;
              resolve();
            }
            return;
          }
          default:
            return;
        }
      });
      service.subscribe(plugin, slot).catch(fail);
    });
    // Before the connections close: the server's processes serving them are counted while they live.
    result = take();
  } finally {
    clearTimeout(deadline);
    await inflight.catch(() => undefined);
    await service.destroy().catch(() => undefined);
    await writer.end().catch(() => undefined);
  }
  return result;
}

/** `promise`, or a clear error when it has not settled in `ms`. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not done after ${ms / 1000} s`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** A side's figures on stderr: rate, and CPU per change here and in the server. */
function describe(result: { seconds: number; cpuMicros: number; serverMicros: number }): string {
  return (
    `${Math.round(ROWS / result.seconds)}/s (${result.seconds.toFixed(2)} s); this process ${(result.cpuMicros / ROWS).toFixed(1)} µs CPU per change ` +
    `(${(result.cpuMicros / 1e4 / result.seconds).toFixed(0)} % of a core), Postgres ${(result.serverMicros / ROWS).toFixed(1)} µs per change`
  );
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function landed(db: pg.Pool, table: string): Promise<number> {
  return Number((await db.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n);
}

/** The row of accounts 2 as `table` holds it, for stderr. */
async function sample(db: pg.Pool, table: string): Promise<string> {
  const row = (await db.query(`SELECT id, type, occurred_at, payload::text AS payload FROM ${table} WHERE payload->'record'->>'id' = '2'`)).rows[0];
  return JSON.stringify(row);
}

/** One engine case: the slots, the backlog, then REPEAT turns of the hand-written pipeline and the engine. */
async function runCase(label: string, storage: StorageConfig, url: string): Promise<void> {
  const db = new pg.Pool({ connectionString: url, max: 2 });
  db.on('error', () => undefined); // an idle client the server ends at shutdown is no failure
  const slots: string[] = [];
  const pipelines: string[] = [];
  const engine = await createEngine({ storage, secretKey: generateSecretKey(), plugins: [postgres()], outboundAllow: ['127.0.0.1', 'localhost'], webhookDelivery: false });
  try {
    await db.query('CREATE TABLE accounts (id bigint PRIMARY KEY, note text, amount int)');
    await db.query(`CREATE PUBLICATION ${HAND_PUBLICATION} FOR TABLE accounts`);
    await db.query(`CREATE PUBLICATION ${ENGINE_PUBLICATION} FOR TABLE accounts`);
    // Every slot before the backlog: each side of each turn reads all of it from a slot of its
    // own. The engine's are named in its source's config, so its pipelines need not be started
    // (and paused) to make them.
    for (let turn = 0; turn < REPEAT; turn++) {
      await db.query(landedSql(`landed_hand_${turn}`));
      await db.query(landedSql(`landed_engine_${turn}`));
      for (const slot of [`bench_hand_${turn}`, `bench_engine_${turn}`]) {
        await db.query('SELECT pg_create_logical_replication_slot($1, $2)', [slot, 'pgoutput']);
        slots.push(slot);
      }
    }

    await engine.start();
    for (let turn = 0; turn < REPEAT; turn++) {
      const source = await engine.connectors.create(WS, {
        type: 'postgres',
        direction: 'source',
        config: { connection_string: url, capture: 'changes', tables: ['accounts'], publication: ENGINE_PUBLICATION, slot: `bench_engine_${turn}`, snapshot: 'never', batch_size: BATCH },
      });
      const destination = await engine.connectors.create(WS, { type: 'postgres', direction: 'destination', config: { connection_string: url, table: `landed_engine_${turn}` } });
      const pipeline = await engine.pipelines.create(WS, { name: `cdc into a table ${turn}`, source_connector_id: source.id, destination_connector_id: destination.id, batch_size: BATCH, flush_interval_ms: 50 });
      pipelines.push(pipeline.id);
    }

    log(`${label}: committing ${ROWS} inserts in transactions of ${BATCH}`);
    for (let from = 1; from <= ROWS; from += BATCH) {
      await db.query(`INSERT INTO accounts SELECT g, 'note ' || g, g % 1000 FROM generate_series($1::bigint, $2::bigint) g`, [from, Math.min(ROWS, from + BATCH - 1)]);
    }

    const hands: number[] = [];
    const rates: number[] = [];
    for (let turn = 0; turn < REPEAT; turn++) {
      const handTable = `landed_hand_${turn}`;
      await db.query('CHECKPOINT');
      const hand = await handWritten(url, `bench_hand_${turn}`, handTable, ROWS, `hand-written (${label}), turn ${turn + 1}`);
      const handRows = await landed(db, handTable);
      if (handRows !== ROWS) throw new Error(`hand-written (${label}), turn ${turn + 1}: ${handRows} rows in ${handTable}, expected ${ROWS}`);
      hands.push(ROWS / hand.seconds);

      const engineTable = `landed_engine_${turn}`;
      const id = pipelines[turn]!;
      await db.query('CHECKPOINT');
      const loop = performance.eventLoopUtilization();
      const take = meter();
      await engine.pipelines.activate(WS, id);
      const deadline = performance.now() + DEADLINE_MS;
      const runs = async () => (await engine.pipelines.listRuns(WS, id)).data;
      let n = 0;
      let before = { n: 0, at: performance.now() };
      for (;;) {
        const list = await runs();
        n = list.reduce((sum, run) => sum + run.events_written, 0);
        if (n >= ROWS) break;
        const now = performance.now();
        if (now > deadline) {
          const errors = list.filter((run) => run.error !== null).map((run) => `${run.status}: ${run.error}`);
          throw new Error(`engine (${label}), turn ${turn + 1}: its runs count ${n} of ${ROWS} changes written after ${DEADLINE_MS / 1000} s${errors.length > 0 ? `; run errors: ${errors.join('; ')}` : ''}`);
        }
        // At the pace of the last interval, the last changes may be due before the next 100 ms.
        const perMs = (n - before.n) / Math.max(1, now - before.at);
        const due = perMs > 0 ? (ROWS - n) / perMs : POLL_MS;
        before = { n, at: now };
        await new Promise((r) => setTimeout(r, Math.max(5, Math.min(POLL_MS, due))));
      }
      const used = take();
      const busy = performance.eventLoopUtilization(loop);
      const engineRows = await landed(db, engineTable);
      if (engineRows !== ROWS) throw new Error(`engine (${label}), turn ${turn + 1}: ${engineRows} rows in ${engineTable}, expected ${ROWS}`);
      rates.push(ROWS / used.seconds);
      // Paused, it reads no more: the next turns' WAL is not decoded for it meanwhile.
      await within(engine.pipelines.pause(WS, id), 60_000, `engine (${label}), turn ${turn + 1}: pausing the pipeline`);

      log(`${label}, turn ${turn + 1}: hand-written ${describe(hand)}`);
      log(`${label}, turn ${turn + 1}: engine ${describe(used)}; its event loop busy ${(busy.utilization * 100).toFixed(0)} % of the time; ratio ${(rates[turn]! / hands[turn]!).toFixed(3)}`);
      if (turn === 0) {
        log(`${label}: hand-written row of accounts 2: ${await sample(db, handTable)}`);
        log(`${label}: engine row of accounts 2:       ${await sample(db, engineTable)}`);
      }
    }
    const hand = median(hands);
    emit('cdc', `hand-written: pgoutput + COPY (${label}), median of ${REPEAT}`, hand, 'changes/s');
    emit('cdc', `into a postgres table (${label}): changes/s, median of ${REPEAT}`, median(rates), 'changes/s', hand);
  } finally {
    for (const id of pipelines) await engine.pipelines.delete(WS, id).catch((e: unknown) => log(`${label}: deleting pipeline ${id}: ${String(e)}`));
    await engine.stop().catch(() => undefined);
    // The slots were named in the config, so they are ours to drop, not the engine's.
    for (const slot of slots) await db.query('SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1', [slot]).catch(() => undefined);
    await db.end();
  }
}

// synchronous_commit on, as on a production server (the test servers' default is off): each
// COPY's commit, and each of the backlog's, waits for its WAL to be flushed.
const server = await startTestPostgres({ settings: { synchronous_commit: 'on' } });
const dir = mkdtempSync(join(process.platform === 'linux' ? '/dev/shm' : tmpdir(), 'ferry-cdc-table-bench-'));
try {
  for (const kase of CASES) {
    const url = await server.createDatabase(`bench_cdc_table_${kase}`);
    if (kase === 'sqlite') await runCase('engine on sqlite', sqliteStorage({ filename: join(dir, 'ferry.db') }), url);
    else if (kase === 'postgres') await runCase('engine on postgres', postgresStorage({ connectionString: await server.createDatabase('bench_cdc_table_engine') }), url);
    else throw new Error(`unknown BENCH_CDC_TABLE_CASES entry ${kase}`);
  }
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}

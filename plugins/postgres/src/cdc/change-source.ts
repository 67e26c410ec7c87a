import { randomUUID } from 'node:crypto';
import { ConnectorError, type BackfillReport, type Checkpoint, type PipelineConnectorContext, type Clock, type JsonObject, type JsonValue, type PushSource, type SourceBatch, type SourceRecord } from '@ferry/core';
import pg from 'pg';
import { columnConverter, type ColumnConverter } from '../column-values.js';
import { DEFAULT_SOURCE_BATCH_SIZE, type PostgresConfig } from '../config.js';
import { classifyError, sqlState } from '../connection.js';
import { parseTableName, quoteTable, type TableName } from '../identifiers.js';
import { decodePgoutput, formatLsn, FRAME, frameWalEnd, parseLsn, postgresMicrosToMillis, POSTGRES_EPOCH_MICROS, replyRequested, XLOG_DATA_OFFSET, xlogTag, type Lsn, type Relation, type TupleData } from './pgoutput.js';
import { quoteReplicationIdent, ReplicationClient } from './replication-client.js';
import { backfillReport, estimateRows, newBackfill, readChunk, requestedBackfill, tableColumns, tableKey, tupleKey, WATERMARK_PREFIX, type BackfillProgress, type Chunk, type TableKey } from './backfill.js';
import { rowFilter, type RowFilter } from './backfill-where.js';

/** What a change-capturing source needs, resolved from its config and pipeline. */
export interface ChangeSourceSettings {
  readonly tables: readonly TableName[];
  readonly publication: string;
  readonly slot: string;
  /** The publication's and slot's names are the ones Ferry derives from the pipeline id. */
  readonly defaultPublication: boolean;
  readonly defaultSlot: boolean;
  readonly snapshot: 'incremental' | 'initial' | 'never';
  /** A constant event type instead of `<table>.<action>`. */
  readonly type?: string;
  readonly batchSize: number;
}

/** `ferry_<pipeline id in lower case>`: the default name of a pipeline's slot and publication. */
export function defaultReplicationName(pipelineId: string): string {
  return `ferry_${pipelineId.toLowerCase().replace(/[^a-z0-9_]/g, '_')}`.slice(0, 63);
}

/** Resolves a validated `capture: "changes"` config for one pipeline. */
export function changeSourceSettings(config: PostgresConfig, pipelineId: string): ChangeSourceSettings {
  const invalid = (message: string) => new ConnectorError('configuration_invalid', message, { retryable: false });
  if (config.tables === undefined) throw invalid('Change capture needs tables.');
  const tables = config.tables.map((text) => {
    const table = parseTableName(text);
    if (table === null) throw invalid('tables holds a name that is not a valid table name.');
    return table;
  });
  const name = defaultReplicationName(pipelineId);
  return {
    tables,
    publication: config.publication ?? name,
    slot: config.slot ?? name,
    defaultPublication: config.publication === undefined,
    defaultSlot: config.slot === undefined,
    snapshot: config.snapshot ?? 'incremental',
    ...(config.type !== undefined ? { type: config.type } : {}),
    batchSize: config.batch_size ?? DEFAULT_SOURCE_BATCH_SIZE,
  };
}

/**
 * A change source's checkpoint. `stream`: the stream restarts at `lsn`, the end of the last
 * transaction delivered whole; `txn`/`index`, when set, name a transaction delivered in part
 * (its commit LSN) and how many of its changes were. `snapshot`: a snapshot was being read
 * (it cannot be resumed: a new slot and a new snapshot are taken). `own` remembers what Ferry
 * created, which is what it drops with the pipeline. `backfill`, while one is under way, where it
 * resumes: it is committed with the stream's position, batch by batch.
 */
export type ChangeCheckpoint = {
  v: 1;
  phase: 'snapshot' | 'stream';
  slot: string;
  lsn: string;
  txn?: string;
  index?: number;
  own?: { slot?: boolean; publication?: boolean };
  /** A backfill under way (`backfill.ts`): where it resumes; or the last one, ended (no `table`). */
  backfill?: BackfillProgress;
  /** The tables captured (`schema.name`): one added to `tables` since is backfilled. Absent in older checkpoints: all of them. */
  tables?: string[];
};

/** Reads a checkpoint this source wrote; null for none. */
export function parseChangeCheckpoint(checkpoint: Checkpoint | null): ChangeCheckpoint | null {
  if (checkpoint === null || checkpoint === undefined) return null;
  const c = checkpoint as Partial<ChangeCheckpoint>;
  if (typeof c !== 'object' || c.v !== 1 || (c.phase !== 'snapshot' && c.phase !== 'stream') || typeof c.lsn !== 'string' || typeof c.slot !== 'string') {
    throw new ConnectorError('invalid_checkpoint', 'The checkpoint is not a change-capture position (was the source switched from capture "rows"?).', { retryable: false });
  }
  parseLsn(c.lsn);
  if (c.txn !== undefined) parseLsn(c.txn);
  return c as ChangeCheckpoint;
}

/** A table as the stream describes it, with what the source derives from it once. */
interface RelationInfo {
  relation: Relation;
  /** One of the configured tables: its changes become events. */
  wanted: boolean;
  /** The event type of each action: `<table>.<action>`, `<schema>.<table>.<action>` outside `public`. */
  types: Record<ChangeAction, string>;
  converters: ColumnConverter[];
}

/** What a change event's `action` says. */
type ChangeAction = 'insert' | 'update' | 'delete' | 'truncate';

/**
 * A change waiting to be handed over, or the end of a transaction, or a backfill's row (`read`)
 * or its position after a chunk (a chunk's rows follow its high watermark's transaction; a
 * batch that ends inside a chunk keeps the position before it, so a restart reads it again).
 */
type Pending = { record: SourceRecord; txn: Lsn; index: number } | { commitEnd: Lsn } | { read: SourceRecord } | { progress: BackfillProgress };

/** A configured table as the server names it. */
interface ResolvedTable {
  schema: string;
  name: string;
  oid: number;
}

/** The transaction being received. */
interface OpenTransaction {
  final: Lsn;
  /** `final` as a position prefix and as text, made once per transaction, not per change. */
  key: string;
  lsn: string;
  commitTime: string;
  commitIso: string;
  /** Changes received so far, wanted or not: a change's position in its transaction. */
  index: number;
  /** Changes already delivered before a restart: skipped. */
  skip: number;
  /** The `metadata` of each relation's changes that add nothing to it, made once per transaction. */
  metadata: Map<number, JsonObject>;
}

/** What {@link changeSource} needs besides its settings. */
export interface ChangeSourceOptions {
  /** The pg client config of the connector (outbound socket, session settings, timeouts). */
  clientConfig: pg.ClientConfig;
  clock: Clock;
  /** How often the confirmed position is sent while a batch is being written, in ms. */
  statusIntervalMs?: number;
  /** Told the bytes of WAL the slot holds back (the server's end minus the confirmed position). */
  reportLag?: (bytes: number) => void;
  /** The backfills asked for through the API: run one at a time, after a backfill the source started itself. */
  backfills?: PipelineConnectorContext<unknown>['backfills'];
  /** Told how far the backfill has come after each committed batch, and how it ended. */
  reportBackfill?: (report: BackfillReport) => void;
  /**
   * Called once a backfill's chunk is selected, before its high watermark is written, with the
   * table and the chunk's row count. Tests commit a change there: the case the watermarks are for.
   */
  chunkSelected?: (table: string, rows: number) => Promise<void>;
}

/** Default interval of standby status updates while the source waits on a batch: well inside wal_sender_timeout (60 s). */
const STATUS_INTERVAL_MS = 10_000;

/**
 * A push source over Postgres logical replication (`pgoutput`): an initial snapshot consistent
 * with the slot's start, then every insert, update, delete and truncate of the configured tables
 * in commit order. The slot's confirmed position moves only after a batch was handed over and
 * committed by the engine (the handler resolved), so a crash loses nothing: the stream restarts
 * at the last transaction delivered whole and skips what of a partly delivered one was.
 */
export function changeSource(settings: ChangeSourceSettings, options: ChangeSourceOptions): PushSource {
  return {
    async consume(from, handler, signal) {
      const checkpoint = parseChangeCheckpoint(from);
      if (checkpoint !== null && checkpoint.slot !== settings.slot) {
        throw new ConnectorError('configuration_invalid', `The pipeline's checkpoint belongs to the slot ${checkpoint.slot}, not ${settings.slot}: a changed slot has no position to resume from.`, { retryable: false });
      }
      const admin = new pg.Client(options.clientConfig);
      admin.on('error', () => undefined);
      let start: StreamStart;
      /** Reports to make once the stream starts: backfills asked for that cannot run, one that ended, the one resumed. */
      const reports: BackfillReport[] = [];
      try {
        await admin.connect();
        const own = { ...checkpoint?.own };
        const tables = await resolveTables(admin, settings.tables);
        const names = tables.map(qualifiedName);
        /**
         * The tables a backfill reads, their keys, row filters and estimates. A table without a
         * key, or a filter that no longer holds, refuses it: before anything is created for the
         * source's own backfills, as a failed backfill for those asked for through the API (the
         * stream goes on without them).
         */
        const backfillOf = async (progress: BackfillProgress | undefined): Promise<StreamStart['backfill']> => {
          if (progress === undefined) return undefined;
          const listed = progress.tables;
          const reading = listed === undefined ? tables : listed.flatMap((name) => tables.filter((t) => qualifiedName(t) === name));
          if (tableIndex(reading, progress) >= reading.length) return undefined;
          const keys: TableKey[] = [];
          const filters: Array<RowFilter | undefined> = [];
          const estimates = { ...progress.estimates };
          for (const table of reading) {
            const name = qualifiedName(table);
            keys.push(await tableKey(admin, table));
            const where = progress.where?.[name];
            filters.push(where === undefined ? undefined : await rowFilter(name, where, await tableColumns(admin, table.oid)));
            if (!(name in estimates)) estimates[name] = await estimateRows(admin, table.oid);
          }
          return { progress: { ...progress, estimates }, tables: reading, keys, filters };
        };
        const requests = options.backfills;
        /** The first backfill asked for that can run, and those that cannot, failed. */
        const requested = async (lsn: string, except: string | undefined): Promise<StreamStart['backfill']> => {
          for (const request of requests?.requested ?? []) {
            if (request.id === except) continue;
            const progress = requestedBackfill(request, lsn, options.clock.now());
            try {
              const found = await backfillOf(progress);
              if (found) return found;
              reports.push(backfillReport(progress, names, 'failed', { code: 'table_not_found', message: `None of its tables is captured by the pipeline any more.` }));
            } catch (error) {
              if (!(error instanceof ConnectorError) || error.retryable) throw error;
              reports.push(backfillReport(progress, names, 'failed', { code: error.code, message: error.message }));
            }
          }
          return undefined;
        };
        if (await ensurePublication(admin, settings, tables)) own.publication = true;
        const slot = await slotState(admin, settings.slot);
        if (checkpoint?.phase === 'stream') {
          if (!slot) {
            throw new ConnectorError('slot_missing', `The replication slot ${settings.slot} is gone: the changes since ${checkpoint.lsn} cannot be read. Delete the pipeline and create it again to take a new snapshot.`, { retryable: false });
          }
          // A table added to `tables` since the last start is read as a backfill too: appended to
          // the one under way, or in one of its own.
          const captured = checkpoint.tables ?? names;
          const added = settings.snapshot === 'never' ? [] : names.filter((name) => !captured.includes(name));
          let progress = checkpoint.backfill?.table === undefined ? undefined : checkpoint.backfill;
          // The last backfill ended: said again (the report after its commit may not have been heard).
          const ended = checkpoint.backfill?.table === undefined ? checkpoint.backfill : undefined;
          if (ended && requests?.requested.some((r) => r.id === ended.id)) reports.push(backfillReport(ended, names, 'succeeded'));
          // Cancelled: dropped where it stands; the rows handed over stay written.
          if (progress && requests?.cancelled.has(progress.id)) progress = undefined;
          if (added.length > 0) {
            progress = progress ? { ...progress, tables: [...(progress.tables ?? captured), ...added] } : { ...newBackfill(checkpoint.lsn, options.clock.now(), added[0]!), tables: added };
          }
          const running = progress ? await backfillOf(progress) : await requested(checkpoint.lsn, ended?.id);
          start = {
            lsn: parseLsn(checkpoint.lsn),
            ...(checkpoint.txn !== undefined ? { txn: parseLsn(checkpoint.txn), index: checkpoint.index ?? 0 } : {}),
            own,
            tables: names,
            backfill: running,
            ...(running === undefined && ended ? { ended } : {}),
          };
        } else if (checkpoint !== null || settings.snapshot === 'initial') {
          // A snapshot is taken from a new slot only: its start is what makes it consistent. A
          // snapshot cut short by a crash cannot be resumed, so it starts again from a new slot.
          if (slot) {
            if (!(settings.defaultSlot || own.slot)) {
              throw new ConnectorError('configuration_invalid', `The replication slot ${settings.slot} exists already: an initial snapshot needs a slot of its own. Drop it, name another slot, or set snapshot to "never".`, { retryable: false });
            }
            await admin.query('SELECT pg_drop_replication_slot($1)', [settings.slot]);
          }
          const consistent = await readSnapshot(admin, settings, tables, options, handler, signal, { ...own, slot: true });
          if (consistent === undefined) return;
          start = { lsn: consistent, own: { ...own, slot: true }, tables: names, backfill: await requested(formatLsn(consistent), undefined) };
        } else {
          // `incremental` checks every table's key before the slot is made: a table it cannot chunk is refused first.
          const incremental = settings.snapshot === 'incremental' ? await backfillOf(newBackfill('0/0', options.clock.now(), names[0]!)) : await requested('0/0', undefined);
          let lsn = slot?.confirmed;
          if (!slot) {
            const replication = await ReplicationClient.connect(options.clientConfig);
            try {
              lsn = (await replication.createSlot(settings.slot, false)).consistentPoint;
            } finally {
              await replication.end();
            }
            own.slot = true;
          }
          // The backfill reads the rows present while the stream runs from the slot's start.
          start = { lsn: lsn!, own, tables: names, backfill: incremental && { ...incremental, progress: { ...incremental.progress, lsn: formatLsn(lsn!) } } };
        }
      } catch (error) {
        throw classifyChangeError(error);
      } finally {
        await admin.end().catch(() => undefined);
      }
      if (signal.aborted) return;
      for (const report of reports) options.reportBackfill?.(report);
      // Resumed: said again as of its checkpoint (the last report before a restart may be lost).
      if (start.backfill?.progress.rows) options.reportBackfill?.(backfillReport(start.backfill.progress, start.tables, 'running'));
      await streamChanges(settings, options, start, handler, signal);
    },
  };
}

/** Where the stream starts, and the backfill it runs, if one is under way. */
interface StreamStart {
  lsn: Lsn;
  txn?: Lsn;
  index?: number;
  own: NonNullable<ChangeCheckpoint['own']>;
  /** The tables captured, for the checkpoint. */
  tables: string[];
  /** The backfill under way: its progress, the tables it reads (in order), their keys and row filters. */
  backfill: { progress: BackfillProgress; tables: readonly ResolvedTable[]; keys: readonly TableKey[]; filters: ReadonlyArray<RowFilter | undefined> } | undefined;
  /** The last backfill, ended, when none is under way: checkpoints carry it on. */
  ended?: BackfillProgress;
}

/** `schema.name` of a table: how a backfill's progress names the table it reads. */
function qualifiedName(table: { schema: string; name: string }): string {
  return `${table.schema}.${table.name}`;
}

/**
 * The index of the table a backfill reads, in `tables`: found by name, so a change of `tables`
 * does not move it to another; `tables.length` when it is done or its table is no longer captured.
 */
function tableIndex(tables: readonly ResolvedTable[], progress: BackfillProgress): number {
  if (progress.table === undefined) return tables.length;
  const at = tables.findIndex((t) => qualifiedName(t) === progress.table);
  return at < 0 ? tables.length : at;
}

/** The configured tables as the server names them (schema resolved by the search path); `table_not_found` for one missing. */
export async function resolveTables(admin: pg.Client, tables: readonly TableName[]): Promise<ResolvedTable[]> {
  const resolved = [];
  for (const table of tables) {
    const { rows } = await admin.query<{ oid: number; nspname: string; relname: string }>(
      'SELECT c.oid::int AS oid, n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass($1)',
      [quoteTable(table)],
    );
    if (rows.length === 0) throw new ConnectorError('table_not_found', `The source database has no table ${table.schema === undefined ? table.name : `${table.schema}.${table.name}`}.`, { retryable: false });
    resolved.push({ schema: rows[0]!.nspname, name: rows[0]!.relname, oid: rows[0]!.oid });
  }
  return resolved;
}

/**
 * Makes sure the publication covers the tables: created when missing (then Ferry owns it), its
 * table list set to the config's when Ferry owns it, checked otherwise. A table with no replica
 * identity (no primary key, identity `default`, or `nothing`) is refused first: once published,
 * Postgres would refuse its UPDATEs and DELETEs in the user's own application. Returns true when
 * it created the publication.
 */
async function ensurePublication(admin: pg.Client, settings: ChangeSourceSettings, tables: ReadonlyArray<{ schema: string; name: string; oid: number }>): Promise<boolean> {
  const { rows: identities } = await admin.query<{ oid: number; relreplident: string; has_key: boolean }>(
    `SELECT c.oid::int AS oid, c.relreplident,
            EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND (i.indisprimary OR i.indisreplident)) AS has_key
       FROM pg_class c WHERE c.oid = ANY($1::oid[])`,
    [tables.map((t) => t.oid)],
  );
  for (const table of tables) {
    const identity = identities.find((r) => r.oid === table.oid);
    if (identity && (identity.relreplident === 'n' || (identity.relreplident === 'd' && !identity.has_key))) {
      throw new ConnectorError(
        'configuration_invalid',
        `The table ${table.schema}.${table.name} has no replica identity (no primary key): published, its UPDATEs and DELETEs would fail. Add a primary key, or ALTER TABLE ... REPLICA IDENTITY FULL.`,
        { retryable: false },
      );
    }
  }
  const list = tables.map((t) => `${quoteReplicationIdent(t.schema)}.${quoteReplicationIdent(t.name)}`).join(', ');
  const { rows } = await admin.query<{ schemaname: string; tablename: string }>('SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = $1', [settings.publication]);
  const exists = (await admin.query('SELECT 1 FROM pg_publication WHERE pubname = $1', [settings.publication])).rows.length > 0;
  if (!exists) {
    await admin.query(`CREATE PUBLICATION ${quoteReplicationIdent(settings.publication)} FOR TABLE ${list}`);
    return true;
  }
  const missing = tables.filter((t) => !rows.some((r) => r.schemaname === t.schema && r.tablename === t.name));
  if (missing.length === 0) return false;
  if (settings.defaultPublication) {
    await admin.query(`ALTER PUBLICATION ${quoteReplicationIdent(settings.publication)} SET TABLE ${list}`);
    return false;
  }
  throw new ConnectorError('configuration_invalid', `The publication ${settings.publication} does not include ${missing.map((t) => `${t.schema}.${t.name}`).join(', ')}.`, { retryable: false });
}

/** The slot, if it exists: whether a connection streams from it, and its confirmed position. */
async function slotState(admin: pg.Client, slot: string): Promise<{ active: boolean; confirmed: Lsn } | undefined> {
  const { rows } = await admin.query<{ active: boolean; confirmed: string | null; plugin: string | null }>(
    'SELECT active, confirmed_flush_lsn::text AS confirmed, plugin FROM pg_replication_slots WHERE slot_name = $1',
    [slot],
  );
  const row = rows[0];
  if (!row) return undefined;
  if (row.plugin !== 'pgoutput') {
    throw new ConnectorError('configuration_invalid', `The replication slot ${slot} is not a logical slot of pgoutput.`, { retryable: false });
  }
  return { active: row.active, confirmed: parseLsn(row.confirmed ?? '0/0') };
}

/**
 * Creates the slot with an exported snapshot, reads every table in that snapshot (batch by
 * batch, each handed over and committed before the next), then hands over the position its
 * stream starts at. Returns that position, or undefined when aborted.
 */
async function readSnapshot(
  admin: pg.Client,
  settings: ChangeSourceSettings,
  tables: ReadonlyArray<{ schema: string; name: string }>,
  options: ChangeSourceOptions,
  handler: (batch: SourceBatch) => Promise<void>,
  signal: AbortSignal,
  own: NonNullable<ChangeCheckpoint['own']>,
): Promise<Lsn | undefined> {
  const replication = await ReplicationClient.connect(options.clientConfig);
  let consistent: Lsn;
  try {
    const created = await replication.createSlot(settings.slot, true);
    consistent = created.consistentPoint;
    if (!created.snapshotName || !/^[0-9A-Fa-f-]+$/.test(created.snapshotName)) throw new Error('The server exported no usable snapshot.');
    // The exported snapshot lives while the replication connection stays idle: import it first.
    await admin.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    await admin.query(`SET TRANSACTION SNAPSHOT '${created.snapshotName}'`);
  } finally {
    await replication.end();
  }
  const lsn = formatLsn(consistent);
  const snapshotTime = String((await admin.query<{ now: string }>('SELECT now() AS now')).rows[0]!.now);
  const hex = lsnKey(consistent);
  for (let t = 0; t < tables.length; t++) {
    const table = tables[t]!;
    const type = settings.type ?? `${table.schema === 'public' ? table.name : `${table.schema}.${table.name}`}.read`;
    await admin.query(`DECLARE ferry_snapshot NO SCROLL CURSOR FOR SELECT * FROM ${quoteReplicationIdent(table.schema)}.${quoteReplicationIdent(table.name)}`);
    let n = 0;
    for (;;) {
      if (signal.aborted) return undefined;
      const { rows } = await admin.query<Record<string, JsonValue>>(`FETCH ${settings.batchSize} FROM ferry_snapshot`);
      if (rows.length === 0) break;
      const records: SourceRecord[] = rows.map((row) => ({
        position: `${hex}:s${t}:${n++}`,
        type,
        occurredAt: snapshotTime,
        payload: { action: 'read', record: row as JsonObject, metadata: { schema: table.schema, table: table.name, commit_lsn: lsn, commit_time: snapshotTime } },
      }));
      await handler({ records, checkpoint: { v: 1, phase: 'snapshot', slot: settings.slot, lsn, own } satisfies ChangeCheckpoint });
    }
    await admin.query('CLOSE ferry_snapshot');
  }
  await admin.query('COMMIT');
  if (signal.aborted) return undefined;
  // The snapshot is whole: from now on a restart resumes the stream instead of taking another.
  await handler({ records: [], checkpoint: { v: 1, phase: 'stream', slot: settings.slot, lsn, own } satisfies ChangeCheckpoint });
  return consistent;
}

/** An LSN as 16 hex digits: positions sort as their text. */
function lsnKey(lsn: Lsn): string {
  return lsn.toString(16).toUpperCase().padStart(16, '0');
}

/** A commit time (microseconds since 2000) as ISO 8601 with its microseconds. */
function isoMicros(micros: bigint): string {
  const unix = micros + POSTGRES_EPOCH_MICROS;
  const seconds = unix / 1_000_000n;
  const fraction = (unix % 1_000_000n).toString().padStart(6, '0');
  return `${new Date(Number(seconds) * 1000).toISOString().slice(0, 19)}.${fraction}Z`;
}

/** Batches handed to the engine at once: the one being written while the one before it commits. */
const HANDED_AHEAD = 2;

/**
 * Streams the slot from `start` until `signal` aborts, handing over batches of at most
 * `batchSize` changes. Reading runs ahead of the handler by at most two batches (the socket is
 * paused beyond that), so memory stays bounded whatever the backlog.
 */
async function streamChanges(
  settings: ChangeSourceSettings,
  options: ChangeSourceOptions,
  start: StreamStart,
  handler: (batch: SourceBatch) => Promise<void>,
  signal: AbortSignal,
): Promise<void> {
  let replication: ReplicationClient;
  try {
    replication = await ReplicationClient.connect(options.clientConfig);
  } catch (error) {
    throw classifyChangeError(error);
  }
  // Stopped while connecting (a pause, a reopen): the abort listener added below would never
  // hear of it, and the stream would run on, holding the pause that waits for it.
  if (signal.aborted) {
    await replication.end();
    return;
  }
  const relations = new Map<number, RelationInfo>();
  const wanted = new Set(settings.tables.map((t) => `${t.schema ?? 'public'}.${t.name}`));
  const pending: Pending[] = [];
  let pendingRecords = 0;
  let txn: OpenTransaction | undefined;
  /** Everything before it was delivered and committed: what the slot may confirm. */
  let confirmed = start.lsn;
  let failure: unknown;
  let flushing: Promise<void> | undefined;
  let paused = false;
  const highWater = settings.batchSize * 2;
  /** The backfill's position as of the last item taken into a batch: every checkpoint carries it. */
  let progress = start.backfill?.progress ?? start.ended;
  /** Where the last batch handed over ends: the position of a batch that only moves the backfill. */
  let lastEnd: { complete: Lsn; partial?: { txn: Lsn; index: number } } = { complete: start.lsn, ...(start.txn !== undefined ? { partial: { txn: start.txn, index: start.index ?? 0 } } : {}) };
  /** The backfill's chunk between its watermarks, or waiting for its high one to commit. */
  let chunk: Chunk | undefined;
  let chunkClosed = false;
  /** Wakes the backfill's reader: a chunk handed over, a batch settled, the end. */
  const wakers: Array<() => void> = [];
  const wake = () => {
    for (const w of wakers.splice(0)) w();
  };
  const woken = () => new Promise<void>((resolve) => wakers.push(resolve));

  const fail = (error: unknown) => {
    failure ??= error;
    wake();
    void replication.end();
  };
  /** The end of the server's WAL, as it last said. */
  let serverEnd = start.lsn;
  const reportLag = () => options.reportLag?.(serverEnd > confirmed ? Number(serverEnd - confirmed) : 0);
  const confirm = () => {
    replication.confirm(confirmed, options.clock.now());
    reportLag();
  };

  /**
   * A tuple as a record of the table's columns. A value an update left unchanged (TOASTed, not
   * sent again) comes from `old` when the table sends the whole old row; otherwise it is left out
   * and its column named in `unchanged`, never made up.
   */
  const recordOf = (info: RelationInfo, tuple: TupleData | undefined, keyOnly: boolean, old?: TupleData, unchanged?: string[]): JsonObject => {
    const record: JsonObject = {};
    const columns = info.relation.columns;
    if (tuple === undefined) return record;
    for (let i = 0; i < columns.length; i++) {
      const column = columns[i]!;
      if (keyOnly && !column.key) continue;
      const text = tuple[i];
      if (text === undefined) {
        const before = old?.[i];
        if (before !== undefined && before !== null) record[column.name] = info.converters[i]!(before);
        else if (before === null) record[column.name] = null;
        else unchanged?.push(column.name);
      } else record[column.name] = text === null ? null : info.converters[i]!(text);
    }
    return record;
  };

  // Payloads are built as literals, one shape per action: a change costs a handful of objects, and
  // their keys keep the documented order (action, record, old, metadata).
  const push = (info: RelationInfo, action: ChangeAction, record: JsonObject, old?: JsonObject, extra?: JsonObject) => {
    const open = txn!;
    const index = ++open.index;
    if (index <= open.skip) return;
    let metadata = extra === undefined ? open.metadata.get(info.relation.oid) : undefined;
    if (metadata === undefined) {
      metadata = { schema: info.relation.schema, table: info.relation.table, commit_lsn: open.lsn, commit_time: open.commitTime };
      if (extra !== undefined) Object.assign(metadata, extra);
      // One object for the transaction's changes of the table, as a backfill chunk's rows share
      // theirs: no step or destination changes a payload in place.
      else open.metadata.set(info.relation.oid, metadata);
    }
    const payload: JsonObject = old === undefined ? { action, record, metadata } : { action, record, old, metadata };
    pending.push({ record: { position: `${open.key}:${index}`, type: settings.type ?? info.types[action], occurredAt: open.commitIso, payload }, txn: open.final, index });
    pendingRecords++;
  };

  const backfill = start.backfill;
  const chunkOid = () => (chunk === undefined ? -1 : backfill!.tables[chunk.table]!.oid);
  /** Where the key's columns are in the relation's tuples (looked up by name: the relation may have changed). */
  const keyIndexes = (info: RelationInfo): number[] => {
    const names = backfill!.keys[chunk!.table]!.columns.map((c) => c.name);
    return names.map((name) => info.relation.columns.findIndex((c) => c.name === name));
  };

  /**
   * Queues the chunk's rows that no change between its watermarks touched, as `read` events,
   * then the backfill's position after the chunk (the next table's start when it read its table
   * to the end). The reader then reads the next chunk.
   */
  const handChunk = () => {
    const done = chunk!;
    chunk = undefined;
    chunkClosed = false;
    const table = backfill!.tables[done.table]!;
    const base = readerAt!;
    const type = settings.type ?? `${table.schema === 'public' ? table.name : qualifiedName(table)}.read`;
    const name = qualifiedName(table);
    let rows = base.rows;
    const prefix = `${base.id}:${name}:`;
    // One metadata object for the chunk's rows: they share every field of it, and no step or
    // destination changes a payload in place.
    const metadata: JsonObject = { schema: table.schema, table: table.name, commit_lsn: base.lsn, commit_time: base.at, backfill_id: base.id };
    for (const row of done.truncated ? [] : done.rows!) {
      if (done.changed.has(row.key)) continue;
      rows++;
      const record: SourceRecord = {
        position: prefix + row.key,
        type,
        occurredAt: base.at,
        payload: { action: 'read', record: row.record, metadata },
      };
      pending.push({ read: record });
      pendingRecords++;
    }
    const next = done.end ? backfill!.tables[done.table + 1] : table;
    const { table: _table, after: _after, ...kept } = base;
    const end: BackfillProgress = {
      ...kept,
      rows,
      counts: { ...base.counts, [name]: (base.counts?.[name] ?? 0) + rows - base.rows },
      ...(next === undefined ? {} : { table: qualifiedName(next) }),
      ...(!done.end && done.last ? { after: done.last } : {}),
    };
    pending.push({ progress: end });
    // The reader's next chunk starts from here.
    readerAt = end;
    wake();
  };
  let readerAt = progress;

  const onMessage = (frame: Buffer) => {
    const message = decodePgoutput(frame, XLOG_DATA_OFFSET);
    switch (message.tag) {
      case 'begin': {
        const skipAll = message.finalLsn < start.lsn;
        const skip = skipAll ? Number.MAX_SAFE_INTEGER : start.txn === message.finalLsn ? (start.index ?? 0) : 0;
        txn = {
          final: message.finalLsn, key: lsnKey(message.finalLsn), lsn: formatLsn(message.finalLsn), commitTime: isoMicros(message.commitTimeMicros),
          commitIso: new Date(postgresMicrosToMillis(message.commitTimeMicros)).toISOString(), index: 0, skip, metadata: new Map(),
        };
        return;
      }
      case 'commit':
        txn = undefined;
        pending.push({ commitEnd: message.endLsn });
        if (chunkClosed) handChunk();
        return;
      case 'message': {
        // A watermark of this source's chunk: another run's (cut short) or another engine's are ignored.
        if (chunk === undefined || message.prefix !== WATERMARK_PREFIX || !message.content.startsWith(chunk.mark)) return;
        const edge = message.content.slice(chunk.mark.length);
        if (edge === ':low') chunk.open = true;
        else if (edge === ':high' && chunk.open) {
          chunk.open = false;
          // Handed over after this transaction's commit: after every change before the watermark.
          if (txn === undefined) handChunk();
          else chunkClosed = true;
        }
        return;
      }
      case 'relation': {
        const relation = message.relation;
        const typeName = relation.schema === 'public' ? relation.table : `${relation.schema}.${relation.table}`;
        relations.set(relation.oid, {
          relation,
          wanted: wanted.has(`${relation.schema}.${relation.table}`),
          types: { insert: `${typeName}.insert`, update: `${typeName}.update`, delete: `${typeName}.delete`, truncate: `${typeName}.truncate` },
          converters: relation.columns.map((c) => columnConverter(c.typeOid)),
        });
        return;
      }
      case 'insert':
      case 'update':
      case 'delete': {
        const info = relations.get(message.relationOid);
        if (!info) throw new Error(`pgoutput: a change of relation ${message.relationOid} before its description.`);
        if (!txn) throw new Error('pgoutput: a change outside a transaction.');
        if (!info.wanted) {
          txn.index++;
          return;
        }
        if (chunk?.open && info.relation.oid === chunkOid()) {
          // Between the watermarks the stream has this row's state: the chunk's copy is dropped.
          const indexes = keyIndexes(info);
          const tuple = message.tag === 'insert' ? message.new : message.tag === 'update' ? message.new : (message.old ?? message.key);
          if (tuple) chunk.changed.add(tupleKey(tuple, indexes));
          if (message.tag === 'update') {
            const before = message.key ?? message.old;
            if (before) chunk.changed.add(tupleKey(before, indexes));
          }
        }
        if (message.tag === 'insert') {
          push(info, 'insert', recordOf(info, message.new, false));
        } else if (message.tag === 'update') {
          const unchanged: string[] = [];
          const record = recordOf(info, message.new, false, message.old, unchanged);
          let extra: JsonObject | undefined;
          if (unchanged.length > 0) (extra ??= {}).unchanged_columns = unchanged;
          if (message.key) (extra ??= {}).old_key = recordOf(info, message.key, true);
          push(info, 'update', record, message.old ? recordOf(info, message.old, false) : undefined, extra);
        } else {
          const full = message.old !== undefined;
          const record = recordOf(info, message.old ?? message.key, !full);
          push(info, 'delete', record, full ? record : undefined);
        }
        return;
      }
      case 'truncate': {
        if (!txn) throw new Error('pgoutput: a truncate outside a transaction.');
        for (const oid of message.relationOids) {
          const info = relations.get(oid);
          if (!info?.wanted) {
            txn.index++;
            continue;
          }
          if (chunk?.open && oid === chunkOid()) chunk.truncated = true;
          push(info, 'truncate', {}, undefined, { cascade: message.cascade, restart_identity: message.restartIdentity });
        }
        return;
      }
      default:
        return;
    }
  };

  /**
   * What was handed over, oldest first, each with the position the slot may confirm once its
   * handler resolved and everything before it did. The ends of transactions with nothing left to
   * deliver queue here too, settled at once: confirmable once every batch before them is. The
   * next batch is handed over while the last one commits (the engine writes it meanwhile): at
   * most {@link HANDED_AHEAD} handler calls unresolved at once.
   */
  const handed: { done: Promise<void>; settled: boolean; complete: Lsn }[] = [];
  let unsettled = 0;
  const confirmSettled = () => {
    let to = confirmed;
    while (handed.length > 0 && handed[0]!.settled) {
      const complete = handed.shift()!.complete;
      if (complete > to) to = complete;
    }
    if (to > confirmed) {
      confirmed = to;
      confirm();
    }
  };
  /** The backfill whose end was reported: said once. */
  let endReported = start.ended?.id;
  /** Tells the engine how far the backfill is as of a committed batch's checkpoint, and when it ended. */
  const reportCommitted = (committed: BackfillProgress | undefined) => {
    if (committed === undefined || options.reportBackfill === undefined) return;
    if (committed.table !== undefined) options.reportBackfill(backfillReport(committed, start.tables, 'running'));
    else if (endReported !== committed.id) {
      endReported = committed.id;
      options.reportBackfill(backfillReport(committed, start.tables, 'succeeded'));
    }
  };
  const handOver = (batch: SourceBatch, complete: Lsn) => {
    const entry = { done: handler(batch), settled: false, complete };
    handed.push(entry);
    unsettled++;
    entry.done.then(() => {
      entry.settled = true;
      unsettled--;
      confirmSettled();
      reportCommitted((batch.checkpoint as ChangeCheckpoint).backfill);
      wake();
    }, fail);
  };

  /** The checkpoint of a batch that ends at `complete` (and `partial`), with the backfill's position. */
  const checkpointAt = (complete: Lsn, partial: { txn: Lsn; index: number } | undefined): ChangeCheckpoint => ({
    v: 1,
    phase: 'stream',
    slot: settings.slot,
    lsn: formatLsn(complete),
    ...(partial ? { txn: formatLsn(partial.txn), index: partial.index } : {}),
    own: start.own,
    ...(progress !== undefined ? { backfill: progress } : {}),
    tables: start.tables,
  });

  /** Hands over what is pending, batch by batch, at most HANDED_AHEAD unresolved. */
  const flush = async () => {
    while (failure === undefined && !signal.aborted) {
      if (pendingRecords === 0) {
        let end: Lsn | undefined;
        let moved = false;
        while (pending.length > 0) {
          const item = pending.shift()!;
          if ('commitEnd' in item) end = item.commitEnd;
          else if ('progress' in item) {
            progress = item.progress;
            moved = true;
          }
        }
        if (moved) {
          // Only the backfill moved (a chunk the stream's changes took whole, a table's end):
          // committed by a batch without records, as the snapshot's end is.
          if (end !== undefined) lastEnd = { complete: end };
          handOver({ records: [], checkpoint: checkpointAt(lastEnd.complete, lastEnd.partial) }, lastEnd.complete);
        } else if (end !== undefined) {
          handed.push({ done: Promise.resolve(), settled: true, complete: end });
          confirmSettled();
        }
        return;
      }
      const records: SourceRecord[] = [];
      // From where the last batch ended: a batch that starts mid-transaction resumes there.
      let complete = lastEnd.complete;
      let partial: { txn: Lsn; index: number } | undefined;
      while (pending.length > 0) {
        const item = pending[0]!;
        if ('commitEnd' in item) {
          complete = item.commitEnd;
          partial = undefined;
        } else if ('read' in item) {
          // A backfill's row: between transactions, after its high watermark's.
          if (records.length === settings.batchSize) break;
          records.push(item.read);
        } else if ('progress' in item) {
          progress = item.progress;
        } else {
          if (records.length === settings.batchSize) break;
          records.push(item.record);
          partial = { txn: item.txn, index: item.index };
        }
        pending.shift();
      }
      pendingRecords -= records.length;
      lastEnd = { complete, ...(partial ? { partial } : {}) };
      const checkpoint = checkpointAt(complete, partial);
      if (paused && pendingRecords < highWater) {
        paused = false;
        replication.resume();
      }
      handOver({ records, checkpoint }, complete);
      // Fewer changes wait now: the backfill may read its next chunk while this batch commits.
      wake();
      // A failed handler ends the source (fail), which ends this loop.
      while (unsettled >= HANDED_AHEAD && failure === undefined) await handed.find((h) => !h.settled)!.done.catch(() => undefined);
    }
  };

  const schedule = () => {
    if (flushing || pending.length === 0) return;
    flushing = new Promise<void>((resolve) => setImmediate(resolve))
      .then(flush)
      .catch(fail)
      .finally(() => {
        flushing = undefined;
        if (pending.length > 0 && failure === undefined) schedule();
      });
  };

  // While a batch is written (a slow destination), the server still hears from the source.
  let statusTimer: { cancel(): void } | undefined;
  const keepTalking = () => {
    statusTimer = options.clock.setTimeout(() => {
      confirm();
      keepTalking();
    }, options.statusIntervalMs ?? STATUS_INTERVAL_MS);
  };

  /**
   * The backfill's reader: one chunk at a time, each read between its watermarks on a
   * connection of its own, the next one once the stream handed the last one over and the
   * changes waiting are fewer than a batch (so a backfill never buries the stream's changes).
   */
  const readBackfill = async (): Promise<void> => {
    const client = new pg.Client(options.clientConfig);
    client.on('error', () => undefined);
    const run = randomUUID();
    let seq = 0;
    try {
      await client.connect();
      // Watermarks reach the stream when their commit is flushed: at once, even on a server
      // that flushes commits lazily (synchronous_commit off waits up to wal_writer_delay).
      await client.query('SET synchronous_commit = on');
      while (failure === undefined && !signal.aborted && readerAt?.table !== undefined) {
        if (pendingRecords >= settings.batchSize || chunk !== undefined) {
          await woken();
          continue;
        }
        const at = tableIndex(backfill!.tables, readerAt);
        if (at >= backfill!.tables.length) return;
        const next: Chunk = { mark: `${run}:${++seq}`, table: at, rows: undefined, last: undefined, end: false, open: false, changed: new Set(), truncated: false };
        chunk = next;
        const name = qualifiedName(backfill!.tables[at]!);
        const selected = options.chunkSelected && ((rows: number) => options.chunkSelected!(name, rows));
        await readChunk(client, backfill!.tables[at]!, backfill!.keys[at]!, readerAt.after, readerAt.chunk ?? settings.batchSize, next, selected, backfill!.filters[at]);
      }
    } finally {
      await client.end().catch(() => undefined);
    }
  };

  const onAbort = () => {
    wake();
    void replication.end();
  };
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    keepTalking();
    const streaming = replication.stream(
      settings.slot,
      settings.publication,
      start.lsn,
      (frame) => {
        if (failure !== undefined) return;
        try {
          if (frame[0] === FRAME.xlog) {
            // The server's end, for the lag figure, at each commit: not worth reading per change.
            if (xlogTag(frame) === 0x43 /* C */) {
              const walEnd = frameWalEnd(frame);
              if (walEnd > serverEnd) serverEnd = walEnd;
            }
            onMessage(frame);
            if (pendingRecords >= highWater && !paused) {
              paused = true;
              replication.pause();
            }
            schedule();
          } else if (frame[0] === FRAME.keepalive) {
            const walEnd = frameWalEnd(frame);
            if (walEnd > serverEnd) serverEnd = walEnd;
            // Nothing received is waiting to be delivered: the slot may move up to what the server has sent.
            const idle = txn === undefined && pending.length === 0 && flushing === undefined && handed.length === 0 && chunk === undefined;
            const answer = keepaliveAnswer({ idle, walEnd, confirmed, replyRequested: replyRequested(frame) });
            confirmed = answer.confirmed;
            if (answer.reply) confirm();
            else reportLag();
          }
        } catch (error) {
          fail(error);
        }
      },
      { messages: backfill !== undefined },
    );
    const reading = backfill === undefined ? undefined : readBackfill().catch(fail);
    try {
      await streaming;
    } catch (error) {
      failure ??= error;
    }
    wake();
    await reading;
    await flushing;
    // Every handler call resolves (or fails) before the source returns.
    await Promise.allSettled(handed.map((h) => h.done));
  } finally {
    statusTimer?.cancel();
    signal.removeEventListener('abort', onAbort);
    await replication.end();
  }
  if (failure !== undefined && !signal.aborted) throw classifyChangeError(failure);
}

/** A failure of change capture as a connector error: a slot another connection holds is retryable. */
function classifyChangeError(error: unknown): ConnectorError {
  if (error instanceof ConnectorError) return error;
  const state = sqlState(error);
  // 55006: the slot is active for another connection (a previous consumer still closing).
  if (state === '55006') return new ConnectorError('slot_in_use', 'The replication slot is in use by another connection.', { retryable: true, cause: error });
  if (state === '55000' || state === '42704') {
    return new ConnectorError('configuration_invalid', `The server refused logical replication (SQLSTATE ${state}): is wal_level logical, and does the slot exist?`, { retryable: false, cause: error });
  }
  if (state === undefined && error instanceof Error && /^pgoutput:/.test(error.message)) {
    return new ConnectorError('source_unavailable', `The change stream could not be read: ${error.message}`, { retryable: true, cause: error });
  }
  return classifyError(error, 'source');
}

/**
 * What a deleted pipeline's change capture left to release: its settings while it captures
 * changes; and, when its config was switched to `capture: "rows"` after it had captured (its
 * checkpoint still says so), the slot that checkpoint names and the default publication, so
 * the switch does not leave a slot holding WAL. Undefined when there is nothing.
 */
export function releaseSettings(config: PostgresConfig, pipelineId: string, checkpoint: Checkpoint | null): ChangeSourceSettings | undefined {
  if (config.capture === 'changes') return changeSourceSettings(config, pipelineId);
  let captured: ChangeCheckpoint | null;
  try {
    captured = parseChangeCheckpoint(checkpoint);
  } catch {
    return undefined; // a cursor checkpoint: polling keeps nothing in the server
  }
  if (captured === null) return undefined;
  const name = defaultReplicationName(pipelineId);
  return { tables: [], publication: name, slot: captured.slot, defaultPublication: true, defaultSlot: captured.slot === name, snapshot: 'never', batchSize: DEFAULT_SOURCE_BATCH_SIZE };
}

/**
 * Drops what change capture kept for a deleted pipeline: its slot (which holds WAL until it is
 * gone) and its publication, each only when Ferry created it (a default name, or one the
 * checkpoint says it created). A slot still streaming to another connection is `slot_in_use`,
 * retryable: the engine tries again once that consumer has stopped.
 */
export async function releaseChangeSource(clientConfig: pg.ClientConfig, settings: ChangeSourceSettings, from: Checkpoint | null): Promise<void> {
  let own: ChangeCheckpoint['own'];
  try {
    own = parseChangeCheckpoint(from)?.own;
  } catch {
    own = undefined; // a checkpoint of capture "rows": only default names count as Ferry's
  }
  const dropSlot = settings.defaultSlot || own?.slot === true;
  const dropPublication = settings.defaultPublication || own?.publication === true;
  if (!dropSlot && !dropPublication) return;
  const admin = new pg.Client(clientConfig);
  admin.on('error', () => undefined);
  try {
    await admin.connect();
    if (dropSlot) await admin.query('SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1', [settings.slot]);
    if (dropPublication) await admin.query(`DROP PUBLICATION IF EXISTS ${quoteReplicationIdent(settings.publication)}`);
  } catch (error) {
    throw classifyChangeError(error);
  } finally {
    await admin.end().catch(() => undefined);
  }
}

/**
 * What a check of a change-capturing source proves, naming what is missing: `wal_level` is
 * `logical`; the role may replicate (`REPLICATION`, or superuser); every table exists, may be
 * read, and has a replica identity; the publication covers the tables, or the role owns them so
 * it can create it; a slot is free when one must be created. Returns the details a check shows:
 * `wal_level` and, for the database's slots named by the config or by Ferry (`ferry_*`), how
 * many bytes of WAL each holds back (`lag_bytes`) and whether it is being read.
 */
export async function checkChangeCapture(client: pg.Client, config: PostgresConfig): Promise<JsonObject> {
  const invalid = (code: string, message: string) => new ConnectorError(code, message, { retryable: false });
  const { rows: server } = await client.query<{ wal_level: string; replicates: boolean; slots_max: string; slots_used: string; version: number }>(
    `SELECT current_setting('wal_level') AS wal_level, current_setting('server_version_num')::int AS version,
            (SELECT rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user) AS replicates,
            current_setting('max_replication_slots') AS slots_max,
            (SELECT count(*) FROM pg_replication_slots)::text AS slots_used`,
  );
  const facts = server[0]!;
  if (facts.wal_level !== 'logical') {
    throw invalid('configuration_invalid', `wal_level is ${facts.wal_level}: change capture needs wal_level = logical (ALTER SYSTEM SET wal_level = logical, then restart Postgres).`);
  }
  if (!facts.replicates) throw invalid('permission_denied', 'The role lacks the REPLICATION attribute: ALTER ROLE ... REPLICATION (or use capture "rows").');
  if ((config.snapshot ?? 'incremental') === 'incremental' && facts.version < 140000) {
    throw invalid('configuration_invalid', 'snapshot "incremental" needs Postgres 14 or later (its watermarks are logical decoding messages): set snapshot to "initial" or "never".');
  }
  const tables = (config.tables ?? []).map((text) => parseTableName(text)).filter((t): t is TableName => t !== null);
  const { rows: described } = await client.query<{ name: string; found: boolean; readable: boolean | null; owned: boolean | null; identity: string | null; has_key: boolean | null }>(
    `SELECT t.name, c.oid IS NOT NULL AS found,
            has_table_privilege(c.oid, 'SELECT') AS readable,
            pg_has_role(c.relowner, 'USAGE') AS owned,
            c.relreplident::text AS identity,
            EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND (i.indisprimary OR i.indisreplident)) AS has_key
       FROM unnest($1::text[]) AS t(name) LEFT JOIN pg_class c ON c.oid = to_regclass(t.name)`,
    [tables.map((t) => quoteTable(t))],
  );
  const named = (quoted: string) => quoted.replace(/"/g, '');
  for (const table of described) {
    if (!table.found) throw invalid('table_not_found', `The source database has no table ${named(table.name)}.`);
    if (!table.readable) throw invalid('permission_denied', `The role may not read ${named(table.name)}: GRANT SELECT (the snapshot reads it).`);
    if (table.identity === 'n' || (table.identity === 'd' && !table.has_key)) {
      throw invalid('configuration_invalid', `The table ${named(table.name)} has no replica identity (no primary key): published, its UPDATEs and DELETEs would fail. Add a primary key, or ALTER TABLE ... REPLICA IDENTITY FULL.`);
    }
  }
  // The pipeline's own names are per pipeline; a check knows only the configured ones.
  if (config.publication !== undefined) {
    const { rows } = await client.query<{ n: string }>('SELECT count(*)::text AS n FROM pg_publication WHERE pubname = $1', [config.publication]);
    if (rows[0]!.n === '0' && described.some((t) => !t.owned)) {
      throw invalid('permission_denied', `The publication ${config.publication} does not exist, and the role does not own every table to create it: CREATE PUBLICATION ${config.publication} FOR TABLE ... as their owner.`);
    }
  } else if (described.some((t) => !t.owned)) {
    const foreign = described.filter((t) => !t.owned).map((t) => named(t.name));
    throw invalid('permission_denied', `Creating the pipeline's publication needs ownership of ${foreign.join(', ')}: name a publication their owner created (publication), or make the role their owner.`);
  }
  const { rows: slots } = await client.query<{ slot_name: string; active: boolean; lag_bytes: string | null }>(
    `SELECT slot_name, active, pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint::text AS lag_bytes
       FROM pg_replication_slots
      WHERE database = current_database() AND (slot_name LIKE 'ferry\\_%' OR slot_name = $1)
      ORDER BY slot_name`,
    [config.slot ?? ''],
  );
  const needsSlot = config.slot === undefined || !slots.some((s) => s.slot_name === config.slot);
  if (needsSlot && Number(facts.slots_used) >= Number(facts.slots_max)) {
    throw invalid('configuration_invalid', `All ${facts.slots_max} replication slots are in use (max_replication_slots): raise it, or drop slots nothing reads.`);
  }
  return {
    wal_level: facts.wal_level,
    replication_slots: slots.map((s) => ({ slot_name: s.slot_name, active: s.active, lag_bytes: s.lag_bytes === null ? null : Number(s.lag_bytes) })),
  };
}

/** What a keepalive from the server leads to: the position to confirm, and whether to answer now. */
export interface KeepaliveAnswer {
  /** The position the slot may be confirmed up to. */
  confirmed: Lsn;
  /** Send a standby status update now. */
  reply: boolean;
}

/**
 * How the source answers a keepalive. With nothing received still waiting to be delivered
 * (`idle`), the slot may move up to the server's WAL end, so the WAL behind an idle slot is
 * freed. The server hears back when it asks, or when the slot moved; not on every keepalive:
 * while it streams, the server pings after each catch-up and again after each answer, thousands
 * of times a second under a steady load, and the position it would hear has not changed.
 */
export function keepaliveAnswer(state: { idle: boolean; walEnd: Lsn; confirmed: Lsn; replyRequested: boolean }): KeepaliveAnswer {
  const moved = state.idle && state.walEnd > state.confirmed;
  return { confirmed: moved ? state.walEnd : state.confirmed, reply: moved || state.replyRequested };
}

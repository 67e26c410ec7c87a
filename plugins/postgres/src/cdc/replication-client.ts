import type { Socket } from 'node:net';
import { ConnectorError } from '@ferry/core';
import pg from 'pg';
import { sqlState } from '../connection.js';
import { formatLsn, parseLsn, standbyStatus, type Lsn } from './pgoutput.js';

/** A slot just created: where its stream starts, and the snapshot that matches that start. */
export interface CreatedSlot {
  /** The LSN from which the slot's changes follow the snapshot. */
  consistentPoint: Lsn;
  /** The exported snapshot's name, while this connection stays idle; absent when none was asked for. */
  snapshotName?: string;
}

/** pg's connection object, which the replication protocol needs below `Client`'s query API. */
interface PgConnection {
  on(event: 'copyData', listener: (message: { chunk: Buffer }) => void): void;
  removeAllListeners(event?: string): void;
  sendCopyFromChunk(chunk: Buffer): void;
  stream: Socket;
}

/**
 * One replication connection to Postgres (`replication=database`): creates logical slots with
 * an exported snapshot, and streams a slot's changes (CopyBoth) with standby status updates.
 *
 * Built on the `pg` client the plugin already uses, with its socket from the outbound policy.
 * Why not `pg-logical-replication`: its decoder turns values through pg's global type parsers
 * (json numbers rounded to doubles, timestamps to millisecond Dates), fills TOAST columns an
 * update left unchanged with a fallback, and a timer of its own confirms the last *received*
 * position every 10 s, which would tell the server to free changes Ferry has not committed yet.
 * Why not postgres.js's `subscribe`: it only uses temporary slots, so every change made while
 * the engine is down is lost, and it exports no snapshot. The protocol itself is small: the
 * framing and pgoutput decoding are in `pgoutput.ts`.
 */
export class ReplicationClient {
  private readonly client: pg.Client;
  private ended = false;

  private constructor(config: pg.ClientConfig) {
    // No statement_timeout: START_REPLICATION is one command that streams for as long as it runs.
    this.client = new pg.Client({ ...config, statement_timeout: 0, replication: 'database' } as pg.ClientConfig);
    // A dropped connection is reported through the stream's promise; this keeps it from
    // becoming an unhandled 'error' event.
    this.client.on('error', () => undefined);
  }

  /** Opens a replication connection with the plugin's usual client config. */
  static async connect(config: pg.ClientConfig): Promise<ReplicationClient> {
    const replication = new ReplicationClient(config);
    try {
      await replication.client.connect();
    } catch (error) {
      await replication.end();
      // 28000 from a walsender: the role may log in, but not replicate (or pg_hba.conf has no
      // replication line for it). Said plainly, since "authentication failed" would mislead.
      if (sqlState(error) === '28000' || sqlState(error) === '42501') {
        throw new ConnectorError(
          'permission_denied',
          'The role may not open a replication connection: it needs the REPLICATION attribute (ALTER ROLE ... REPLICATION), and pg_hba.conf a "replication" line for it.',
          { retryable: false, cause: error },
        );
      }
      throw error;
    }
    return replication;
  }

  /**
   * `CREATE_REPLICATION_SLOT ... LOGICAL pgoutput`, exporting a snapshot when `exportSnapshot`
   * (then this connection must stay idle until the snapshot is imported). The older option
   * syntax is used on purpose: every Postgres from 10 on accepts it.
   */
  async createSlot(slot: string, exportSnapshot: boolean): Promise<CreatedSlot> {
    const result = await this.client.query<{ consistent_point: string; snapshot_name: string | null }>(
      `CREATE_REPLICATION_SLOT ${quoteReplicationIdent(slot)} LOGICAL pgoutput ${exportSnapshot ? 'EXPORT_SNAPSHOT' : 'NOEXPORT_SNAPSHOT'}`,
    );
    const row = result.rows[0]!;
    return { consistentPoint: parseLsn(row.consistent_point), ...(row.snapshot_name ? { snapshotName: row.snapshot_name } : {}) };
  }

  /**
   * Streams the slot's changes for `publication` from `from`, calling `onFrame` with every
   * message in order (synchronously, as they are read; `pgoutput.ts` reads them, and the buffer
   * is only valid during the call). Resolves when the stream ends (the connection closed by
   * {@link end}); rejects when the server or the network ends it. `messages` asks for the
   * messages of `pg_logical_emit_message` too (Postgres 14 and later): a backfill's watermarks.
   */
  stream(slot: string, publication: string, from: Lsn, onFrame: (frame: Buffer) => void, options: { messages?: boolean } = {}): Promise<void> {
    const connection = this.connection();
    connection.on('copyData', ({ chunk }) => onFrame(chunk));
    // The publication list is a string literal holding identifiers: quoted once for each.
    const names = quoteLiteral(quoteReplicationIdent(publication));
    const sql = `START_REPLICATION SLOT ${quoteReplicationIdent(slot)} LOGICAL ${formatLsn(from)} (proto_version '1', publication_names ${names}${options.messages ? ", messages 'true'" : ''})`;
    return this.client.query(sql).then(
      () => undefined,
      (error: unknown) => {
        if (this.ended) return;
        throw error;
      },
    );
  }

  /**
   * Tells the server that everything before `lsn` is durably handled: the slot's confirmed
   * position moves there, and the WAL before it may be freed. Also answers its keepalives.
   */
  confirm(lsn: Lsn, nowMs: number): void {
    if (this.ended) return;
    this.connection().sendCopyFromChunk(standbyStatus(lsn, nowMs));
  }

  /** Stops reading from the server (backpressure) until {@link resume}. */
  pause(): void {
    this.connection().stream.pause();
  }

  /** Reads from the server again. */
  resume(): void {
    if (!this.ended) this.connection().stream.resume();
  }

  /** Closes the connection; a stream in progress resolves. */
  async end(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    await this.client.end().catch(() => undefined);
  }

  private connection(): PgConnection {
    return (this.client as unknown as { connection: PgConnection }).connection;
  }
}

/** An identifier as the replication command grammar takes it: always double-quoted. */
export function quoteReplicationIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

function quoteLiteral(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}

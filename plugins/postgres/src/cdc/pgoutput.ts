/**
 * A decoder of `pgoutput`, the logical decoding output plugin built into Postgres (protocol
 * version 1), and of the replication stream's framing (XLogData and keepalive messages).
 *
 * Column values are kept as the server's text: turning them into JSON is {@link columnValue}'s
 * job, per type, so nothing is parsed twice and nothing is parsed lossily (pg's default parsers
 * would turn json into doubles and timestamps into millisecond Dates).
 */

/** A log sequence number, as a 64-bit unsigned integer. */
export type Lsn = bigint;

/** One column of a relation, as the Relation message describes it. */
export interface RelationColumn {
  /** Part of the replica identity (the key a delete or an update names its row by). */
  readonly key: boolean;
  readonly name: string;
  readonly typeOid: number;
  readonly typeModifier: number;
}

/** A table, as pgoutput describes it before its first change (and again after a schema change). */
export interface Relation {
  readonly oid: number;
  readonly schema: string;
  readonly table: string;
  /** `d` default (the primary key), `n` nothing, `f` full (every column), `i` an index. */
  readonly replicaIdentity: 'd' | 'n' | 'f' | 'i';
  readonly columns: readonly RelationColumn[];
}

/**
 * A row as sent: per column its text, `null`, or `undefined` for a TOASTed value an update left
 * unchanged (pgoutput does not send those again).
 */
export type TupleData = ReadonlyArray<string | null | undefined>;

/** A decoded pgoutput message. */
export type PgoutputMessage =
  | { tag: 'begin'; finalLsn: Lsn; commitTimeMicros: bigint; xid: number }
  | { tag: 'commit'; commitLsn: Lsn; endLsn: Lsn; commitTimeMicros: bigint }
  | { tag: 'relation'; relation: Relation }
  | { tag: 'insert'; relationOid: number; new: TupleData }
  | { tag: 'update'; relationOid: number; key?: TupleData; old?: TupleData; new: TupleData }
  | { tag: 'delete'; relationOid: number; key?: TupleData; old?: TupleData }
  | { tag: 'truncate'; relationOids: number[]; cascade: boolean; restartIdentity: boolean }
  | { tag: 'message'; transactional: boolean; lsn: Lsn; prefix: string; content: string }
  | { tag: 'origin' | 'type' | 'other' };

/** Microseconds between the Unix epoch and Postgres's epoch (2000-01-01). */
export const POSTGRES_EPOCH_MICROS = 946_684_800_000_000n;

/** A Postgres timestamp (microseconds since 2000-01-01) in Unix milliseconds. */
export function postgresMicrosToMillis(micros: bigint): number {
  return Number((micros + POSTGRES_EPOCH_MICROS) / 1000n);
}

/** An LSN in Postgres's text form, `16/B374D848`. */
export function formatLsn(lsn: Lsn): string {
  return `${(lsn >> 32n).toString(16).toUpperCase()}/${(lsn & 0xffffffffn).toString(16).toUpperCase()}`;
}

/** Parses an LSN's text form; throws on anything else. */
export function parseLsn(text: string): Lsn {
  const match = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(text);
  if (!match) throw new Error(`Not an LSN: ${JSON.stringify(text.slice(0, 40))}`);
  return (BigInt(`0x${match[1]}`) << 32n) | BigInt(`0x${match[2]}`);
}

/**
 * Reads one pgoutput message, from `offset` of `buf` (a replication frame's data starts at
 * {@link XLOG_DATA_OFFSET}). Unknown tags decode as `other` and are skipped by callers.
 */
export function decodePgoutput(buf: Buffer, offset = 0): PgoutputMessage {
  const r = new Reader(buf, offset);
  const tag = String.fromCharCode(r.uint8());
  switch (tag) {
    case 'B':
      return { tag: 'begin', finalLsn: r.uint64(), commitTimeMicros: r.int64(), xid: r.uint32() };
    case 'C': {
      r.uint8(); // flags, unused
      return { tag: 'commit', commitLsn: r.uint64(), endLsn: r.uint64(), commitTimeMicros: r.int64() };
    }
    case 'R': {
      const oid = r.uint32();
      const schema = r.cstring();
      const table = r.cstring();
      const identity = String.fromCharCode(r.uint8()) as Relation['replicaIdentity'];
      const count = r.uint16();
      const columns: RelationColumn[] = [];
      for (let i = 0; i < count; i++) {
        const flags = r.uint8();
        columns.push({ key: (flags & 1) === 1, name: r.cstring(), typeOid: r.uint32(), typeModifier: r.int32() });
      }
      return { tag: 'relation', relation: { oid, schema, table, replicaIdentity: identity, columns } };
    }
    case 'I': {
      const relationOid = r.uint32();
      r.expect('N');
      return { tag: 'insert', relationOid, new: r.tuple() };
    }
    case 'U': {
      const relationOid = r.uint32();
      let kind = String.fromCharCode(r.uint8());
      let key: TupleData | undefined;
      let old: TupleData | undefined;
      if (kind === 'K') key = r.tuple();
      else if (kind === 'O') old = r.tuple();
      if (kind !== 'N') kind = String.fromCharCode(r.uint8());
      if (kind !== 'N') throw new Error(`pgoutput: an update without its new tuple ('${kind}').`);
      return { tag: 'update', relationOid, ...(key ? { key } : {}), ...(old ? { old } : {}), new: r.tuple() };
    }
    case 'D': {
      const relationOid = r.uint32();
      const kind = String.fromCharCode(r.uint8());
      const tuple = r.tuple();
      return kind === 'O' ? { tag: 'delete', relationOid, old: tuple } : { tag: 'delete', relationOid, key: tuple };
    }
    case 'T': {
      const count = r.uint32();
      const options = r.uint8();
      const relationOids: number[] = [];
      for (let i = 0; i < count; i++) relationOids.push(r.uint32());
      return { tag: 'truncate', relationOids, cascade: (options & 1) === 1, restartIdentity: (options & 2) === 2 };
    }
    case 'O':
      return { tag: 'origin' };
    case 'Y':
      return { tag: 'type' };
    case 'M': {
      // A pg_logical_emit_message (sent with the `messages` option): flags, LSN, prefix, content.
      const transactional = (r.uint8() & 1) === 1;
      const lsn = r.uint64();
      const prefix = r.cstring();
      return { tag: 'message', transactional, lsn, prefix, content: r.bytes(r.int32()) };
    }
    default:
      return { tag: 'other' };
  }
}

/**
 * The kinds of message of the replication stream (CopyBoth data from the server), by their first
 * byte. Its messages are read in place, not decoded into objects: there is one per change.
 */
export const FRAME = { xlog: 0x77 /* w */, keepalive: 0x6b /* k */ } as const;

/** Where an XLogData frame's pgoutput message starts (after its tag and three 8-byte fields). */
export const XLOG_DATA_OFFSET = 25;

/** The pgoutput tag of an XLogData frame (`B`egin, `C`ommit, `I`nsert...), as a character code. */
export function xlogTag(frame: Buffer): number {
  return frame[XLOG_DATA_OFFSET] ?? 0;
}

/** The end of the server's WAL as an XLogData or keepalive frame reports it. */
export function frameWalEnd(frame: Buffer): Lsn {
  return frame.readBigUInt64BE(frame[0] === FRAME.xlog ? 9 : 1);
}

/** Whether a keepalive frame asks for an answer at once. */
export function replyRequested(frame: Buffer): boolean {
  return frame[17] === 1;
}

/**
 * A Standby Status Update: `lsn` written, flushed and applied (the slot's confirmed position
 * moves to it), at `nowMs`. The server frees the WAL before it.
 */
export function standbyStatus(lsn: Lsn, nowMs: number, replyRequested = false): Buffer {
  const out = Buffer.alloc(34);
  out[0] = 0x72; // r
  out.writeBigUInt64BE(lsn, 1);
  out.writeBigUInt64BE(lsn, 9);
  out.writeBigUInt64BE(lsn, 17);
  out.writeBigInt64BE(BigInt(Math.trunc(nowMs)) * 1000n - POSTGRES_EPOCH_MICROS, 25);
  out[33] = replyRequested ? 1 : 0;
  return out;
}

/**
 * Buffer's own UTF-8 decoder: `toString('utf8', start, end)` checks its arguments and looks up
 * the encoding before it calls this, which cost as much as the decoding of a short value (and
 * there are several per change).
 */
const utf8Slice = (Buffer.prototype as unknown as { utf8Slice(this: Buffer, start: number, end: number): string }).utf8Slice;

class Reader {
  constructor(
    private readonly buf: Buffer,
    private at: number,
  ) {}
  uint8(): number {
    return this.buf.readUInt8(this.at++);
  }
  uint16(): number {
    const v = this.buf.readUInt16BE(this.at);
    this.at += 2;
    return v;
  }
  int32(): number {
    const v = this.buf.readInt32BE(this.at);
    this.at += 4;
    return v;
  }
  uint32(): number {
    const v = this.buf.readUInt32BE(this.at);
    this.at += 4;
    return v;
  }
  uint64(): bigint {
    const v = this.buf.readBigUInt64BE(this.at);
    this.at += 8;
    return v;
  }
  int64(): bigint {
    const v = this.buf.readBigInt64BE(this.at);
    this.at += 8;
    return v;
  }
  cstring(): string {
    const end = this.buf.indexOf(0, this.at);
    if (end < 0) throw new Error('pgoutput: an unterminated string.');
    const s = this.buf.toString('utf8', this.at, end);
    this.at = end + 1;
    return s;
  }
  bytes(length: number): string {
    if (length < 0 || this.at + length > this.buf.length) throw new Error('pgoutput: a message runs past the end of its frame.');
    const s = this.buf.toString('utf8', this.at, this.at + length);
    this.at += length;
    return s;
  }
  expect(char: string): void {
    const got = String.fromCharCode(this.uint8());
    if (got !== char) throw new Error(`pgoutput: expected '${char}', got '${got}'.`);
  }
  tuple(): TupleData {
    const count = this.uint16();
    const values: Array<string | null | undefined> = new Array(count);
    for (let i = 0; i < count; i++) {
      const kind = this.uint8();
      if (kind === 0x6e /* n */) values[i] = null;
      else if (kind === 0x75 /* u */) values[i] = undefined;
      else if (kind === 0x74 /* t */) {
        const length = this.int32();
        if (length < 0 || this.at + length > this.buf.length) throw new Error('pgoutput: a value runs past the end of its message.');
        values[i] = utf8Slice.call(this.buf, this.at, this.at + length);
        this.at += length;
      } else throw new Error(`pgoutput: an unexpected column kind ${kind} (binary values are never asked for).`);
    }
    return values;
  }
}

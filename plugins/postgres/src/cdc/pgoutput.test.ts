import { describe, expect, it } from 'vitest';
import { decodePgoutput, FRAME, frameWalEnd, replyRequested, XLOG_DATA_OFFSET, xlogTag } from './pgoutput.js';

/** An XLogData frame around a pgoutput message, as the server sends it. */
function xlog(message: Buffer, walEnd = 0x1_0000_0010n): Buffer {
  const head = Buffer.alloc(XLOG_DATA_OFFSET);
  head[0] = FRAME.xlog;
  head.writeBigUInt64BE(0x1_0000_0000n, 1);
  head.writeBigUInt64BE(walEnd, 9);
  return Buffer.concat([head, message]);
}

/** An insert into relation 42 of text values (null for a NULL). */
function insert(values: (string | null)[]): Buffer {
  const parts = [Buffer.from('I'), Buffer.alloc(4), Buffer.from('N'), Buffer.alloc(2)];
  parts[1]!.writeUInt32BE(42);
  parts[3]!.writeUInt16BE(values.length);
  for (const v of values) {
    if (v === null) parts.push(Buffer.from('n'));
    else {
      const bytes = Buffer.from(v, 'utf8');
      const len = Buffer.alloc(4);
      len.writeInt32BE(bytes.length);
      parts.push(Buffer.from('t'), len, bytes);
    }
  }
  return Buffer.concat(parts);
}

describe('pgoutput', () => {
  it('reads a change where it lies in its frame: tag, values (UTF-8 exact), the WAL end', () => {
    const frame = xlog(insert(['7', null, 'ünïcødé 🚀\u2028']));
    expect(frame[0]).toBe(FRAME.xlog);
    expect(String.fromCharCode(xlogTag(frame))).toBe('I');
    expect(frameWalEnd(frame)).toBe(0x1_0000_0010n);
    expect(decodePgoutput(frame, XLOG_DATA_OFFSET)).toEqual({ tag: 'insert', relationOid: 42, new: ['7', null, 'ünïcødé 🚀\u2028'] });
  });

  it('refuses a value that runs past the end of its message instead of cutting it short', () => {
    const message = insert(['abcdef']);
    expect(() => decodePgoutput(message.subarray(0, message.length - 2))).toThrow(/^pgoutput: a value runs past the end/);
  });

  it('reads a logical message (a backfill watermark): transactional flag, LSN, prefix, content; refuses one cut short', () => {
    const content = Buffer.from('run:1:low');
    const head = Buffer.alloc(1 + 1 + 8);
    head.write('M', 0);
    head[1] = 1;
    head.writeBigUInt64BE(0x3_0000_0020n, 2);
    const length = Buffer.alloc(4);
    length.writeInt32BE(content.length);
    const message = Buffer.concat([head, Buffer.from('ferry.backfill\0'), length, content]);
    expect(decodePgoutput(message)).toEqual({ tag: 'message', transactional: true, lsn: 0x3_0000_0020n, prefix: 'ferry.backfill', content: 'run:1:low' });
    expect(() => decodePgoutput(message.subarray(0, message.length - 1))).toThrow(/^pgoutput: a message runs past the end/);
  });

  it('reads a keepalive: the WAL end and whether it asks for an answer', () => {
    const keepalive = Buffer.alloc(18);
    keepalive[0] = FRAME.keepalive;
    keepalive.writeBigUInt64BE(0x2_0000_0000n, 1);
    keepalive[17] = 1;
    expect(frameWalEnd(keepalive)).toBe(0x2_0000_0000n);
    expect(replyRequested(keepalive)).toBe(true);
    keepalive[17] = 0;
    expect(replyRequested(keepalive)).toBe(false);
  });
});

import { open } from 'node:fs/promises';

/** One complete line of a file. */
export interface Line {
  /** 1-based line number: stable for as long as the file is only appended to. */
  number: number;
  /** Byte offset of the line's first byte. */
  offset: number;
  /** The line without its newline. */
  text: string;
}

/** A place in a file just after a complete line: its byte offset and the number of lines before it. */
export interface LineCursor {
  offset: number;
  line: number;
}

/** The start of a file. */
export const START: LineCursor = Object.freeze({ offset: 0, line: 0 });

/** What {@link readLines} found after a cursor. */
export interface LinesRead {
  lines: Line[];
  /** The cursor after the last line returned. */
  next: LineCursor;
  /** The file's size when it was read. */
  size: number;
}

/** Bytes read per system call. */
const CHUNK_BYTES = 64 * 1024;

/**
 * Reads up to `max` complete lines after `from`. A last line without its newline is left for a
 * later read, because its writer may still be appending it. File-system errors (a missing file
 * included) are thrown as they are: the caller knows what they mean for it.
 */
export async function readLines(path: string, from: LineCursor, max: number, signal?: AbortSignal): Promise<LinesRead> {
  const handle = await open(path, 'r');
  try {
    const { size } = await handle.stat();
    const lines: Line[] = [];
    const chunk = Buffer.alloc(CHUNK_BYTES);
    let cursor = from;
    // Bytes after `cursor` that were read but hold no complete line yet.
    let pending = Buffer.alloc(0);
    while (lines.length < max && cursor.offset + pending.length < size) {
      signal?.throwIfAborted();
      const { bytesRead } = await handle.read(chunk, 0, CHUNK_BYTES, cursor.offset + pending.length);
      if (bytesRead === 0) break;
      pending = Buffer.concat([pending, chunk.subarray(0, bytesRead)]);
      let newline = pending.indexOf(0x0a);
      while (newline !== -1 && lines.length < max) {
        const number = cursor.line + 1;
        lines.push({ number, offset: cursor.offset, text: pending.subarray(0, newline).toString('utf8') });
        cursor = { offset: cursor.offset + newline + 1, line: number };
        pending = pending.subarray(newline + 1);
        newline = pending.indexOf(0x0a);
      }
    }
    return { lines, next: cursor, size };
  } finally {
    await handle.close();
  }
}

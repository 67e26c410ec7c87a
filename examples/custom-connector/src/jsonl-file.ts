import { createHmac, randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access, appendFile, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Type, type Static } from '@sinclair/typebox';
import { ConnectorError, Secret, defineConnector, type Checkpoint, type DestinationEvent, type JsonObject, type JsonValue, type SourceRecord, type WriteResult } from '@ferry/core';
import { START, readLines, type LineCursor } from './line-file.js';

/** The event type of a line that is not JSON, kept rather than lost (a `filter` step can drop it). */
export const UNPARSED_TYPE = 'jsonl.unparsed';

/** Lines scanned at a time when a destination learns the ids already in its file. */
const SCAN_LINES = 10_000;

/** The config of a `jsonl_file` connector. */
export const jsonlFileConfigSchema = Type.Object(
  {
    path: Type.String({ minLength: 1, description: 'The JSON Lines file to read from or append to.' }),
    type: Type.Optional(Type.String({ minLength: 1, default: 'jsonl.line', description: 'The event type of lines that carry none.' })),
    max_line_bytes: Type.Optional(
      Type.Integer({ minimum: 64, maximum: 16_777_216, default: 1_048_576, description: 'A destination refuses an event longer than this as a line.' }),
    ),
    signing_key: Type.Optional(
      Secret(Type.String({ minLength: 32, description: 'When set, a destination adds `sig`, an HMAC-SHA256 of the line, so readers can tell it was not edited.' })),
    ),
  },
  { additionalProperties: false },
);

/** A `jsonl_file` connector's config, as its contexts see it. */
export type JsonlFileConfig = Static<typeof jsonlFileConfigSchema>;

/**
 * A connector type over JSON Lines files. As a source it reads the complete lines of a file that
 * something else appends to, from a checkpoint; as a destination it appends one line per event,
 * `{ id, type, occurred_at, payload, sig? }`, once per event id.
 *
 * A line `{ "type"?, "occurred_at"?, "payload": {...} }` becomes an event with that type, time
 * and payload (lines this connector wrote read back as the events they were); any other JSON
 * object becomes the payload of an event typed by its `type` field, or by the config's `type`.
 *
 * Its "server" is the file system: a path whose directory is missing or not writable is an
 * outage (retryable), like a volume that is not mounted yet.
 *
 * @example
 * ```ts
 * const engine = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }), plugins: [jsonlFile()] });
 * await engine.connectors.create('default', { type: 'jsonl_file', direction: 'source', config: { path: '/var/data/orders.jsonl' } });
 * ```
 */
export const jsonlFile = () =>
  defineConnector({
    type: 'jsonl_file',
    version: '1.0.0',
    directions: ['source', 'destination'],
    configSchema: jsonlFileConfigSchema,

    async check(ctx) {
      const started = ctx.clock.now();
      try {
        // Whichever the direction (`ctx.direction`), a readable file or a writable directory
        // will do: a source's file may not exist yet, and a destination creates it there.
        await access(ctx.config.path, constants.R_OK).catch(() => access(dirname(ctx.config.path), constants.W_OK));
        return { health: 'healthy', latencyMs: ctx.clock.now() - started };
      } catch (error) {
        // The message names no path: paths can reveal more about a host than a health badge should.
        return { health: 'down', latencyMs: ctx.clock.now() - started, error: { code: errorCode(error), message: 'The file cannot be read, and its directory cannot be written.' } };
      }
    },

    source(ctx) {
      const { path } = ctx.config;
      const fallbackType = ctx.config.type ?? 'jsonl.line';
      return {
        async read(checkpoint, max, signal) {
          const from = cursorOf(checkpoint);
          let read;
          try {
            read = await readLines(path, from, max, signal);
          } catch (error) {
            // No file in an existing directory: nothing was written yet. No directory: an outage.
            if (isErrno(error, 'ENOENT') && (await directoryExists(path))) return { records: [], checkpoint: from };
            throw fileSystemError(error, 'Reading the file failed.');
          }
          if (read.size < from.offset) {
            // Truncated or replaced: positions after the checkpoint would name other lines, so
            // events could be skipped or given the ids of earlier ones. A person must decide.
            throw new ConnectorError('file_truncated', 'The file is shorter than the checkpoint; it was truncated or replaced.', { retryable: false });
          }
          const records = read.lines.filter((line) => line.text.trim() !== '').map((line) => toRecord(String(line.number), line.text, fallbackType));
          // The checkpoint moves past blank lines too, so they are not read again.
          return { records, checkpoint: { offset: read.next.offset, line: read.next.line } };
        },
      };
    },

    destination(ctx) {
      const { path } = ctx.config;
      const maxLineBytes = ctx.config.max_line_bytes ?? 1_048_576;
      const key = ctx.config.signing_key;
      // The ids already in the file, and how far it was scanned for them: a batch written again
      // after a crash (or by another pipeline into the same file) is not appended twice.
      const written = new Set<string>();
      let scanned: LineCursor = START;

      /** Learns the ids of lines appended since the last scan; true when the file ends mid-line. */
      const catchUp = async (signal: AbortSignal): Promise<boolean> => {
        for (;;) {
          let read;
          try {
            read = await readLines(path, scanned, SCAN_LINES, signal);
          } catch (error) {
            if (isErrno(error, 'ENOENT')) return false; // Not created yet; appendFile says whether it can be.
            throw fileSystemError(error, 'Reading the file failed.');
          }
          if (read.size < scanned.offset) {
            // Replaced (a log rotation): the ids in it are the new file's, from the start.
            written.clear();
            scanned = START;
            continue;
          }
          for (const line of read.lines) {
            const id = idOf(line.text);
            if (id !== undefined) written.add(id);
          }
          scanned = read.next;
          if (read.lines.length < SCAN_LINES) return read.size > scanned.offset;
        }
      };

      return {
        async write(events, signal) {
          const tornTail = await catchUp(signal);
          const results: WriteResult[] = [];
          const lines: string[] = [];
          const ids: string[] = [];
          for (const event of events) {
            if (written.has(event.id) || ids.includes(event.id)) {
              // Already in the file: acknowledging it again is what makes re-delivery harmless.
              results.push({ ok: true });
              continue;
            }
            const refusal = refuse(event, key, maxLineBytes);
            if (typeof refusal !== 'string') {
              // This event can never be written as it is: refuse it alone, the batch goes on.
              results.push({ ok: false, error: refusal });
              continue;
            }
            lines.push(refusal);
            ids.push(event.id);
            results.push({ ok: true });
          }
          signal.throwIfAborted();
          if (lines.length > 0) {
            try {
              // A line left unfinished by a writer that died is closed first, so ours stay whole.
              await appendFile(path, (tornTail ? '\n' : '') + lines.join(''));
            } catch (error) {
              // Nothing was acknowledged: the core keeps the batch and writes it again later.
              throw fileSystemError(error, 'Appending to the file failed.');
            }
            for (const id of ids) written.add(id);
          }
          return results;
        },
      };
    },

    async rotate(_ctx, input) {
      const supplied = input.config?.signing_key;
      if (supplied === undefined) return { signing_key: randomBytes(32).toString('hex') };
      // Supplied keys go through here too: surrounding whitespace is a copy-and-paste accident,
      // and a short key is refused before it replaces a good one.
      const trimmed = supplied.trim();
      if (trimmed.length < 32) throw new ConnectorError('invalid_signing_key', 'signing_key must be at least 32 characters.', { retryable: false });
      return { signing_key: trimmed };
    },
  });

/** The line cursor a checkpoint holds; `null` (or anything else) is the start of the file. */
function cursorOf(checkpoint: Checkpoint | null): LineCursor {
  if (checkpoint !== null && typeof checkpoint === 'object' && !Array.isArray(checkpoint)) {
    const { offset, line } = checkpoint;
    if (typeof offset === 'number' && typeof line === 'number') return { offset, line };
  }
  return START;
}

/** One line as a record. Its line number is its position, so a re-read yields the same event id. */
function toRecord(position: string, text: string, fallbackType: string): SourceRecord {
  let value: JsonValue;
  try {
    value = JSON.parse(text) as JsonValue;
  } catch {
    return { position, type: UNPARSED_TYPE, payload: { line: text } };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { position, type: fallbackType, payload: { value } };
  const type = typeof value.type === 'string' && value.type !== '' ? value.type : fallbackType;
  // The same line gives the same time on every read; an unparseable time is left out (read time).
  const occurredAt = typeof value.occurred_at === 'string' && !Number.isNaN(Date.parse(value.occurred_at)) ? value.occurred_at : undefined;
  const { payload } = value;
  if (payload !== null && typeof payload === 'object' && !Array.isArray(payload)) return { position, type, occurredAt, payload };
  return { position, type, occurredAt, payload: value };
}

/** The event as its line, or why it cannot be written. */
function refuse(event: DestinationEvent, key: string | undefined, maxLineBytes: number): string | ConnectorError {
  let line: string;
  try {
    line = toLine(event, key);
  } catch (error) {
    // Only a caller outside the engine can hand over such a payload (a BigInt, a cycle).
    return new ConnectorError('unserializable', `Event ${event.id} cannot be written as JSON.`, { retryable: false, cause: error });
  }
  if (Buffer.byteLength(line) > maxLineBytes) {
    return new ConnectorError('record_too_large', `Event ${event.id} is longer than ${maxLineBytes} bytes as a line.`, { retryable: false });
  }
  return line;
}

/** One event as a line, with an HMAC of the line's content when a signing key is configured. */
function toLine(event: DestinationEvent, key: string | undefined): string {
  const body: JsonObject = { id: event.id, type: event.type, occurred_at: event.occurredAt, payload: event.payload };
  if (key !== undefined) body.sig = createHmac('sha256', key).update(JSON.stringify(body)).digest('hex');
  return `${JSON.stringify(body)}\n`;
}

/** The `id` of a line this connector wrote; lines it cannot parse have none. */
function idOf(text: string): string | undefined {
  try {
    const value = JSON.parse(text) as { id?: unknown } | null;
    return typeof value?.id === 'string' ? value.id : undefined;
  } catch {
    return undefined;
  }
}

async function directoryExists(path: string): Promise<boolean> {
  return stat(dirname(path)).then((s) => s.isDirectory(), () => false);
}

function isErrno(error: unknown, code: string): boolean {
  return (error as NodeJS.ErrnoException | null)?.code === code;
}

/**
 * A file-system failure of a whole read or write. Retryable: a missing directory, a permission or
 * a full disk is fixed by an operator, not by the events, so the core holds the flow until then.
 */
function fileSystemError(error: unknown, message: string): ConnectorError {
  if (error instanceof ConnectorError) return error;
  if ((error as Error | null)?.name === 'AbortError') return new ConnectorError('aborted', 'The operation was aborted.', { retryable: true, cause: error });
  return new ConnectorError(errorCode(error), message, { retryable: true, cause: error });
}

/** A short, secret-free reason code for a file-system error. */
function errorCode(error: unknown): string {
  switch ((error as NodeJS.ErrnoException | null)?.code) {
    case 'ENOENT':
    case 'ENOTDIR':
      return 'not_found';
    case 'EACCES':
    case 'EPERM':
    case 'EROFS':
      return 'permission_denied';
    case 'ENOSPC':
      return 'disk_full';
    default:
      return 'io_error';
  }
}

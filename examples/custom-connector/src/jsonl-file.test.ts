import { mkdtemp, readFile, writeFile, appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConnectorError, type JsonObject, type PullSource } from '@ferry/core';
import { connectorContext } from '@ferry/testing';
import { runConnectorSuite } from '@ferry/testing/suites';
import { jsonlFile, type JsonlFileConfig } from './index.js';

// Every config gets a file of its own in a fresh directory: the real "server" is the file system.
const freshPath = async () => join(await mkdtemp(join(tmpdir(), 'ferry-jsonl-')), 'events.jsonl');
/** What a file holds, one entry per line. */
const linesOf = async (path: string) => (await readFile(path, 'utf8')).split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as JsonObject);
const KEY = 'k'.repeat(32);

runConnectorSuite('jsonl_file', {
  plugin: jsonlFile(),
  secretFields: ['signing_key'],
  source: {
    config: async () => ({ path: await freshPath() }),
    produce: async (config, from, count) => {
      const lines = Array.from({ length: count }, (_, i) => `${JSON.stringify({ type: 'suite.record', payload: { n: from + i } })}\n`);
      await appendFile(String(config.path), lines.join(''));
    },
  },
  destination: {
    // Lines longer than 1 KiB are refused: that is the record-level rule `rejectable` breaks.
    config: async () => ({ path: await freshPath(), max_line_bytes: 1024, signing_key: KEY }),
    landed: async (config) => (await linesOf(String(config.path))).map((l) => ({ id: String(l.id), type: String(l.type), payload: l.payload as JsonObject })),
    rejectable: async () => ({ id: 'evt_suite_big', type: 'suite.event', occurredAt: '2026-01-01T00:00:00.000Z', payload: { n: -1, blob: 'x'.repeat(2048) } }),
  },
  // A directory that does not exist: a volume that is not mounted.
  unreachable: async () => ({ path: join(tmpdir(), `ferry-jsonl-missing-${process.pid}`, 'nowhere', 'events.jsonl'), signing_key: KEY }),
  rotation: { config: async () => ({ path: await freshPath(), signing_key: KEY }) },
  // Files only: no host, no socket, nothing for the outbound policy to refuse.
  network: false,
});

/** A context as the engine builds one, for the cases the suite does not cover. */
const ctx = (config: JsonlFileConfig) => connectorContext(config);
const signal = () => new AbortController().signal;

describe('jsonl_file specifics', () => {
  it('reads types, times and payloads from lines; keeps a line that is not JSON; waits for an unfinished last line', async () => {
    const path = await freshPath();
    await writeFile(path, ['{"type":"order.created","occurred_at":"2026-02-01T10:00:00.000Z","payload":{"id":1}}', '', '{"order_id":2}', 'not json', '{"partial":'].join('\n'));
    const source = (await jsonlFile().source!(ctx({ path, type: 'order.imported' }))) as PullSource;
    const batch = await source.read(null, 10, signal());
    expect(batch.records).toEqual([
      { position: '1', type: 'order.created', occurredAt: '2026-02-01T10:00:00.000Z', payload: { id: 1 } },
      { position: '3', type: 'order.imported', occurredAt: undefined, payload: { order_id: 2 } },
      { position: '4', type: 'jsonl.unparsed', payload: { line: 'not json' } },
    ]);
    await appendFile(path, '1}\n');
    const rest = await source.read(batch.checkpoint, 10, signal());
    expect(rest.records.map((r) => [r.position, r.payload])).toEqual([['5', { partial: 1 }]]);
  });

  it('a file shorter than the checkpoint stops the source with a non-retryable error', async () => {
    const path = await freshPath();
    await writeFile(path, '{"n":1}\n{"n":2}\n');
    const source = (await jsonlFile().source!(ctx({ path }))) as PullSource;
    const { checkpoint } = await source.read(null, 10, signal());
    await writeFile(path, '{"n":3}\n');
    const error = await source.read(checkpoint, 10, signal()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectorError);
    expect(error).toMatchObject({ code: 'file_truncated', retryable: false });
  });

  it('signs lines with the key, closes a torn last line, and stays idempotent across destinations on one file', async () => {
    const path = await freshPath();
    await writeFile(path, '{"id":"evt_torn","ty');
    const event = (id: string) => ({ id, type: 't', occurredAt: '2026-01-01T00:00:00.000Z', payload: { id } });
    const first = await jsonlFile().destination!(ctx({ path, signing_key: KEY }));
    await first.write([event('evt_1'), event('evt_2')], signal());
    // A second destination (a restarted pipeline) learns what the file holds before it appends.
    const second = await jsonlFile().destination!(ctx({ path, signing_key: KEY }));
    expect((await second.write([event('evt_2'), event('evt_3'), event('evt_3')], signal())).every((r) => r.ok)).toBe(true);
    const text = await readFile(path, 'utf8');
    expect(text.split('\n')[0]).toBe('{"id":"evt_torn","ty');
    const lines = text.split('\n').slice(1).filter((l) => l !== '').map((l) => JSON.parse(l) as JsonObject);
    expect(lines.map((l) => l.id)).toEqual(['evt_1', 'evt_2', 'evt_3']);
    expect(lines.every((l) => typeof l.sig === 'string' && /^[0-9a-f]{64}$/.test(l.sig))).toBe(true);
  });

  it('rotation checks and trims a supplied key, and refuses a short one without retrying', async () => {
    const plugin = jsonlFile();
    const config = { path: await freshPath(), signing_key: KEY };
    expect(await plugin.rotate!(ctx(config), { config: { signing_key: ` ${'n'.repeat(32)}\n` } })).toEqual({ signing_key: 'n'.repeat(32) });
    const error = await plugin.rotate!(ctx(config), { config: { signing_key: 'short' } }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'invalid_signing_key', retryable: false });
  });
});

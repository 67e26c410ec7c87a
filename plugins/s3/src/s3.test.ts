import { gzipSync } from 'node:zlib';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import type { ConnectorError } from '@ferry/core';
import type { Checkpoint, DestinationEvent, JsonObject, PullSource, SourceRecord } from '@ferry/core';
import { createConnectorOutbound } from '@ferry/core/internal';
import { connectorContext } from '@ferry/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from './client.js';
import { s3Destination } from './destination.js';
import { s3Source } from './source.js';
import { s3, type S3Config } from './index.js';
import { freshConfig, keysUnder, linesUnder, objectText, startStore, type TestStore } from './test-store.js';

const plugin = s3({ requestTimeoutMs: 10_000 });
/** The test store listens on loopback: an engine reaching it allows 127.0.0.1. */
const allowLoopback = { outboundAllow: ['127.0.0.1'] } as const;
const never = new AbortController().signal;
let store: TestStore;
const opened: { close?(): Promise<void> }[] = [];

beforeAll(async () => {
  store = await startStore();
});
afterAll(async () => {
  for (const o of opened) await o.close?.();
  await store?.stop();
});

const config = async (extra: JsonObject = {}) => (await freshConfig(store, extra)) as unknown as S3Config;
async function openDestination(c: S3Config, pipelineId = 'pip_test') {
  const destination = await plugin.destination!(connectorContext(c, { pipelineId, ...allowLoopback }));
  opened.push(destination);
  return destination;
}
async function openSource(c: S3Config) {
  const source = (await plugin.source!(connectorContext(c, { direction: 'source', ...allowLoopback }))) as PullSource;
  opened.push(source);
  return source;
}
const put = (c: S3Config, key: string, body: string | Buffer) => store.client.send(new PutObjectCommand({ Bucket: c.bucket, Key: key, Body: body }));
const event = (i: number, payload: JsonObject = { n: i }, occurredAt = '2026-03-04T05:06:07.000Z'): DestinationEvent => ({
  id: `evt_${String(i).padStart(4, '0')}`,
  type: 'order.created',
  occurredAt,
  payload,
});

/** Reads everything from `from` in batches of `max`, returning the records and the checkpoints passed. */
async function drain(source: PullSource, from: Checkpoint | null, max: number) {
  const records: SourceRecord[] = [];
  let checkpoint = from;
  for (let i = 0; i < 1000; i++) {
    const batch = await source.read(checkpoint, max, never);
    if (batch.records.length === 0) return { records, checkpoint: batch.checkpoint };
    records.push(...batch.records);
    checkpoint = batch.checkpoint;
  }
  throw new Error('the source never caught up');
}

describe('s3 destination', () => {
  it('names objects by date, pipeline and the batch\'s first and last ids; a batch delivered again overwrites itself', async () => {
    const c = await config();
    const destination = await openDestination(c, 'pip_orders');
    const batch = [event(1, { n: 1 }, '2026-03-04T23:59:59.999Z'), event(2), event(3)];
    expect((await destination.write(batch, never)).every((r) => r.ok)).toBe(true);
    expect((await destination.write(batch, never)).every((r) => r.ok)).toBe(true);
    expect(await keysUnder(store, c as unknown as JsonObject)).toEqual(['events/2026/03/04/pip_orders-evt_0001-evt_0003.jsonl']);
    const text = await objectText(store, c.bucket, 'events/2026/03/04/pip_orders-evt_0001-evt_0003.jsonl');
    expect(text.split('\n')).toEqual([
      '{"id":"evt_0001","type":"order.created","occurred_at":"2026-03-04T23:59:59.999Z","payload":{"n":1}}',
      '{"id":"evt_0002","type":"order.created","occurred_at":"2026-03-04T05:06:07.000Z","payload":{"n":2}}',
      '{"id":"evt_0003","type":"order.created","occurred_at":"2026-03-04T05:06:07.000Z","payload":{"n":3}}',
      '',
    ]);
  });

  it('splits a batch at max_batch_bytes, gzips, writes JSON arrays, and refuses a record larger than an object', async () => {
    const c = await config({ max_batch_bytes: 1024, compression: 'gzip', format: 'json' });
    const destination = await openDestination(c);
    const batch = Array.from({ length: 30 }, (_, i) => event(i, { n: i, text: 'x'.repeat(60) }));
    batch.splice(7, 0, event(999, { blob: 'y'.repeat(2000) }));
    const results = await destination.write(batch, never);
    expect(results.filter((r) => !r.ok)).toHaveLength(1);
    const refused = results[7] as { ok: false; error: ConnectorError };
    expect(refused.error).toMatchObject({ code: 'record_too_large', retryable: false });
    const keys = await keysUnder(store, c as unknown as JsonObject);
    expect(keys.length).toBeGreaterThan(1);
    expect(keys.every((k) => /^events\/2026\/03\/04\/pip_test-evt_\d{4}-evt_\d{4}\.json\.gz$/.test(k))).toBe(true);
    const lines = await linesUnder(store, c as unknown as JsonObject);
    expect(lines.map((l) => (l.payload as JsonObject).n)).toEqual([...Array(30).keys()]);
  });

  it('uploads an object over 5 MiB in parts, byte for byte', async () => {
    const c = await config({ max_batch_bytes: 32 * 1024 * 1024 });
    // The plugin's own client, with a step that notes each command it sends.
    const sent: string[] = [];
    const client = await createClient(c, { maxSockets: 4, requestTimeoutMs: 30_000, now: () => 0, outbound: createConnectorOutbound({ allow: ['127.0.0.1'] }) });
    client.middlewareStack.add((next, context) => (args) => {
      sent.push(String(context.commandName));
      return next(args);
    }, { step: 'initialize' });
    const destination = s3Destination(client, c, 'pip_test');
    opened.push(destination);
    // About 12 MiB of lines: three parts of 5 MiB and the rest.
    const batch = Array.from({ length: 1200 }, (_, i) => event(i, { n: i, text: `${i}`.padEnd(10_000, 'z') }));
    expect((await destination.write(batch, never)).every((r) => r.ok)).toBe(true);
    const [key] = await keysUnder(store, c as unknown as JsonObject);
    expect(sent).toEqual(['CreateMultipartUploadCommand', 'UploadPartCommand', 'UploadPartCommand', 'UploadPartCommand', 'CompleteMultipartUploadCommand']);
    const text = await objectText(store, c.bucket, key!);
    expect(Buffer.byteLength(text)).toBeGreaterThan(10 * 1024 * 1024);
    const expected = batch.map((e) => JSON.stringify({ id: e.id, type: e.type, occurred_at: e.occurredAt, payload: e.payload })).join('\n') + '\n';
    expect(text === expected).toBe(true);
  });

  // s3rver checks the access key id, not SigV4 signatures: a wrong secret cannot fail here.
  it('fails a write to a missing bucket non-retryably, and with an unknown key as auth_failed', async () => {
    const c = await config();
    await expect((await openDestination({ ...c, bucket: 'no-such-bucket' })).write([event(1)], never)).rejects.toMatchObject({ code: 'bucket_not_found', retryable: false });
    const wrong = await openDestination({ ...c, access_key_id: 'AKIDNOTKNOWN', secret_access_key: 'not-the-secret' });
    const failure = await wrong.write([event(1)], never).catch((e: unknown) => e);
    expect(failure).toMatchObject({ code: 'auth_failed', retryable: false });
    expect((failure as Error).message).not.toContain('not-the-secret');
  });
});

describe('s3 source', () => {
  it('reads objects in key order and resumes mid-object, by offset or (gzipped) by line, without loss or duplicate', async () => {
    const c = await config({ type: 'line.read' });
    await put(c, 'events/a.jsonl', Array.from({ length: 25 }, (_, i) => JSON.stringify({ n: i })).join('\n') + '\n');
    await put(c, 'events/b.jsonl.gz', gzipSync(Array.from({ length: 25 }, (_, i) => JSON.stringify({ n: 25 + i })).join('\n') + '\n'));
    // No newline after the last line: the object is complete all the same.
    await put(c, 'events/c.jsonl', Array.from({ length: 5 }, (_, i) => JSON.stringify({ n: 50 + i })).join('\n'));
    await put(c, 'events/folder/', '');
    const first = await openSource(c);
    const head = await first.read(null, 10, never);
    expect(head.records.map((r) => r.payload.n)).toEqual([...Array(10).keys()]);
    expect(head.checkpoint).toMatchObject({ key: 'events/a.jsonl', line: 10, done: false });
    // A restart: a new source from the checkpoint.
    const second = await openSource(c);
    const rest = await drain(second, head.checkpoint, 7);
    expect(rest.records.map((r) => r.payload.n)).toEqual([...Array(55).keys()].slice(10));
    expect(rest.records[0]).toMatchObject({ position: 'events/a.jsonl:11', type: 'line.read' });
    // Each record's position is the same on a re-read: ids derived from it do not change.
    const again = await drain(await openSource(c), null, 100);
    expect(again.records.map((r) => r.position)).toEqual([...head.records, ...rest.records].map((r) => r.position));
    // Caught up; a new object later is read from there.
    await put(c, 'events/d.jsonl', '{"n":55}\n');
    expect((await second.read(rest.checkpoint, 10, never)).records.map((r) => r.payload.n)).toEqual([55]);
  });

  it('a batch that ends exactly at an object\'s end goes on with the next object', async () => {
    const c = await config({ type: 't' });
    await put(c, 'events/1.jsonl', '{"n":0}\n{"n":1}\n');
    await put(c, 'events/2.jsonl', '{"n":2}\n');
    const source = await openSource(c);
    const one = await source.read(null, 2, never);
    // Its size says the object is read to its end.
    expect(one.checkpoint).toMatchObject({ key: 'events/1.jsonl', line: 2, done: true });
    // A checkpoint from before that knowledge (or a store without a length) still goes on.
    const stale = await source.read({ key: 'events/1.jsonl', line: 2, offset: 16, done: false }, 2, never);
    expect(stale.records.map((r) => r.payload.n)).toEqual([2]);
    const two = await source.read(one.checkpoint, 2, never);
    expect(two.records.map((r) => r.payload.n)).toEqual([2]);
  });

  it('takes Ferry-shaped lines as events, wraps anything else, and reads JSON arrays', async () => {
    const c = await config({ type: 'fallback.type' });
    await put(
      c,
      'events/1.jsonl',
      [
        '{"id":"evt_x","type":"order.paid","occurred_at":"2026-01-02T03:04:05.000Z","payload":{"amount":5}}',
        '{"customer":"ada","type":"ignored? no: a plain object keeps its fields"}',
        '',
        '[1,2]',
        'not json at all',
      ].join('\r\n'),
    );
    await put(c, 'events/2.json', JSON.stringify([{ payload: { k: 1 }, type: 'from.array' }, { k: 2 }]));
    const { records } = await drain(await openSource(c), null, 100);
    expect(records.map((r) => ({ type: r.type, payload: r.payload }))).toEqual([
      { type: 'order.paid', payload: { amount: 5 } },
      { type: 'fallback.type', payload: { customer: 'ada', type: 'ignored? no: a plain object keeps its fields' } },
      { type: 'fallback.type', payload: { value: [1, 2] } },
      { type: 'fallback.type', payload: { raw: 'not json at all' } },
      { type: 'from.array', payload: { k: 1 } },
      { type: 'fallback.type', payload: { k: 2 } },
    ]);
    expect(records[0]!.occurredAt).toBe('2026-01-02T03:04:05.000Z');
    // Lines without a time of their own take the object's last-modified time: the same on a re-read.
    expect(typeof records[1]!.occurredAt).toBe('string');
    expect(records.map((r) => r.position)).toEqual(['events/1.jsonl:1', 'events/1.jsonl:2', 'events/1.jsonl:4', 'events/1.jsonl:5', 'events/2.json:1', 'events/2.json:2']);
  });

  it('reads numbers a double cannot hold as strings of their exact digits, in lines and arrays', async () => {
    const c = await config({ type: 't' });
    await put(c, 'exact/1.jsonl', '{"a":12345678901234567890,"c":1e400,"n":1.5}\n');
    await put(c, 'exact/2.json', '[{"d":0.12345678901234567890}]');
    const { records } = await drain(await openSource({ ...c, prefix: 'exact/' }), null, 10);
    expect(records.map((r) => r.payload)).toEqual([{ a: '12345678901234567890', c: '1e400', n: 1.5 }, { d: '0.12345678901234567890' }]);
  });

  it('fetches the next object ahead, and a read still lists first: an object added, rewritten or a checkpoint gone back is read right', async () => {
    const c = await config({ type: 't' });
    const lines = (from: number) => [0, 1, 2].map((i) => JSON.stringify({ n: from + i })).join('\n') + '\n';
    for (const [key, from] of [['a', 0], ['b', 10], ['c', 20], ['d', 30]] as const) await put(c, `events/${key}.jsonl`, lines(from));
    // The plugin's own client, noting each object it gets.
    const gets: string[] = [];
    const answered: string[] = [];
    const client = await createClient(c, { maxSockets: 4, requestTimeoutMs: 10_000, now: () => 0, outbound: createConnectorOutbound({ allow: ['127.0.0.1'] }) });
    client.middlewareStack.add((next, context) => async (args) => {
      const key = String((args.input as { Key?: string }).Key);
      if (context.commandName === 'GetObjectCommand') gets.push(key);
      const output = await next(args);
      if (context.commandName === 'GetObjectCommand') answered.push(key);
      return output;
    }, { step: 'initialize' });
    /** Until the object fetched ahead has come (its body, a few bytes, right after the answer). */
    const fetchedAhead = async (key: string) => {
      for (let i = 0; i < 200 && !answered.includes(key); i++) await new Promise((resolve) => setTimeout(resolve, 10));
      await new Promise((resolve) => setTimeout(resolve, 100));
    };
    const source = s3Source(client, c);
    opened.push(source);
    const ns = (batch: { records: SourceRecord[] }) => batch.records.map((r) => r.payload.n);

    // Each object is got once: b, c and d ahead, while the batch before them is handled.
    const all = await drain(source, null, 3);
    expect(all.records.map((r) => r.payload.n)).toEqual([0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32]);
    expect(gets).toEqual(['events/a.jsonl', 'events/b.jsonl', 'events/c.jsonl', 'events/d.jsonl']);

    // b is fetched ahead after a read of a; an object written meanwhile between them comes first.
    const one = await source.read(null, 3, never);
    expect(ns(one)).toEqual([0, 1, 2]);
    await fetchedAhead('events/b.jsonl');
    await put(c, 'events/a2.jsonl', lines(5));
    const two = await source.read(one.checkpoint, 3, never);
    expect(ns(two)).toEqual([5, 6, 7]);
    // c is fetched ahead after b; c rewritten meanwhile (which the source's rules forbid: objects do not change once written) is read as it is now.
    answered.length = 0;
    const three = await source.read(two.checkpoint, 3, never);
    expect(ns(three)).toEqual([10, 11, 12]);
    await fetchedAhead('events/c.jsonl');
    await put(c, 'events/c.jsonl', lines(40));
    const four = await source.read(three.checkpoint, 3, never);
    expect(ns(four)).toEqual([40, 41, 42]);
    // A retry from an earlier checkpoint: what was fetched ahead (d) is not what it reads first.
    expect(ns(await source.read(two.checkpoint, 3, never))).toEqual([10, 11, 12]);
    // A restart from the checkpoint, on a new source: d, once, then nothing.
    const rest = await drain(await openSource(c), four.checkpoint, 3);
    expect(rest.records.map((r) => r.payload.n)).toEqual([30, 31, 32]);
    expect(rest.records.map((r) => r.position)).toEqual(['events/d.jsonl:1', 'events/d.jsonl:2', 'events/d.jsonl:3']);
  });

  it('one read goes through more objects than one listing page holds', async () => {
    const c = await config({ type: 't' });
    for (let i = 0; i < 45; i++) await put(c, `events/${String(i).padStart(3, '0')}.jsonl`, `{"n":${i}}\n`);
    const batch = await (await openSource(c)).read(null, 100, never);
    expect(batch.records.map((r) => r.payload.n)).toEqual([...Array(45).keys()]);
    expect(batch.checkpoint).toMatchObject({ key: 'events/044.jsonl', done: true });
  });

  it('a .json object that is not JSON is one raw record, and the source goes on', async () => {
    const c = await config({ type: 't' });
    await put(c, 'events/1.json', '[{"k": 1}, oops');
    await put(c, 'events/2.jsonl', '{"k":2}\n');
    const { records } = await drain(await openSource(c), null, 10);
    expect(records.map((r) => r.payload)).toEqual([{ raw: '[{"k": 1}, oops' }, { k: 2 }]);
  });

  it('refuses a checkpoint that is not its own', async () => {
    const source = await openSource(await config());
    await expect(source.read({ offset: 3 } as unknown as Checkpoint, 10, never)).rejects.toMatchObject({ code: 'invalid_checkpoint', retryable: false });
  });
});

describe('s3 check and rotate', () => {
  it('checks each side: the bucket listed (source) or found (destination); a missing bucket or a wrong key is down', async () => {
    const c = await config();
    expect((await plugin.check!(connectorContext(c, { direction: 'source', ...allowLoopback }))).health).toBe('healthy');
    expect((await plugin.check!(connectorContext(c, allowLoopback))).health).toBe('healthy');
    expect(await plugin.check!(connectorContext({ ...c, bucket: 'no-such-bucket' }, { direction: 'source', ...allowLoopback }))).toMatchObject({ health: 'down', error: { code: 'bucket_not_found' } });
    const wrong = await plugin.check!(connectorContext({ ...c, access_key_id: 'AKIDNOTKNOWN' }, { direction: 'source', ...allowLoopback }));
    expect(wrong).toMatchObject({ health: 'down', error: { code: 'auth_failed' } });
  });

  it('rotates only to supplied keys that work', async () => {
    const c = await config();
    await expect(plugin.rotate!(connectorContext(c, allowLoopback), {})).rejects.toMatchObject({ code: 'credentials_required', retryable: false });
    await expect(plugin.rotate!(connectorContext(c, allowLoopback), { config: { access_key_id: 'AKIDNOTKNOWN', secret_access_key: 'wrong-secret' } })).rejects.toMatchObject({ code: 'auth_failed' });
    const fields = await plugin.rotate!(connectorContext(c, allowLoopback), { config: { access_key_id: c.access_key_id!, secret_access_key: c.secret_access_key! } });
    expect(fields).toEqual({ access_key_id: c.access_key_id, secret_access_key: c.secret_access_key });
  });
});

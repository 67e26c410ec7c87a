/**
 * Data moves exactly: one Postgres row holding what a double, a Date or a careless encoder would
 * change (int8 at its maximum, a long numeric, json numbers beyond a double and out of its range,
 * bytea, a microsecond timestamp, emoji, U+2028, a combining mark) flows from the postgres
 * source into every destination: postgres, s3, kafka, snowflake and webhook. What each one holds
 * is read back with an exact JSON parser and must equal the payload the source made, as must
 * the events listing.
 */
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, generateSecretKey, parseExactJson, sqliteStorage, type Engine, type JsonObject, type JsonValue } from '@ferry/core';
import { kafka } from '@ferry/kafka';
import { postgres } from '@ferry/postgres';
import { s3 } from '@ferry/s3';
import { snowflake } from '@ferry/snowflake';
import { webhook } from '@ferry/webhook';
import { eventually, startWebhookReceiver, VirtualClock, type WebhookReceiver } from '@ferry/testing';
import { getSharedTestPostgres, startKafkaMock, startTestS3, startTestSnowflake, type KafkaMock, type TestS3Server, type TestSnowflake } from '@ferry/test-servers';

const WS = 'default';
const BYTES = Buffer.from([0, 1, 2, 0x5c, 0x78, 9, 10, 13, 0x22, 255]);
const TEXT = 'emoji 👍 line\u2028separator paragraph\u2029 e\u0301 "quoted" \\ back';

/** The payload the postgres source makes of the row: every value as docs/concepts.md (Data moves exactly) says it travels. */
const EXPECTED: JsonObject = {
  id: 1,
  big: '9223372036854775807',
  dec: '12345678901234567890.12345678901234567890',
  doc: { a: '12345678901234567890', c: '1e400', d: '0.1000000000000000055511151231257827', f: 1.5, s: TEXT },
  raw: BYTES.toString('base64'),
  at: '2026-01-01T00:00:00.123456Z',
  txt: TEXT,
};

let source: pg.Pool;
let sourceUrl: string;
let sinkUrl: string;
let sink: pg.Pool;
let cluster: KafkaMock;
let store: TestS3Server;
let s3client: S3Client;
let sf: TestSnowflake;
let receiver: WebhookReceiver;
let engine: Engine;
let clock: VirtualClock;

beforeAll(async () => {
  const server = await getSharedTestPostgres();
  [sourceUrl, sinkUrl] = await Promise.all([server.createDatabase('fidelity_source'), server.createDatabase('fidelity_sink')]);
  source = new pg.Pool({ connectionString: sourceUrl, max: 2 });
  sink = new pg.Pool({ connectionString: sinkUrl, max: 2 });
  await source.query(`CREATE TABLE fidelity (id int PRIMARY KEY, big int8, dec numeric, doc json, raw bytea, at timestamptz, txt text)`);
  await source.query(
    `INSERT INTO fidelity VALUES (1, 9223372036854775807, 12345678901234567890.12345678901234567890,
       $1::json, $2, '2026-01-01 00:00:00.123456+00', $3)`,
    [`{"a": 12345678901234567890, "c": 1e400, "d": 0.1000000000000000055511151231257827, "f": 1.5, "s": ${JSON.stringify(TEXT)}}`, BYTES, TEXT],
  );
  [cluster, store, sf] = await Promise.all([startKafkaMock({ topics: { fidelity: 1 } }), startTestS3(), startTestSnowflake({ database: 'fidelity_snowflake' })]);
  s3client = new S3Client(store.clientConfig);
  await s3client.send(new CreateBucketCommand({ Bucket: 'fidelity' }));
  clock = new VirtualClock(undefined, { settleRealMs: 1 });
  receiver = await startWebhookReceiver({ clock });
  engine = await createEngine({
    storage: sqliteStorage({ filename: join(mkdtempSync(join(tmpdir(), 'ferry-fidelity-')), 'ferry.db') }),
    clock,
    secretKey: generateSecretKey(),
    plugins: [postgres(), s3(), kafka(), snowflake(), webhook()],
    outboundAllow: ['127.0.0.1'],
    webhookDelivery: false,
  });
  await engine.start();
}, 120_000);

afterAll(async () => {
  await engine?.stop();
  s3client?.destroy();
  await Promise.all([cluster?.stop(), store?.stop(), sf?.stop(), receiver?.close(), source?.end(), sink?.end()]);
});

/** A pipeline from the source table into a new destination connector of `type`; returns its id. */
async function pipe(type: string, config: JsonObject): Promise<string> {
  const from = await engine.connectors.create(WS, { type: 'postgres', direction: 'source', config: { connection_string: sourceUrl, table: 'fidelity', cursor_column: 'id', type: 'row.exact' } });
  const to = await engine.connectors.create(WS, { type, direction: 'destination', config });
  return (await engine.pipelines.create(WS, { name: `to-${type}`, source_connector_id: from.id, destination_connector_id: to.id, activate: true, batch_size: 10, flush_interval_ms: 1000 })).id;
}

/** Waits for `read` to find the payload (real I/O behind small steps of virtual time). */
async function landed(read: () => Promise<JsonValue | undefined>): Promise<JsonValue> {
  let found: JsonValue | undefined;
  await eventually(clock, async () => (found = await read().catch(() => undefined)) !== undefined, 100, 3000, 20);
  return found!;
}

describe('every destination holds the values exactly as they left Postgres', () => {
  it('postgres (a jsonb payload column)', async () => {
    const id = await pipe('postgres', { connection_string: sinkUrl, table: 'landed', create_table: true });
    const payload = await landed(async () => {
      const { rows } = await sink.query<{ payload: string }>('SELECT payload::text AS payload FROM landed');
      return rows[0] ? parseExactJson(rows[0].payload) : undefined;
    });
    expect(payload).toEqual(EXPECTED);
    // And the events listing, once the batch is committed (after the destination took it).
    const listed = await landed(async () => (await engine.events.list(WS, id, { limit: 10 })).data[0]?.payload);
    expect(listed).toEqual(EXPECTED);
  });

  it('s3 (a JSON Lines object)', async () => {
    await pipe('s3', { bucket: 'fidelity', endpoint: store.endpoint, force_path_style: true, access_key_id: store.accessKeyId, secret_access_key: store.secretAccessKey, checksums: 'when_required' });
    const payload = await landed(async () => {
      const page = await s3client.send(new ListObjectsV2Command({ Bucket: 'fidelity' }));
      const key = page.Contents?.[0]?.Key;
      if (!key) return undefined;
      const text = await (await s3client.send(new GetObjectCommand({ Bucket: 'fidelity', Key: key }))).Body!.transformToString();
      return (parseExactJson(text.split('\n')[0]!) as JsonObject).payload;
    });
    expect(payload).toEqual(EXPECTED);
  });

  it('kafka (a message value)', async () => {
    await pipe('kafka', { brokers: cluster.brokers, topic: 'fidelity' });
    const client = new Kafka({ brokers: cluster.brokers, clientId: 'fidelity', logLevel: logLevel.NOTHING });
    const admin = client.admin();
    await admin.connect();
    try {
      await landed(async () => ((await admin.fetchTopicOffsets('fidelity')).some((p) => Number(p.high) > 0) ? true : undefined));
    } finally {
      await admin.disconnect();
    }
    const consumer = client.consumer({ groupId: 'fidelity-reader', sessionTimeout: 6000, heartbeatInterval: 500, maxWaitTimeInMs: 100 });
    await consumer.connect();
    try {
      await consumer.subscribe({ topics: ['fidelity'], fromBeginning: true });
      const value = await new Promise<string>((resolve) => {
        void consumer.run({ eachMessage: async ({ message }) => resolve(message.value!.toString('utf8')) });
      });
      expect((parseExactJson(value) as JsonObject).payload).toEqual(EXPECTED);
    } finally {
      await consumer.disconnect();
    }
  });

  it('snowflake (a VARIANT column)', async () => {
    await pipe('snowflake', { account: sf.account, username: sf.username, password: sf.password, access_url: sf.url, warehouse: 'FERRY_WH', database: 'FERRY', schema: 'PUBLIC', table: 'fidelity_out', create_table: true });
    const payload = await landed(async () => {
      const rows = await sf.query<{ payload: string }>('SELECT payload::text AS payload FROM fidelity_out');
      return rows[0] ? parseExactJson(rows[0].payload) : undefined;
    });
    expect(payload).toEqual(EXPECTED);
  });

  it('webhook (a signed request body)', async () => {
    await pipe('webhook', { url: receiver.url, batch_size: 1 });
    const payload = await landed(async () => {
      const first = receiver.received[0];
      return first ? (parseExactJson(first.body) as JsonObject).payload : undefined;
    });
    expect(payload).toEqual(EXPECTED);
  });
});

/**
 * Two pipelines chained through a Kafka topic, over the /v2 API, on both adapters and both
 * engine storages: a Postgres table streams into a topic, and the topic streams into S3 objects.
 * Rows inserted while both run arrive too; at the end every row is in S3 exactly once, with the
 * type and payload it left Postgres with (the chain does not nest events in events).
 */
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { kafka } from '@ferry/kafka';
import { postgres } from '@ferry/postgres';
import { s3 } from '@ferry/s3';
import { eventually } from '@ferry/testing';
import { startKafkaMock, startTestS3, type KafkaMock, type TestS3Server } from '@ferry/test-servers';
import { describeMatrix } from '../http/harness.js';
import { createConnector, createPipeline, ordersDatabase } from './orders.js';

let cluster: KafkaMock;
let store: TestS3Server;
let client: S3Client;
beforeAll(async () => {
  [cluster, store] = await Promise.all([startKafkaMock(), startTestS3()]);
  client = new S3Client(store.clientConfig);
});
afterAll(async () => {
  client?.destroy();
  await Promise.all([cluster?.stop(), store?.stop()]);
});

/** All JSON lines under a bucket. */
async function linesIn(bucket: string): Promise<Array<{ id: string; type: string; payload: Record<string, unknown> }>> {
  const out: Array<{ id: string; type: string; payload: Record<string, unknown> }> = [];
  let token: string | undefined;
  do {
    const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }));
    for (const object of page.Contents ?? []) {
      const text = await (await client.send(new GetObjectCommand({ Bucket: bucket, Key: object.Key! }))).Body!.transformToString();
      for (const line of text.split('\n')) if (line.trim() !== '') out.push(JSON.parse(line));
    }
    token = page.NextContinuationToken;
  } while (token);
  return out;
}

let cells = 0;

describeMatrix(
  'postgres to kafka to s3 over the API',
  (ctx) => {
    it('moves every row through the topic into S3, once', async () => {
      const cell = cells++;
      const { url, db, insert } = await ordersDatabase('e2e_kafka');
      const topic = `orders-${cell}`;
      const bucket = `chain-${cell}`;
      await client.send(new CreateBucketCommand({ Bucket: bucket }));
      try {
        await insert(1, 40);

        const connector = (type: string, direction: string, config: object) => createConnector(ctx.api, type, direction, config);
        const pipeline = (name: string, source: string, destination: string) =>
          createPipeline(ctx.api, { name: `${name}-${ctx.adapter}-${ctx.storage}`, source_connector_id: source, destination_connector_id: destination, batch_size: 25, flush_interval_ms: 1000 });
        const table = await connector('postgres', 'source', { connection_string: url, table: 'orders', cursor_column: 'id', type: 'order.created', batch_size: 25 });
        const toTopic = await connector('kafka', 'destination', { brokers: cluster.brokers, topic });
        const fromTopic = await connector('kafka', 'source', { brokers: cluster.brokers, topics: [topic], from_beginning: true });
        const objects = await connector('s3', 'destination', {
          bucket,
          prefix: 'orders/',
          endpoint: store.endpoint,
          force_path_style: true,
          access_key_id: store.accessKeyId,
          secret_access_key: store.secretAccessKey,
          checksums: 'when_required',
        });
        await pipeline('orders-to-kafka', table, toTopic);
        const second = await pipeline('kafka-to-s3', fromTopic, objects);

        // The consumer group's join takes the mock about 3 s of real time: small clock steps, real waits.
        const arrived = async (n: number) => (await linesIn(bucket)).length >= n;
        await eventually(ctx.clock, () => arrived(40), 100, 3000, 20);
        await insert(41, 30);
        await eventually(ctx.clock, () => arrived(70), 100, 3000, 20);

        const lines = await linesIn(bucket);
        const orderIds = lines.map((l) => Number(l.payload.id));
        expect(new Set(orderIds).size).toBe(70);
        expect(lines).toHaveLength(70);
        expect(orderIds.sort((a, b) => a - b)).toEqual(Array.from({ length: 70 }, (_, i) => i + 1));
        expect(lines.every((l) => l.type === 'order.created')).toBe(true);
        expect(lines.find((l) => l.payload.id === '7')!.payload).toMatchObject({ amount: 7, email: 'user7@example.com' });
        expect(new Set(lines.map((l) => l.id)).size).toBe(70);

        // A batch is written before it is recorded in the event log: the last lines can be in S3
        // a moment before their events are listed.
        const logged = async () => {
          const events = await ctx.api.request('GET', `/v2/pipelines/${second}/events?limit=100`);
          expect(events.status, events.text).toBe(200);
          return (events.body as { data: unknown[] }).data.length;
        };
        await eventually(ctx.clock, async () => (await logged()) === 70, 100, 3000, 20);
        expect(await logged()).toBe(70);
      } finally {
        await db.end();
      }
    }, 180_000);
  },
  // The test servers listen on loopback, which the outbound policy refuses unless allowed.
  { plugins: [postgres(), kafka({ consumer: { sessionTimeoutMs: 6000, heartbeatIntervalMs: 500, maxWaitTimeMs: 100 } }), s3()], outboundAllow: ['127.0.0.1'] },
);

import { gunzipSync } from 'node:zlib';
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import type { JsonObject } from '@ferry/core';
import { startTestS3, type TestS3Server } from '@ferry/test-servers';

/** The test server and a plain SDK client of it, to set up and read back what the plugin did. */
export interface TestStore {
  readonly server: TestS3Server;
  readonly client: S3Client;
  stop(): Promise<void>;
}

let buckets = 0;

/** Starts s3rver and an SDK client of it. */
export async function startStore(): Promise<TestStore> {
  const server = await startTestS3();
  const client = new S3Client(server.clientConfig);
  return {
    server,
    client,
    stop: async () => {
      client.destroy();
      await server.stop();
    },
  };
}

/** A connector config on a new, empty bucket of the test server, under `events/`. */
export async function freshConfig(store: TestStore, extra: JsonObject = {}): Promise<JsonObject> {
  const bucket = `bucket-${process.pid}-${buckets++}`;
  await store.client.send(new CreateBucketCommand({ Bucket: bucket }));
  return {
    bucket,
    prefix: 'events/',
    endpoint: store.server.endpoint,
    force_path_style: true,
    access_key_id: store.server.accessKeyId,
    secret_access_key: store.server.secretAccessKey,
    checksums: 'when_required',
    ...extra,
  };
}

/** The keys under the config's prefix, in order. */
export async function keysUnder(store: TestStore, config: JsonObject): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await store.client.send(new ListObjectsV2Command({ Bucket: String(config.bucket), Prefix: String(config.prefix ?? ''), ContinuationToken: token }));
    keys.push(...(page.Contents ?? []).map((o) => o.Key!));
    token = page.NextContinuationToken;
  } while (token);
  return keys;
}

/** An object's bytes, gunzipped when its key ends with `.gz`. */
export async function objectText(store: TestStore, bucket: string, key: string): Promise<string> {
  const body = Buffer.from(await (await store.client.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body!.transformToByteArray());
  return (key.endsWith('.gz') ? gunzipSync(body) : body).toString('utf8');
}

/** Every line (or array element) of every object under the config's prefix, in key order. */
export async function linesUnder(store: TestStore, config: JsonObject): Promise<JsonObject[]> {
  const out: JsonObject[] = [];
  for (const key of await keysUnder(store, config)) {
    const text = await objectText(store, String(config.bucket), key);
    if (key.replace(/\.gz$/, '').endsWith('.json')) out.push(...(JSON.parse(text) as JsonObject[]));
    else for (const line of text.split('\n')) if (line.trim() !== '') out.push(JSON.parse(line) as JsonObject);
  }
  return out;
}

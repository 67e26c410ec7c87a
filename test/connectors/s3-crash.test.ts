/**
 * The s3 destination under SIGKILL: a child engine streams a Postgres table into S3 objects and
 * is killed mid-stream; a successor resumes from the checkpoint. No row may be missing; a row
 * written twice (in an object the first engine wrote and one the second wrote) is counted.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, S3Client, CreateBucketCommand } from '@aws-sdk/client-s3';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, generateSecretKey, sqliteStorage } from '@ferry/core';
import { engineContext } from '@ferry/core/internal';
import { postgres } from '@ferry/postgres';
import { s3 } from '@ferry/s3';
import { getSharedTestPostgres, startTestS3 } from '@ferry/test-servers';
import { startChildEngine, untilReal } from '../support/child-engine.js';

const child = join(import.meta.dirname, 'fixtures', 'pipeline-engine.ts');
const WS = 'default';
const ROWS = 20_000;

describe('s3 destination survives SIGKILL', () => {
  const cleanup: Array<() => unknown> = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it('misses no row after the engine is killed mid-stream; re-written batches overwrite their objects', async () => {
    const dataUrl = await (await getSharedTestPostgres()).createDatabase('s3_crash_data');
    const db = new pg.Pool({ connectionString: dataUrl, max: 2 });
    cleanup.push(() => db.end());
    await db.query(`CREATE TABLE orders (id bigint PRIMARY KEY, amount int NOT NULL)`);
    await db.query(`INSERT INTO orders SELECT g, g % 1000 FROM generate_series(1, ${ROWS}) g`);

    const store = await startTestS3();
    cleanup.push(() => store.stop());
    const client = new S3Client(store.clientConfig);
    cleanup.push(() => client.destroy());
    await client.send(new CreateBucketCommand({ Bucket: 'crash' }));
    const keys = async () => {
      const out: string[] = [];
      let token: string | undefined;
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket: 'crash', ContinuationToken: token }));
        out.push(...(page.Contents ?? []).map((o) => o.Key!));
        token = page.NextContinuationToken;
      } while (token);
      return out;
    };

    // The API side, on the engines' SQLite file: it creates the pipeline and runs nothing.
    const filename = join(mkdtempSync(join(tmpdir(), 'ferry-s3-crash-')), 'ferry.db');
    const secretKey = generateSecretKey();
    const api = await createEngine({ storage: sqliteStorage({ filename }), secretKey, runtime: false, webhookDelivery: false, plugins: [postgres(), s3()], outboundAllow: ['127.0.0.1'] });
    await api.start();
    cleanup.push(() => api.stop());
    const source = await api.connectors.create(WS, { type: 'postgres', direction: 'source', config: { connection_string: dataUrl, table: 'orders', cursor_column: 'id', type: 'order.created' } });
    const destination = await api.connectors.create(WS, {
      type: 's3',
      direction: 'destination',
      config: { bucket: 'crash', prefix: 'orders/', endpoint: store.endpoint, force_path_style: true, access_key_id: store.accessKeyId, secret_access_key: store.secretAccessKey, checksums: 'when_required' },
    });
    const pipeline = await api.pipelines.create(WS, { name: 'orders-to-s3', source_connector_id: source.id, destination_connector_id: destination.id, batch_size: 200, activate: true });

    const first = await startChildEngine(child, [filename, secretKey], { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' });
    cleanup.push(() => first.kill('SIGKILL'));
    await untilReal(async () => (await keys()).length >= 20, 'the first objects', 90_000, 50);
    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));
    const objectsAtKill = (await keys()).length;

    const second = await startChildEngine(child, [filename, secretKey], { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' });
    cleanup.push(() => second.kill('SIGKILL'));
    await untilReal(async () => (await engineContext(api).storage.repos.checkpoints.get(pipeline.id)) === String(ROWS), 'the checkpoint to reach the last row', 90_000, 50);

    const seen = new Map<string, number>();
    for (const key of await keys()) {
      const text = await (await client.send(new GetObjectCommand({ Bucket: 'crash', Key: key }))).Body!.transformToString();
      for (const line of text.split('\n')) {
        if (line.trim() === '') continue;
        const event = JSON.parse(line) as { id: string; payload: { id: string } };
        seen.set(event.payload.id, (seen.get(event.payload.id) ?? 0) + 1);
      }
    }
    const missing = Array.from({ length: ROWS }, (_, i) => String(i + 1)).filter((id) => !seen.has(id));
    const duplicates = [...seen.values()].reduce((n, c) => n + c - 1, 0);
    console.log(JSON.stringify({ connector: 's3', rows: ROWS, objects_at_kill: objectsAtKill, objects: (await keys()).length, missing: missing.length, duplicates }));
    expect(missing).toEqual([]);
    // The successor reads the same batches from the checkpoint and overwrites the same keys.
    expect(duplicates).toBe(0);
  }, 180_000);
});

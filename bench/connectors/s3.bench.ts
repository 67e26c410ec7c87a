/**
 * The s3 plugin as a source and as a destination, against the AWS SDK doing the same work,
 * measured in the same run (the workload and engine: ./harness.ts; the engine's storage is
 * SQLite in /dev/shm; the server runs on loopback).
 *
 * s3 (s3rver, a real S3-protocol server in its own process):
 *  - `s3: destination raw`: events/s of `PutObject` with the SDK of the very objects the plugin
 *    writes (the JSON Lines of each batch), one after another, nothing else.
 *  - `s3: destination`: events/s of a streaming pipeline from a memory source to the s3
 *    destination, timed from the pipeline's creation until its checkpoint holds the last event
 *    (written, and committed with the event log).
 *  - `s3: source raw`: events/s of listing those objects and, with `GetObject`, reading each and
 *    parsing every line as JSON.
 *  - `s3: source`: events/s of a streaming pipeline from the s3 source (the same objects) to a
 *    memory sink, until the sink holds every event and the checkpoint is at the last object.
 * Each engine case's ratio is against the raw case just before it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { s3 } from '@ferry/s3';
import { MemoryHub } from '@ferry/testing';
import { startTestS3, type TestS3Server } from '@ferry/test-servers';
import { emit } from '../emit.js';
import { BATCH, EVENTS, WS, log, prebuiltRecords, record, startEngine, until } from './harness.js';
import { engineContext } from '@ferry/core/internal';

async function benchS3(dir: string): Promise<void> {
  let server: TestS3Server | undefined;
  try {
    server = await startTestS3();
    const client = new S3Client(server.clientConfig);
    const config = (bucket: string) => ({
      bucket,
      prefix: 'events/',
      endpoint: server!.endpoint,
      force_path_style: true,
      access_key_id: server!.accessKeyId,
      secret_access_key: server!.secretAccessKey,
      checksums: 'when_required',
    });
    for (const bucket of ['raw', 'engine']) await client.send(new CreateBucketCommand({ Bucket: bucket }));

    // Destination, raw: the objects a pipeline writes, put one after another.
    const occurredAt = new Date(Date.UTC(2026, 0, 1)).toISOString();
    const objects: { key: string; body: string }[] = [];
    for (let start = 0; start < EVENTS; start += BATCH) {
      const lines: string[] = [];
      for (let i = start; i < Math.min(EVENTS, start + BATCH); i++) lines.push(JSON.stringify({ id: `evt_${String(i).padStart(26, '0')}`, type: 'bench.event', occurred_at: occurredAt, payload: record(i) }));
      objects.push({ key: `events/2026/01/01/pip_raw-${start}.jsonl`, body: `${lines.join('\n')}\n` });
    }
    let started = performance.now();
    for (const object of objects) await client.send(new PutObjectCommand({ Bucket: 'raw', Key: object.key, Body: object.body, ContentType: 'application/x-ndjson' }));
    const rawWrite = EVENTS / ((performance.now() - started) / 1000);
    emit('connectors', 's3: destination raw', rawWrite, 'events/s');

    // Destination, engine.
    const hub = new MemoryHub();
    const records = prebuiltRecords(EVENTS);
    hub.stream('in').generate(EVENTS, (i) => records[i]!);
    const engine = await startEngine(hub, dir, [s3()]);
    try {
      const source = await engine.connectors.create(WS, { type: 'memory', direction: 'source', config: { name: 'in' } });
      const destination = await engine.connectors.create(WS, { type: 's3', direction: 'destination', config: config('engine') });
      started = performance.now();
      const pipeline = await engine.pipelines.create(WS, { name: 'to-s3', source_connector_id: source.id, destination_connector_id: destination.id, batch_size: BATCH, activate: true });
      await until(async () => (await engineContext(engine).storage.repos.checkpoints.get(pipeline.id)) === EVENTS, 'the s3 destination to take every event');
      emit('connectors', 's3: destination', EVENTS / ((performance.now() - started) / 1000), 'events/s', rawWrite);
      await engine.pipelines.pause(WS, pipeline.id);
    } finally {
      await engine.stop();
    }

    // Source, raw: list the objects the engine wrote, read each, parse each line.
    started = performance.now();
    let parsed = 0;
    let token: string | undefined;
    do {
      const page = await client.send(new ListObjectsV2Command({ Bucket: 'engine', Prefix: 'events/', ContinuationToken: token }));
      for (const object of page.Contents ?? []) {
        const text = await (await client.send(new GetObjectCommand({ Bucket: 'engine', Key: object.Key! }))).Body!.transformToString();
        for (const line of text.split('\n')) if (line !== '') parsed += JSON.parse(line) ? 1 : 0;
      }
      token = page.NextContinuationToken;
    } while (token);
    if (parsed !== EVENTS) throw new Error(`the raw read found ${parsed} events, expected ${EVENTS}`);
    const rawRead = EVENTS / ((performance.now() - started) / 1000);
    emit('connectors', 's3: source raw', rawRead, 'events/s');

    // Source, engine: the same objects into a memory sink.
    const readHub = new MemoryHub();
    const sink = readHub.sink('out', { keep: false });
    const reader = await startEngine(readHub, dir, [s3()]);
    try {
      const source = await reader.connectors.create(WS, { type: 's3', direction: 'source', config: config('engine') });
      const destination = await reader.connectors.create(WS, { type: 'memory', direction: 'destination', config: { name: 'out' } });
      started = performance.now();
      const pipeline = await reader.pipelines.create(WS, { name: 'from-s3', source_connector_id: source.id, destination_connector_id: destination.id, batch_size: BATCH, activate: true });
      await until(async () => sink.accepted >= EVENTS && ((await engineContext(reader).storage.repos.checkpoints.get(pipeline.id)) as { done?: boolean } | null)?.done === true, 'the s3 source to read every event');
      emit('connectors', 's3: source', EVENTS / ((performance.now() - started) / 1000), 'events/s', rawRead);
      if (sink.accepted !== EVENTS) log(`s3 source: the sink took ${sink.accepted} events for ${EVENTS}`);
      await reader.pipelines.pause(WS, pipeline.id);
    } finally {
      await reader.stop();
    }
    client.destroy();
  } finally {
    await server?.stop();
  }
}

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const dir = mkdtempSync('/dev/shm/ferry-bench-connectors-');
try {
  log(`${EVENTS} events, batches of ${BATCH}`);
  await benchS3(dir);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

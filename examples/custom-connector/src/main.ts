/**
 * The `jsonl_file` connector in an engine: orders appended to one JSON Lines file stream through
 * a `mask` step into another, signed; the signing key is rotated while the pipeline runs, and
 * what arrives after the rotation is signed with the new key. Run it with
 * `npm run example --workspace @ferry/example-custom-connector`.
 */
import { appendFile, mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createEngine, sqliteStorage } from '@ferry/core';
import { jsonlFile } from './index.js';

/** Appends orders `from .. from + count - 1` to the input file, as another program would. */
async function appendOrders(path: string, from: number, count: number): Promise<void> {
  const lines = Array.from({ length: count }, (_, i) => JSON.stringify({ type: 'order.created', payload: { order_id: from + i, email: `buyer${from + i}@example.com` } }));
  await appendFile(path, `${lines.join('\n')}\n`);
}

/** The output file's lines, once there are `count` of them (it polls: this runs on real time). */
async function waitForLines(path: string, count: number): Promise<string[]> {
  let lines: string[] = [];
  // 200 looks 50 ms apart: about 10 s.
  for (let attempt = 0; attempt < 200; attempt++) {
    lines = (await readFile(path, 'utf8').catch(() => '')).split('\n').filter((l) => l !== '');
    if (lines.length >= count) return lines;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${lines.length} of ${count} lines arrived in about 10 s`);
}

/** Runs the example in a temporary directory, printing what happens. */
export async function main(log: (line: string) => void = console.log): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'ferry-custom-connector-'));
  const input = join(dir, 'orders.jsonl');
  const output = join(dir, 'masked.jsonl');
  await appendOrders(input, 1, 3);

  // In-memory SQLite: the engine generates a throwaway secret key for the connector secrets.
  const engine = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }), plugins: [jsonlFile()], runtime: { pollIntervalMs: 100 } });
  await engine.start();
  try {
    const source = await engine.connectors.create('default', { type: 'jsonl_file', direction: 'source', config: { path: input } });
    const destination = await engine.connectors.create('default', {
      type: 'jsonl_file',
      direction: 'destination',
      config: { path: output, signing_key: 'an-example-key-of-at-least-32-characters' },
    });
    log(`destination config as the API shows it: ${JSON.stringify(destination.config)}`);
    log(`check: ${JSON.stringify(await engine.connectors.check('default', destination.id))}`);
    await engine.pipelines.create('default', {
      name: 'masked-orders',
      source_connector_id: source.id,
      destination_connector_id: destination.id,
      transforms: [{ type: 'mask', path: 'email' }],
      activate: true,
      flush_interval_ms: 100,
    });
    for (const line of await waitForLines(output, 3)) log(line);

    // The plugin's `rotate` generates a new key; the pipeline is paused, checked and resumed.
    const { rotation } = await engine.connectors.rotate('default', destination.id);
    log(`rotation ${rotation.status}; paused and resumed: ${rotation.paused_pipeline_ids.join(', ')}`);
    await appendOrders(input, 4, 2);
    for (const line of (await waitForLines(output, 5)).slice(3)) log(line);
    log(`files in ${dir}`);
  } finally {
    await engine.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}

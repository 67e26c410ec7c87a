import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { sqliteStorage } from '@ferry/core';
import { openStorage } from '@ferry/core/internal';

const worker = join(import.meta.dirname, 'fixtures', 'claim-worker.ts');

function run(filename: string, holder: string): Promise<{ holder: string; done: string[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=ferry-source', worker, filename, holder], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1)!)) : reject(new Error(`worker ${holder} exited ${code}: ${err}`))));
  });
}

it('several processes share one SQLite file: every queued row is completed exactly once, no lock errors', async () => {
  const filename = join(mkdtempSync(join(tmpdir(), 'ferry-procs-')), 'shared.db');
  const storage = await openStorage(sqliteStorage({ filename }));
  const at = '2026-01-01T00:00:00.000Z';
  const ids = Array.from({ length: 120 }, (_, i) => `dlv_${String(i).padStart(4, '0')}`);
  await storage.repos.deliveries.insertMany(
    ids.map((id) => ({
      id, workspace_id: 'ws', subscription_id: 'whk_1', event_id: `evt_${id}`, event_type: 'pipeline.failed' as const, body: '{}',
      status: 'pending' as const, attempts: 0, next_attempt_at: at, cycle_started_at: at, last_attempt_at: null,
      last_response_status: null, last_error: null, created_at: at, updated_at: at,
    })),
  );
  const results = await Promise.all(['a', 'b', 'c'].map((holder) => run(filename, holder)));
  const completed = results.flatMap((r) => r.done).sort();
  expect(completed).toEqual(ids);
  const attempts = await storage.knex('delivery_attempts').count({ n: '*' });
  expect(Number(attempts[0]!.n)).toBe(ids.length);
  expect(await storage.knex('deliveries').whereNot({ status: 'delivered' }).count({ n: '*' })).toEqual([{ n: 0 }]);
  await storage.close();
}, 120_000);

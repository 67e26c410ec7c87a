import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { openStorage } from '../ferry-storage.js';
import { sqliteStorage } from '../storage-config.js';
import { pipelineMinuteStep, type PipelineMinuteRow } from './pipeline-minutes-repo.js';

// The storage conformance suite (@ferry/testing) covers the repository on every dialect; this is
// the other spelling of its upsert, the step a batch commits with on the SQLite writer thread.

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const row = (minute: string, read: number, dead = 0): PipelineMinuteRow => ({
  pipeline_id: 'pip_1',
  workspace_id: 'ws_a',
  minute,
  events_read: read,
  events_written: read - dead,
  events_filtered: 0,
  events_dead_lettered: dead,
});

it('adds to the minute on the writer thread as on the engine connection, into the same row', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-minutes-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const storage = await openStorage(sqliteStorage({ filename: join(dir, 'ferry.db') }));
  cleanups.push(() => storage.close());
  const first = '2026-11-26T19:04:00.000Z';
  const second = '2026-11-26T19:05:00.000Z';

  expect(await storage.writer!.transaction([pipelineMinuteStep(row(first, 10))])).toEqual({ committed: true, changes: [1] });
  await storage.repos.pipelineMinutes.add(row(first, 5, 2));
  await storage.writer!.transaction([pipelineMinuteStep(row(first, 1)), pipelineMinuteStep(row(second, 3))]);

  expect(await storage.repos.pipelineMinutes.range('ws_a', 'pip_1', first, '2026-11-26T19:06:00.000Z')).toEqual([
    { ...row(first, 16, 2) },
    { ...row(second, 3) },
  ]);
});

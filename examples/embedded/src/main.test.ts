import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { main } from './main.js';

it('runs the embedded example end to end on a SQLite file', async () => {
  const lines: string[] = [];
  const summary = await main(join(mkdtempSync(join(tmpdir(), 'ferry-example-')), 'example.db'), (line) => lines.push(line));
  expect(summary.pipelineState).toBe('active');
  expect(summary.redactedToken).toBe('********');
  expect(summary.events).toEqual(['pipeline.created', 'pipeline.activated']);
  expect(lines.join('\n')).not.toContain('source-token-123');
  expect(lines.at(-2)).toBe('1 pipeline(s) in workspace "default"');
});

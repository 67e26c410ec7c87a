import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { main } from './main.js';

it('runs a pipeline end to end on a SQLite file: filter, mask, a dead letter fixed and replayed', async () => {
  const lines: string[] = [];
  const summary = await main(join(mkdtempSync(join(tmpdir(), 'ferry-example-')), 'example.db'), (line) => lines.push(line));
  expect(summary.redactedToken).toBe('********');
  // Orders 1 and 4 on the first pass; the one without an id after its replay. Order 2 was filtered.
  expect(summary.delivered.map((p) => p.order_id ?? null)).toEqual([1, 4, null]);
  expect(summary.delivered.every((p) => /^[0-9a-f]{64}$/.test((p.customer as { email: string }).email))).toBe(true);
  expect(summary.deadLettered).toEqual({ stage: 'destination', code: 'missing_order_id' });
  expect(summary.replayedStatus).toBe('delivered');
  expect(summary.events).toEqual(expect.arrayContaining(['pipeline.created', 'pipeline.activated', 'pipeline.started', 'event.dead_lettered', 'pipeline.paused', 'pipeline.completed']));
  expect(lines.join('\n')).not.toContain('source-token-123');
  expect(lines.join('\n')).not.toContain('ada@example.com');
});

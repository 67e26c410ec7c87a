#!/usr/bin/env node
// Runs the benchmarks: `npm run bench` for all, `npm run bench -- <subject>` for bench/<subject>.
// Each benchmark file prints one JSON object per line:
//   { "bench", "case", "value", "unit", "baseline"?, "ratio"? }
import { readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

const root = new URL('..', import.meta.url).pathname;
const benchDir = join(root, 'bench');
const subjects = process.argv.slice(2);
const all = readdirSync(benchDir, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name).sort();
for (const subject of subjects) {
  if (!all.includes(subject)) {
    console.error(`unknown bench subject ${subject}; known: ${all.join(', ')}`);
    process.exit(2);
  }
}
let failed = false;
for (const subject of subjects.length > 0 ? subjects : all) {
  const dir = join(benchDir, subject);
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.bench.ts')).sort()) {
    const path = join(dir, file);
    if (!existsSync(path)) continue;
    const result = spawnSync(process.execPath, ['--import', 'tsx', '--conditions=ferry-source', '--expose-gc', path], { stdio: 'inherit', cwd: root });
    if (result.status !== 0) {
      console.error(`benchmark ${subject}/${file} failed (exit ${result.status ?? result.signal})`);
      failed = true;
    }
  }
}
process.exit(failed ? 1 : 0);

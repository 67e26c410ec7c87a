/**
 * The dependency rules of `.dependency-cruiser.cjs` have teeth: dependency-cruiser run with them
 * over a small tree laid out like core's sources fails on a planted cycle, on an import that
 * climbs the ladder and on one that reaches past a folder's index, and passes the same tree
 * without them.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const CONFIG = join(ROOT, '.dependency-cruiser.cjs');
const CLI = join(ROOT, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs');
const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A tree of `packages/core/src` files (path relative to it, then content), cruised with the rules. */
function cruise(files: Record<string, string>): { status: number | null; output: string } {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-deps-'));
  made.push(dir);
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true }, include: ['packages'] }));
  for (const [rel, text] of Object.entries(files)) {
    const path = join(dir, 'packages/core/src', rel);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
  }
  const run = spawnSync(process.execPath, [CLI, 'packages/core/src', '--config', CONFIG, '--output-type', 'err'], { cwd: dir, encoding: 'utf8' });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

const clean = {
  'common/index.ts': "export const one = 1;\n",
  'storage/index.ts': "import { one } from '../common/index.js';\nexport const two = one + 1;\n",
  'pipelines/index.ts': "import { two } from '../storage/index.js';\nexport const three = two + 1;\n",
  'engine/index.ts': "import { three } from '../pipelines/index.js';\nexport const four = three + 1;\n",
};

describe('dependency rules', () => {
  it('pass a tree whose imports point down the ladder', () => {
    const { status, output } = cruise(clean);
    expect(output).toContain('no dependency violations');
    expect(status).toBe(0);
  });

  it('fail an import that climbs the ladder, even a type-only one', () => {
    const { status, output } = cruise({ ...clean, 'storage/index.ts': "import type { Engine } from '../engine/engine.js';\nexport type E = Engine;\nexport const two = 2;\n", 'engine/engine.ts': 'export interface Engine { id: string }\n' });
    expect(status).not.toBe(0);
    expect(output).toContain('ladder-storage');
  });

  it('fail a cycle inside a folder', () => {
    const { status, output } = cruise({ ...clean, 'common/a.ts': "import { b } from './b.js';\nexport const a = () => b;\n", 'common/b.ts': "import type { a } from './a.js';\nexport const b = 1 as unknown as typeof a;\n" });
    expect(status).not.toBe(0);
    expect(output).toContain('no-circular');
  });

  it("fail an import that reaches past another folder's index.ts, from a folder or from an entry", () => {
    const past = { ...clean, 'storage/rows.ts': 'export const row = 2;\n', 'pipelines/flow.ts': "import { row } from '../storage/rows.js';\nexport const flow = row;\n" };
    const fromFolder = cruise(past);
    expect(fromFolder.status).not.toBe(0);
    expect(fromFolder.output).toContain('core-folder-doors');
    const fromEntry = cruise({ ...clean, 'storage/rows.ts': 'export const row = 2;\n', 'internal.ts': "export { row } from './storage/rows.js';\n" });
    expect(fromEntry.status).not.toBe(0);
    expect(fromEntry.output).toContain('core-entry-doors');
  });

  it('let files of one folder, subfolders included, import each other freely', () => {
    const inside = { ...clean, 'pipelines/steps/step.ts': "import { three } from '../index.js';\nexport const step = () => three;\n", 'pipelines/flow.ts': "import { step } from './steps/step.js';\nexport const flow = step;\n", 'index.ts': "export { three } from './pipelines/index.js';\n" };
    const { status, output } = cruise(inside);
    expect(output).toContain('no dependency violations');
    expect(status).toBe(0);
  });
});

/**
 * The extractor behind the docs' code-block test: which blocks it finds, and the markers it reads
 * or refuses (a misspelt marker must fail, not switch a check off).
 */
import { describe, expect, it } from 'vitest';
import { extractBlocks, MarkerError } from './markdown-blocks.js';

const doc = (...lines: string[]) => lines.join('\n');

describe('extractBlocks', () => {
  it('finds ts and js blocks with their first code line, and skips other languages', () => {
    const blocks = extractBlocks(
      'a.md',
      doc('# Title', '', '```ts', 'const a = 1;', '```', '', '```sh', 'npm test', '```', '', '```javascript', 'let b;', '```', '', '```', 'plain', '```'),
    );
    expect(blocks.map((b) => [b.line, b.lang, b.code])).toEqual([
      [4, 'ts', 'const a = 1;'],
      [12, 'js', 'let b;'],
    ]);
  });

  it('reads stacked markers, a setup over several lines, and a module name', () => {
    const [block] = extractBlocks(
      'a.md',
      doc('<!-- setup: import type { Engine } from "@ferry/core";', 'declare const engine: Engine; -->', '<!-- run -->', '<!-- file: plugin.ts -->', '```ts', 'await engine.stop();', '```'),
    );
    expect(block).toMatchObject({ line: 6, run: true, module: 'plugin.ts', notChecked: undefined });
    expect(block!.setup).toBe('import type { Engine } from "@ferry/core";\ndeclare const engine: Engine;\n');
  });

  it('keeps a reason for a block that is not checked', () => {
    const [block] = extractBlocks('a.md', doc('<!-- not checked: the shape of a config file -->', '```ts', 'x', '```'));
    expect(block!.notChecked).toBe('the shape of a config file');
  });

  it('removes the indentation of a fence inside a list', () => {
    const [block] = extractBlocks('a.md', doc('- item:', '', '  ```ts', '  if (a) {', '    b();', '  }', '  ```'));
    expect(block!.code).toBe('if (a) {\n  b();\n}');
  });

  it('ignores a comment separated from the fence by a blank line', () => {
    const [block] = extractBlocks('a.md', doc('<!-- run -->', '', '```ts', 'x', '```'));
    expect(block!.run).toBe(false);
  });

  it('refuses a misspelt marker, a reason left out, a marker on a block never compiled, and a skipped block that runs', () => {
    expect(() => extractBlocks('a.md', doc('<!-- runs -->', '```ts', 'x', '```'))).toThrow(MarkerError);
    expect(() => extractBlocks('a.md', doc('<!-- not checked: -->', '```ts', 'x', '```'))).toThrow(/a.md:1: unknown marker/);
    expect(() => extractBlocks('a.md', doc('<!-- run -->', '```sh', 'x', '```'))).toThrow(/never compiled/);
    expect(() => extractBlocks('a.md', doc('<!-- not checked: prose -->', '<!-- run -->', '```ts', 'x', '```'))).toThrow(/not checked/);
  });
});

/**
 * The fenced code blocks of the repository's markdown, with the markers that say how a block is
 * checked. A marker is an HTML comment (invisible on GitHub and npm) on the lines right above
 * the opening fence, with no blank line in between; several may be stacked:
 *
 * - `<!-- setup: <code> -->`: TypeScript placed before the block, unseen by the reader, for a
 *   fragment that uses names defined elsewhere (`declare const engine: Engine;`). It may span
 *   several lines. Where it holds the comment `block` (slash, star, `block`, star, slash), the
 *   block goes there instead, for a fragment that only makes sense inside something (a member
 *   of an object literal), or to add checks after it.
 * - `<!-- file: <name>.ts -->`: the block is the module `./<name>.js` of its markdown file, which
 *   the file's other blocks may import (a plugin defined in one block, used in the next).
 * - `<!-- run -->`: the block is a complete program; it is also run, and must exit with 0.
 * - `<!-- not checked: <reason> -->`: the block is not compiled at all (pseudo-code, the shape of
 *   an interface written for reading). The reason is required.
 *
 * Any other comment right above a TypeScript or JavaScript fence is an error, so a misspelt
 * marker cannot switch a check off silently.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/** Fence info strings whose blocks are compiled, by the language they are compiled as. */
const LANGUAGES: Record<string, 'ts' | 'js'> = { ts: 'ts', typescript: 'ts', js: 'js', javascript: 'js', mjs: 'js' };

/** One TypeScript or JavaScript block of a markdown file. */
export interface CodeBlock {
  /** The markdown file, relative to the repository root, with `/` separators. */
  file: string;
  /** 1-based line of the block's first line of code in `file`. */
  line: number;
  /** What it is compiled as. */
  lang: 'ts' | 'js';
  /** The block's code, with the fence's indentation removed. */
  code: string;
  /** Hidden setup code (`<!-- setup: ... -->`), or `''`. */
  setup: string;
  /** The module name other blocks of the file import it by (`<!-- file: ... -->`), or `undefined`. */
  module: string | undefined;
  /** Whether the block is a complete program to run (`<!-- run -->`). */
  run: boolean;
  /** Why the block is not compiled (`<!-- not checked: ... -->`), or `undefined`. */
  notChecked: string | undefined;
}

/** A marker that cannot be read, with where it is. */
export class MarkerError extends Error {}

const FENCE = /^(\s*)(`{3,}|~{3,})\s*([^\s`]*)[^`]*$/;

/**
 * The compiled-language blocks of one markdown text. Blocks in other languages (`sh`, `json`)
 * are skipped, and must carry no marker.
 */
export function extractBlocks(file: string, text: string): CodeBlock[] {
  const lines = text.split('\n');
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    const [, indent, fence, info] = open as unknown as [string, string, string, string];
    // The closing fence: the same character, at least as long, nothing after it.
    let end = i + 1;
    while (end < lines.length && !new RegExp(`^\\s*${fence[0] === '`' ? '`' : '~'}{${fence.length},}\\s*$`).test(lines[end]!)) end++;
    const markers = markersAbove(lines, i, file);
    const lang = LANGUAGES[info.toLowerCase()];
    if (lang === undefined) {
      if (markers.length > 0) throw new MarkerError(`${file}:${i + 1}: a marker above a \`${info || 'plain'}\` block, which is never compiled`);
    } else {
      const code = lines
        .slice(i + 1, end)
        .map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l.trimStart()))
        .join('\n');
      const block: CodeBlock = { file, line: i + 2, lang, code, setup: '', module: undefined, run: false, notChecked: undefined };
      for (const marker of markers) apply(block, marker, file);
      if (block.notChecked !== undefined && (block.run || block.setup !== '' || block.module !== undefined)) {
        throw new MarkerError(`${file}:${i + 1}: a block that is not checked can neither run, nor have a setup, nor be a module`);
      }
      blocks.push(block);
    }
    i = end;
  }
  return blocks;
}

/** The HTML comments on the lines right above line `fenceIndex`, top first. */
function markersAbove(lines: string[], fenceIndex: number, file: string): { text: string; line: number }[] {
  const markers: { text: string; line: number }[] = [];
  let i = fenceIndex - 1;
  while (i >= 0 && lines[i]!.trim().endsWith('-->')) {
    // Walk up to the line that opens this comment.
    let start = i;
    while (start >= 0 && !lines[start]!.includes('<!--')) start--;
    if (start < 0) throw new MarkerError(`${file}:${i + 1}: a comment end without its start`);
    const text = lines.slice(start, i + 1).join('\n').trim();
    if (!text.startsWith('<!--')) break; // text before the comment on its first line: not a marker
    markers.unshift({ text: text.slice(4, -3).trim(), line: start + 1 });
    i = start - 1;
  }
  return markers;
}

function apply(block: CodeBlock, marker: { text: string; line: number }, file: string): void {
  const { text, line } = marker;
  if (text === 'run') {
    block.run = true;
  } else if (text.startsWith('setup:')) {
    block.setup += `${text.slice('setup:'.length).trim()}\n`;
  } else if (/^file: [a-z0-9-]+\.(ts|js)$/.test(text)) {
    block.module = text.slice('file:'.length).trim();
  } else if (text.startsWith('not checked:') && text.slice('not checked:'.length).trim() !== '') {
    block.notChecked = text.slice('not checked:'.length).trim();
  } else {
    throw new MarkerError(`${file}:${line}: unknown marker <!-- ${text.split('\n')[0]} -->; expected \`run\`, \`setup: <code>\`, \`file: <name>.ts\` or \`not checked: <reason>\``);
  }
}

/**
 * The markdown files whose samples are checked: README.md and ARCHITECTURE.md at the top,
 * `docs/`, and the README of every package, plugin and example.
 */
export function docFiles(root: string): string[] {
  const files = [join(root, 'README.md'), join(root, 'ARCHITECTURE.md')];
  const markdownIn = (dir: string) =>
    readdirSync(join(root, dir))
      .filter((name) => name.endsWith('.md'))
      .sort()
      .map((name) => join(root, dir, name));
  files.push(...markdownIn('docs'));
  for (const group of ['packages', 'plugins', 'examples']) {
    for (const name of readdirSync(join(root, group)).sort()) {
      const readme = join(root, group, name, 'README.md');
      if (statSync(readme, { throwIfNoEntry: false })?.isFile()) files.push(readme);
    }
  }
  return files;
}

/** Every compiled-language block of the files {@link docFiles} lists. */
export function collectBlocks(root: string): CodeBlock[] {
  return docFiles(root).flatMap((path) => extractBlocks(relative(root, path).split('\\').join('/'), readFileSync(path, 'utf8')));
}

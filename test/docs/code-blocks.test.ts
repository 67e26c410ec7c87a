/**
 * The code samples of the docs, compiled and run, so that a sample that drifts from the code
 * fails here rather than in a reader's hands (as Rust's doctests do).
 *
 * Every fenced block tagged `ts`, `typescript`, `js`, `javascript` or `mjs` in README.md,
 * ARCHITECTURE.md, docs/*.md and the README of each package, plugin and example is:
 *
 * - **type-checked** as an ES module of its own, with the compiler options of
 *   tsconfig.base.json (strict, NodeNext, the `ferry-source` condition, so `@ferry/*` resolves to
 *   the workspace's sources). All blocks are checked in one program.
 * - **run**, when marked `<!-- run -->`: written to a temporary directory of its own, its working
 *   directory while it runs, and executed in a child process (`node --import tsx
 *   --conditions=ferry-source`, as the repository's scripts run TypeScript). It must settle in
 *   time without an error, and leave nothing running that would keep its process from exiting
 *   (an engine not stopped, a server not closed). The run blocks share one child process, one
 *   after the other, so the workspace's sources are loaded once (see {@link RUNNER}). A line
 *   `console.log(...); // → <output>` of a run block must print `<output>`: whitespace and the
 *   kind of quotes do not count, and `...` stands for anything.
 *
 * Markers are HTML comments right above the opening fence, invisible to readers (the details are
 * in `markdown-blocks.ts`):
 *
 * - `<!-- setup: <code> -->` adds hidden code before a fragment (`import type { Engine } from
 *   '@ferry/core'; declare const engine: Engine;`). Where the setup holds the comment `block`
 *   (slash, star, `block`, star, slash), the block goes there instead: a member of an object
 *   literal is checked inside the `defineConnector({ ... })` the setup opens and closes, and an
 *   interface listed for reading is checked against the exported type it describes.
 * - `<!-- file: <name>.ts -->` makes the block the module `./<name>.js` of its markdown file,
 *   which the file's other blocks import (and which is written beside a run block that does).
 * - `<!-- run -->` runs a complete program.
 * - `<!-- not checked: <reason> -->` skips a block that is not code; keep these few, the test
 *   lists them.
 *
 * Diagnostics name the markdown line they come from; a failed run's assertion message holds what
 * the block threw or left running, and the runner's stderr.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectBlocks, type CodeBlock } from './markdown-blocks.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** Where the blocks seem to live for the compiler: inside the repository, so `node_modules` and the root package.json (`"type": "module"`) apply. No file is written there. */
const VIRTUAL_DIR = join(ROOT, 'test/docs/.blocks');
/** Longest one run block may take, the first one loading the workspace's sources through tsx included. */
const RUN_TIMEOUT_MS = 60_000;

const blocks = collectBlocks(ROOT);
const checked = blocks.filter((b) => b.notChecked === undefined);
const runnable = checked.filter((b) => b.run);
const skipped = blocks.filter((b) => b.notChecked !== undefined);
const nameOf = (b: CodeBlock) => `${b.file}:${b.line}`;
/** The directory a markdown file's blocks seem to live in, so its `file:` blocks can import each other. */
const dirOf = (b: CodeBlock) => join(VIRTUAL_DIR, b.file.replace(/[^A-Za-z0-9]+/g, '_'));
const baseName = (b: CodeBlock) => b.module ?? `block-${b.line}.${b.lang}`;
const virtualPath = (b: CodeBlock) => join(dirOf(b), baseName(b));

/** Where the hidden setup puts the block; without it, the block follows the setup. */
const PLACEHOLDER = '/* block */';

/**
 * The block as the compiler sees it, `code` standing for its code: the hidden setup around it,
 * and how many lines come before the code.
 */
function compose(b: CodeBlock, code = b.code): { text: string; before: number } {
  const at = b.setup.indexOf(PLACEHOLDER);
  const before = at === -1 ? b.setup : b.setup.slice(0, at);
  const after = at === -1 ? '' : b.setup.slice(at + PLACEHOLDER.length);
  return { text: `${before}${code}${after}\n`, before: before.split('\n').length - 1 };
}

/** Where line `line` (0-based) of a composed block is in its markdown file. */
function locate(b: CodeBlock, line: number): string {
  const { before } = compose(b);
  const inCode = line - before;
  return inCode >= 0 && inCode < b.code.split('\n').length ? `${b.file}:${b.line + inCode}` : `${b.file}:${b.line} (hidden setup)`;
}

describe('code blocks of the docs', () => {
  let diagnostics: Map<CodeBlock, string[]>;
  let programProblems: string[];
  let runs: Map<CodeBlock, Promise<RunOutcome>>;
  let workDir: string;
  let typeCheckMs = 0;
  let typeCheckCpuMs = 0;

  beforeAll(() => {
    // The runs start first: they go on in their child process while this one type-checks.
    workDir = mkdtempSync(join(tmpdir(), 'ferry-doc-blocks-'));
    runs = startRuns(runnable, workDir);
    const started = performance.now();
    const cpu = process.cpuUsage();
    ({ diagnostics, programProblems } = typeCheck(checked));
    typeCheckMs = Math.round(performance.now() - started);
    const used = process.cpuUsage(cpu);
    typeCheckCpuMs = Math.round((used.user + used.system) / 1000);
  }, 120_000);

  afterAll(async () => {
    await Promise.allSettled([...(runs?.values() ?? [])]);
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  });

  it('finds the blocks, and says which are not checked and why', () => {
    expect(blocks.length).toBeGreaterThan(40);
    expect(runnable.length).toBeGreaterThan(3);
    console.info(
      `${blocks.length} code blocks: ${checked.length} type-checked (in ${typeCheckMs} ms, ${typeCheckCpuMs} ms of CPU), ${runnable.length} of them run, ${skipped.length} not checked` +
        skipped.map((b) => `\n  ${nameOf(b)}: ${b.notChecked}`).join(''),
    );
  });

  it('compile with the repository options', () => {
    expect(programProblems).toEqual([]);
  });

  it.each(checked.map((b) => [nameOf(b), b] as const))('%s type-checks', (_name, block) => {
    expect(diagnostics.get(block)).toEqual([]);
  });

  it.each(runnable.map((b) => [nameOf(b), b] as const))(
    '%s runs',
    async (_name, block) => {
      const outcome = await runs.get(block)!;
      console.info(`${nameOf(block)} ran in ${outcome.ms} ms`);
      expect(outcome.failure, outcome.failure).toBeUndefined();
      for (const expectation of expectedOutputs(block)) {
        const printed = outcome.printed.get(expectation.index) ?? [];
        expect(printed.length, `${block.file}:${block.line + expectation.index} prints nothing`).toBeGreaterThan(0);
        for (const text of printed) {
          expect(matchesOutput(text, expectation.expected), `${block.file}:${block.line + expectation.index} printed\n  ${text}\nexpected\n  ${expectation.expected}`).toBe(true);
        }
      }
    },
    RUN_TIMEOUT_MS + 10_000,
  );
});

/** Compiler options of the repository's own typecheck, for modules that emit nothing. */
function compilerOptions(): ts.CompilerOptions {
  const base = ts.readConfigFile(join(ROOT, 'tsconfig.base.json'), (path) => ts.sys.readFile(path));
  const parsed = ts.parseJsonConfigFileContent(base.config, ts.sys, ROOT);
  return {
    ...parsed.options,
    noEmit: true,
    declaration: false,
    sourceMap: false,
    allowJs: true,
    checkJs: true,
    // Every block is a module of its own, even one without an import or export.
    moduleDetection: ts.ModuleDetectionKind.Force,
  };
}

/**
 * The `ferry-source` entry of a workspace package that `node_modules` does not link yet (a
 * package added since the last `npm install`), so its samples can be checked anyway.
 */
function workspaceEntries(): Map<string, string> {
  const entries = new Map<string, string>();
  for (const group of ['packages', 'plugins', 'examples']) {
    for (const dir of readdirSync(join(ROOT, group))) {
      let manifest: { name?: string; exports?: Record<string, unknown> };
      try {
        manifest = JSON.parse(readFileSync(join(ROOT, group, dir, 'package.json'), 'utf8')) as typeof manifest;
      } catch {
        continue;
      }
      for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
        const source = typeof target === 'object' && target !== null ? (target as Record<string, unknown>)['ferry-source'] : undefined;
        if (manifest.name && typeof source === 'string') entries.set(`${manifest.name}${subpath.slice(1)}`, join(ROOT, group, dir, source));
      }
    }
  }
  return entries;
}

/** Type-checks every block in one program; the diagnostics of each, as `file:line: message`. */
function typeCheck(list: CodeBlock[]): { diagnostics: Map<CodeBlock, string[]>; programProblems: string[] } {
  const options = compilerOptions();
  const byPath = new Map(list.map((b) => [virtualPath(b), b]));
  const host = ts.createCompilerHost(options, true);
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (fileName, languageVersion, onError, shouldCreate) => {
    const block = byPath.get(fileName);
    if (block) return ts.createSourceFile(fileName, compose(block).text, languageVersion, true);
    return getSourceFile.call(host, fileName, languageVersion, onError, shouldCreate);
  };
  host.fileExists = (fileName) => byPath.has(fileName) || fileExists.call(host, fileName);
  // The blocks' directories exist for the compiler only; without this it looks for no module there.
  const { directoryExists } = host;
  host.directoryExists = (dir) => dir === VIRTUAL_DIR || dir.startsWith(VIRTUAL_DIR + sep) || (directoryExists?.call(host, dir) ?? ts.sys.directoryExists(dir));
  host.readFile = (fileName) => {
    const block = byPath.get(fileName);
    return block ? compose(block).text : readFile.call(host, fileName);
  };
  const workspace = workspaceEntries();
  const cache = ts.createModuleResolutionCache(ROOT, (name) => name, options);
  host.resolveModuleNameLiterals = (literals, containingFile, redirected, opts, containingSourceFile) =>
    literals.map((literal) => {
      const mode = ts.getModeForUsageLocation(containingSourceFile, literal, opts);
      const found = ts.resolveModuleName(literal.text, containingFile, opts, host, cache, redirected, mode);
      const source = workspace.get(literal.text);
      if (found.resolvedModule || source === undefined) return found;
      return { resolvedModule: { resolvedFileName: source, extension: ts.Extension.Ts, isExternalLibraryImport: false } };
    });

  const program = ts.createProgram({ rootNames: [...byPath.keys()], options, host });
  const format = (d: ts.Diagnostic) => ts.flattenDiagnosticMessageText(d.messageText, '\n');
  const programProblems = [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()].map(format);
  const diagnostics = new Map<CodeBlock, string[]>();
  for (const [path, block] of byPath) {
    const file = program.getSourceFile(path)!;
    const found = [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)];
    diagnostics.set(
      block,
      found.map((d) => {
        const line = d.start === undefined ? 0 : file.getLineAndCharacterOfPosition(d.start).line;
        return `${locate(block, line)}: ${format(d)}`;
      }),
    );
  }
  return { diagnostics, programProblems };
}

/** What one run of a block did. */
interface RunOutcome {
  /** Why the block failed: what it threw, or what it left running; `undefined` when it ran through. */
  failure: string | undefined;
  /** From the block's start to its end, in the runner. */
  ms: number;
  /** What each `// →` line printed, by its index in the block's code. */
  printed: Map<number, string[]>;
}

/** Marks a line of the runner's output as a report, so it can be told from what the blocks print. */
const REPORT = '\u0000doc-block ';
const ARROW_LINE = /^(\s*)console\.log\((.*)\);\s*\/\/ → (.*)$/;

/** The `// →` lines of a block: index in its code, and the output expected. */
function expectedOutputs(block: CodeBlock): { index: number; expected: string }[] {
  return block.code.split('\n').flatMap((line, index) => {
    const match = ARROW_LINE.exec(line);
    return match ? [{ index, expected: match[3]!.trim() }] : [];
  });
}

/** True when printed text is the expected output, up to whitespace and quote kinds, `...` matching anything. */
function matchesOutput(printed: string, expected: string): boolean {
  const normal = (s: string) => s.replace(/\s+/g, '').replace(/"/g, "'");
  const pattern = normal(expected)
    .split('...')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${pattern}$`, 's').test(normal(printed));
}

/** Block `n` as run: its `// →` lines report what they print. */
function runnableSource(block: CodeBlock, n: number): string {
  const code = block.code
    .split('\n')
    .map((line, index) => {
      const match = ARROW_LINE.exec(line);
      return match ? `${match[1]}__printed(${index}, ${match[2]});` : line;
    })
    .join('\n');
  const helper =
    `import { format as __format } from 'node:util';\n` +
    `const __printed = (index: number, ...args: unknown[]) => process.stdout.write(${JSON.stringify(REPORT)} + JSON.stringify({ n: ${n}, event: 'printed', index, text: __format(...args) }) + '\\n');\n`;
  return `${helper}${compose(block, code).text}`;
}

/**
 * The program that runs the blocks, one after the other, each from a directory of its own that
 * is its working directory. One process for all of them: each process of its own would load the
 * workspace's sources through tsx again, some 2.5 s of CPU per block. A block passes when it
 * settles without an error, an unhandled rejection, a `process.exit` or an exit code, and leaves
 * nothing running that would keep a process of its own alive (a server, a timer, a socket).
 */
const RUNNER = `
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [list, timeoutMs] = [JSON.parse(process.argv[2]), Number(process.argv[3])];
const report = (message) => process.stdout.write(${JSON.stringify(REPORT)} + JSON.stringify(message) + '\\n');
const describe = (error) => (error instanceof Error ? error.stack ?? error.message : String(error));
let current = -1;
let errors = [];
process.on('uncaughtException', (error) => errors.push(describe(error)));
process.on('unhandledRejection', (error) => errors.push('unhandled rejection: ' + describe(error)));
process.exit = (code) => {
  throw new Error('process.exit(' + code + ') called');
};
const turns = async (count) => {
  for (let i = 0; i < count; i++) await new Promise((resolve) => setTimeout(resolve, 10));
};
// What keeps the process alive, by kind: what a block leaves beyond what was there before it.
const alive = () => process.getActiveResourcesInfo().filter((kind) => kind !== 'TTYWrap' && kind !== 'PipeWrap');
const leftOver = (before) => {
  const rest = [...before];
  return alive().filter((kind) => {
    const at = rest.indexOf(kind);
    if (at === -1) return true;
    rest.splice(at, 1);
    return false;
  });
};

for (const { n, dir } of list) {
  current = n;
  errors = [];
  process.exitCode = undefined;
  process.chdir(dir);
  await turns(2);
  const before = alive();
  const started = performance.now();
  let timer;
  try {
    await Promise.race([
      import(pathToFileURL(join(dir, 'main.ts')).href),
      new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('not settled within ' + timeoutMs + ' ms')), timeoutMs))),
    ]);
  } catch (error) {
    errors.push(describe(error));
  } finally {
    clearTimeout(timer);
  }
  const ms = Math.round(performance.now() - started);
  // Sockets and servers closed at the end take a few turns of the loop to go.
  let left = leftOver(before);
  for (let i = 0; i < 50 && left.length > 0; i++) {
    await turns(1);
    left = leftOver(before);
  }
  if (left.length > 0) errors.push('left running, which would keep its process alive: ' + left.join(', '));
  if (process.exitCode) errors.push('exit code ' + process.exitCode);
  report({ n, event: 'done', ms, failure: errors.length > 0 ? errors.join('\\n') : undefined });
}
const used = process.cpuUsage();
report({ n: -1, event: 'cpu', ms: Math.round((used.user + used.system) / 1000) });
process.exitCode = 0;
`;

/** Starts the runner on every run block; each block's outcome arrives as soon as it is known. */
function startRuns(list: CodeBlock[], workDir: string): Map<CodeBlock, Promise<RunOutcome>> {
  // The directory resolves packages as the repository does, and holds ES modules.
  symlinkSync(join(ROOT, 'node_modules'), join(workDir, 'node_modules'), 'dir');
  writeFileSync(join(workDir, 'package.json'), '{ "type": "module", "private": true }\n');
  writeFileSync(join(workDir, 'runner.mjs'), RUNNER);
  const env = { ...process.env };
  // The samples read their settings from the environment: run them as a reader would.
  for (const name of Object.keys(env)) if (name.startsWith('FERRY_') || name === 'DATABASE_URL' || name === 'NODE_OPTIONS') delete env[name];

  const jobs = list.map((block, n) => {
    const dir = join(workDir, `block-${n}`);
    mkdirSync(dir);
    writeFileSync(join(dir, 'main.ts'), runnableSource(block, n));
    // The modules of its markdown file, which it may import.
    for (const module of blocks.filter((b) => b.file === block.file && b.module !== undefined)) writeFileSync(join(dir, module.module!), compose(module).text);
    let settle!: (outcome: RunOutcome) => void;
    const outcome = new Promise<RunOutcome>((resolve) => (settle = resolve));
    return { block, n, dir, outcome, settle, printed: new Map<number, string[]>(), done: false };
  });

  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--conditions=ferry-source', 'runner.mjs', JSON.stringify(jobs.map(({ n, dir }) => ({ n, dir }))), String(RUN_TIMEOUT_MS)],
    { cwd: workDir, env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  let pending = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout.on('data', (chunk: Buffer) => {
    pending += chunk.toString();
    const lines = pending.split('\n');
    pending = lines.pop()!;
    for (const line of lines) {
      if (!line.startsWith(REPORT)) continue;
      const message = JSON.parse(line.slice(REPORT.length)) as { n: number; event: 'printed' | 'done' | 'cpu'; index?: number; text?: string; ms?: number; failure?: string };
      if (message.event === 'cpu') {
        console.info(`the runner used ${message.ms} ms of CPU`);
        continue;
      }
      const job = jobs[message.n]!;
      if (message.event === 'printed') {
        job.printed.set(message.index!, [...(job.printed.get(message.index!) ?? []), message.text!]);
      } else {
        job.done = true;
        job.settle({ failure: message.failure === undefined ? undefined : `${message.failure}\n${stderr}`, ms: message.ms!, printed: job.printed });
      }
    }
  });
  child.on('close', (code, signal) => {
    for (const job of jobs) if (!job.done) job.settle({ failure: `the runner ended (${code ?? signal}) before this block did\n${stderr}`, ms: 0, printed: job.printed });
  });
  // A block that never settles is reported by the runner; this is the net under the runner itself.
  setTimeout(() => child.kill('SIGKILL'), RUN_TIMEOUT_MS * (list.length + 1)).unref();
  return new Map(jobs.map((job) => [job.block, job.outcome]));
}

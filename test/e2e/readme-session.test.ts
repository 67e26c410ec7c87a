/**
 * The README's curl session ("## The API in one curl session"), run as a reader runs it: the
 * section's `sh` block in bash, from the repository root, against `npm start` with the
 * `FERRY_OUTBOUND_ALLOW` its intro names, on a fresh SQLite database. Only the ports change: the
 * server's 8080 becomes the one it chose, the receiver's 9000 a free one. The `ferry keys create`
 * of the block reaches the server's database through `DATABASE_URL`, as `npm start` does.
 *
 * The block must exit 0 with no problem answered, its receiver must print the event sent in,
 * the pipeline's events must list that event `delivered`, and every field named by the block's
 * `# {...}` lines of expected output must appear in what it printed.
 *
 * Both `npm start` and `npm run ferry` run the built server, so the build is brought up to date
 * first (at once when it is; a minute or two on a fresh checkout).
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const HEADING = '## The API in one curl session';
/** Longest the build may take: a fresh checkout's, on 2 cores. */
const BUILD_TIMEOUT_MS = 300_000;
/** Longest the block may run: about 10 s, plus a rebuild when a source changed since beforeAll. */
const SESSION_TIMEOUT_MS = 200_000;

/** The section's `sh` block, and the `FERRY_OUTBOUND_ALLOW` value its intro starts the server with. */
function readSession(): { script: string; allow: string } {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf(`\n${HEADING}\n`);
  if (start === -1) throw new Error(`README.md has no section "${HEADING}"`);
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end === -1 ? undefined : end);
  const blocks = [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)];
  if (blocks.length !== 1) throw new Error(`"${HEADING}" should hold one sh block, not ${blocks.length}`);
  const allow = /`FERRY_OUTBOUND_ALLOW=([^\s`]+) npm start`/.exec(section.slice(0, section.indexOf('```sh')));
  if (!allow) throw new Error(`the intro of "${HEADING}" should say to run \`FERRY_OUTBOUND_ALLOW=... npm start\``);
  return { script: blocks[0]![1]!, allow: allow[1]! };
}

/** A port free on 127.0.0.1 right now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}

/** Every `{...}` of `text` that parses as a JSON object, in order (curl prints its answers without a newline between them). */
function jsonObjects(text: string): Record<string, unknown>[] {
  const found: Record<string, unknown>[] = [];
  for (let i = 0; i < text.length; i++) {
    if (text[i] !== '{') continue;
    let depth = 0;
    let inString = false;
    for (let j = i; j < text.length; j++) {
      const c = text[j];
      if (inString) {
        if (c === '\\') j++;
        else if (c === '"') inString = false;
      } else if (c === '"') inString = true;
      else if (c === '{') depth++;
      else if (c === '}' && --depth === 0) {
        try {
          const value: unknown = JSON.parse(text.slice(i, j + 1));
          if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
            found.push(value as Record<string, unknown>);
            i = j;
          }
        } catch {
          // Not JSON (a Prometheus label set): look on from the next brace.
        }
        break;
      }
    }
  }
  return found;
}

/** The property names of `value`, down to `depth` levels of objects (arrays do not count as a level). */
function keysOf(value: unknown, depth: number): string[] {
  if (depth === 0 || value === null || typeof value !== 'object') return [];
  if (Array.isArray(value)) return value.flatMap((item) => keysOf(item, depth));
  return Object.entries(value).flatMap(([key, item]) => [key, ...keysOf(item, depth - 1)]);
}

interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Process groups this file started and has not seen end; each is killed with its leader's pid. */
const groups = new Set<number>();

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // The group is gone.
  }
}

/**
 * Runs `command` as the leader of a process group of its own, and waits (at most `timeoutMs`) for
 * it to end and its output to close; on the deadline the whole group is killed.
 */
function run(command: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number, outputDir?: string): Promise<Finished> {
  // With `outputDir`, the output goes to files there, read once the command ended: a pipe shared
  // with a background Node process (the session's receiver) is made non-blocking by that process
  // (Node 24 does), and curl's large writes to it then stall; a terminal or a file does not.
  const files = outputDir ? { out: join(outputDir, 'stdout.txt'), err: join(outputDir, 'stderr.txt') } : undefined;
  const fds = files ? [openSync(files.out, 'w'), openSync(files.err, 'w')] : undefined;
  const child = spawn(command, args, { cwd: ROOT, env, detached: true, stdio: ['ignore', fds?.[0] ?? 'pipe', fds?.[1] ?? 'pipe'] });
  if (fds) for (const fd of fds) closeSync(fd);
  groups.add(child.pid!);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => (stdout += d));
  child.stderr?.on('data', (d) => (stderr += d));
  const collected = () => (files ? { stdout: readFileSync(files.out, 'utf8'), stderr: readFileSync(files.err, 'utf8') } : { stdout, stderr });
  return new Promise((done, fail) => {
    const timer = setTimeout(() => {
      killGroup(child.pid!, 'SIGKILL');
      const { stdout: out, stderr: err } = collected();
      fail(new Error(`${command} ${args.join(' ')}: still running after ${timeoutMs / 1000} s\n${out.slice(-4000)}\n${err.slice(-4000)}`));
    }, timeoutMs);
    child.on('error', fail);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      // Whatever the leader left behind goes with it.
      killGroup(child.pid!, 'SIGKILL');
      groups.delete(child.pid!);
      done({ code, signal, ...collected() });
    });
  });
}

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  for (const pid of groups) killGroup(pid, 'SIGKILL');
  groups.clear();
});

beforeAll(async () => {
  const built = await run(process.execPath, ['scripts/ensure-built.mjs'], process.env, BUILD_TIMEOUT_MS);
  if (built.code !== 0) throw new Error(`the build failed:\n${built.stderr}`);
}, BUILD_TIMEOUT_MS + 10_000);

it('the README curl session runs as written: the receiver it starts gets the event, which the pipeline lists as delivered', async () => {
  const { script, allow } = readSession();
  // The reader's tools; nothing is installed for them here.
  for (const tool of ['bash', 'curl', 'npm']) {
    const found = (process.env.PATH ?? '').split(delimiter).some((dir) => dir !== '' && existsSync(join(dir, tool)));
    if (!found) throw new Error(`\`${tool}\` is not on PATH: the README's curl session needs it`);
  }
  const dir = mkdtempSync(join(tmpdir(), 'ferry-readme-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const env = { ...process.env, DATABASE_URL: join(dir, 'ferry.db') };

  // `FERRY_OUTBOUND_ALLOW=... npm start`, on a port of its choosing.
  const server = spawn('npm', ['start', '--', '--port', '0'], { cwd: ROOT, env: { ...env, FERRY_OUTBOUND_ALLOW: allow }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  groups.add(server.pid!);
  let serverOutput = '';
  const exited = new Promise<void>((done) => server.on('exit', () => done()));
  cleanups.push(async () => {
    if (server.exitCode !== null || server.signalCode !== null) return;
    // To npm, as a reader's Ctrl-C would reach it; npm passes it on to the server.
    server.kill('SIGTERM');
    const timer = setTimeout(() => killGroup(server.pid!, 'SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
    killGroup(server.pid!, 'SIGKILL');
    groups.delete(server.pid!);
  });
  const url = await new Promise<string>((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`npm start: not serving after 60 s\n${serverOutput}`)), 60_000);
    const read = (d: Buffer) => {
      serverOutput += d;
      const m = /ferry listening on (http:\/\/[^"\s]+)/.exec(serverOutput);
      if (m) {
        clearTimeout(timer);
        done(m[1]!);
      }
    };
    server.stdout.on('data', read);
    server.stderr.on('data', read);
    server.on('exit', () => fail(new Error(`npm start exited early:\n${serverOutput}`)));
  });
  const port = new URL(url).port;

  // The block, with the server's port and a free one for its receiver.
  expect(script).toMatch(/\b8080\b/);
  expect(script).toMatch(/\b9000\b/);
  const receiverPort = await freePort();
  const file = join(dir, 'session.sh');
  writeFileSync(file, script.replace(/\b8080\b/g, port).replace(/\b9000\b/g, String(receiverPort)));
  const session = await run('bash', ['-e', file], env, SESSION_TIMEOUT_MS, dir);
  const report = `exit ${session.code} (${session.signal})\n--- stdout\n${session.stdout}\n--- stderr\n${session.stderr}\n--- server\n${serverOutput}`;
  expect(session.code, report).toBe(0);
  expect(session.stdout, report).not.toContain('"type":"/problems/');

  // The receiver's line: the webhook-id, then the body, holding the event the block sent in.
  const sent = (JSON.parse(/^BODY='(.*)'$/m.exec(script)![1]!) as { payload: unknown }).payload;
  const line = /\b((?:bat|evt)_[0-9A-Za-z]+) (\{.*\})$/m.exec(session.stdout);
  expect(line, report).not.toBeNull();
  const body = JSON.parse(line![2]!) as { events?: { id: string; payload: unknown }[]; id?: string; payload?: unknown };
  const received = body.events ?? [body as { id: string; payload: unknown }];
  expect(received, report).toEqual([expect.objectContaining({ payload: sent })]);

  // The pipeline's events list that very event, delivered.
  const printed = jsonObjects(session.stdout);
  const listings = printed.filter((o) => Array.isArray(o.data) && (o.data as { status?: unknown }[]).some((e) => e.status !== undefined));
  expect(listings, report).toContainEqual(expect.objectContaining({ data: [expect.objectContaining({ id: received[0]!.id, payload: sent, status: 'delivered', attempts: 1 })] }));

  // Every field named by the block's lines of expected output (`# {...}`, and the receiver's
  // `# <webhook-id> {...}`) is one the API printed; of the OpenAPI document, which names every
  // field in its schemas, only the first two levels count.
  const shown = new Set(printed.flatMap((o) => keysOf(o, 'openapi' in o ? 2 : Infinity)));
  const promised = new Set([...script.matchAll(/^# (?:[a-z]+_\w+ )?\{.*$/gm)].flatMap((m) => [...m[0].matchAll(/"(\w+)":/g)].map((k) => k[1]!)));
  expect(promised.size).toBeGreaterThan(10);
  expect([...promised].filter((key) => !shown.has(key)), report).toEqual([]);
}, SESSION_TIMEOUT_MS + 60_000);

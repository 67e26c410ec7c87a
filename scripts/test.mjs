#!/usr/bin/env node
// The one command that runs every check: lint, typecheck, the package builds, then every test
// (unit, storage on SQLite and on an embedded Postgres, cross-package, examples, the docs' code
// blocks, the packed packages) on Node 24, then a subset again on Node 22 and 20. Nothing needs
// to be installed by hand: `npm ci` brings the Postgres binaries and s3rver, the tests start
// their own servers (or use DATABASE_URL when it is set), and this script installs librdkafka's
// headers (Debian's librdkafka-dev, for the Kafka mock cluster) and Chromium (for the console's
// browser tests) when they are missing.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';

const env = { ...process.env, TURBO_TELEMETRY_DISABLED: '1', TURBO_NO_UPDATE_NOTIFIER: '1', DO_NOT_TRACK: '1' };
const extra = process.argv.slice(2);
const RESULTS = '.tmp/vitest-results.json';
rmSync(RESULTS, { force: true });

// One plain closing line, whatever happened: "tests: N passed, N failed".
function summary() {
  if (!existsSync(RESULTS)) return;
  const r = JSON.parse(readFileSync(RESULTS, 'utf8'));
  const skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
  console.log(`tests: ${r.numPassedTests} passed, ${r.numFailedTests} failed${skipped ? `, ${skipped} skipped` : ''}`);
}
const steps = [
  ['lint', ['npx', 'eslint', '.', '--max-warnings=0']],
  // The direction of core's imports (.dependency-cruiser.cjs): no new cycle, nothing climbing the ladder.
  ['dependency rules', ['npx', 'depcruise', 'packages/core/src', '--config', '.dependency-cruiser.cjs']],
  // One program for every package, plugin, example, test, benchmark and tool (they share one set
  // of compiler options): each package's own \`typecheck\` re-checked core's sources again, and
  // the 18 programs took 100 s where this one takes about 25. The console's page, compiled for
  // the browser with other options, is the one program of its own.
  ['typecheck', ['npx', 'tsc', '-p', 'tsconfig.json']],
  ['typecheck (the console page)', ['npx', 'tsc', '-p', 'packages/console/tsconfig.app.json']],
  ['build', ['npx', 'turbo', 'run', 'build', '--output-logs=errors-only']],
  // Every test on Node 24, then the engine, the HTTP layer, the server and SQLite storage again on
  // Node 22 and on the Node of the checkout, 20 (scripts/test-node-versions.mjs: Node builds from
  // the npm registry). Tests filtered by hand (`npm test -- <path>`) run once, on this Node.
  extra.length === 0
    ? ['tests: every one on Node 24, a subset on 22 and 20', ['node', 'scripts/test-node-versions.mjs', '--plan', `--json=${RESULTS}`]]
    : ['tests', ['npx', 'vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${RESULTS}`, ...extra]],
];

/**
 * What the tests need from Debian, by a file each package installs: librdkafka's headers (the
 * Kafka mock cluster is built against them) and Chromium (the console's tests drive it; browser
 * downloads by test tools cannot work here, Debian's package does).
 */
const DEBIAN_PACKAGES = [
  ['librdkafka-dev', '/usr/include/librdkafka/rdkafka_mock.h', 'headers for the Kafka mock cluster'],
  ['chromium', '/usr/bin/chromium', 'the browser the console tests drive'],
];

/**
 * Installs the missing ones with apt, as root or through password-less sudo; otherwise the run
 * stops saying what to install.
 */
function ensureDebianPackages() {
  const missing = DEBIAN_PACKAGES.filter(([, file]) => !existsSync(file));
  if (missing.length === 0) return;
  console.log(`\n== prerequisites: installing ${missing.map(([name, , why]) => `${name} (${why})`).join(', ')}`);
  const root = process.getuid?.() === 0;
  const run = (args) =>
    spawnSync(root ? args[0] : 'sudo', root ? args.slice(1) : ['-n', ...args], { stdio: 'inherit', env: { ...env, DEBIAN_FRONTEND: 'noninteractive' } });
  const names = missing.map(([name]) => name);
  if (run(['apt-get', 'update', '-qq']).status !== 0 || run(['apt-get', 'install', '-y', '-qq', ...names]).status !== 0) {
    console.error(`\n== prerequisites FAILED: install ${names.join(' ')} (apt-get install -y ${names.join(' ')}) and a C compiler, then run again`);
    process.exit(1);
  }
}
ensureDebianPackages();

for (const [name, [cmd, ...args]] of steps) {
  const started = performance.now();
  console.log(`\n== ${name}: ${[cmd, ...args].join(' ')}`);
  const result = spawnSync(cmd, args, { stdio: 'inherit', env });
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  if (result.status !== 0) {
    console.error(`\n== ${name} FAILED after ${seconds}s (exit ${result.status ?? result.signal})`);
    summary();
    process.exit(result.status ?? 1);
  }
  console.log(`== ${name} passed in ${seconds}s`);
}
summary();

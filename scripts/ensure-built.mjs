#!/usr/bin/env node
// Runs before `npm start` and `npm run ferry`: they run the built server (packages/server/dist),
// which starts in about a second, instead of compiling TypeScript at every start. On a fresh
// checkout, or when a source file is newer than its package's build, this builds what is missing
// (turbo rebuilds only the packages whose sources changed); otherwise it returns at once.
// Its output goes to stderr, so what the CLI prints on stdout stays the CLI's alone.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = new URL('..', import.meta.url).pathname;
/** The server and every workspace package it runs with. */
const PACKAGES = ['packages/core', 'packages/http', 'packages/fastify', 'packages/server', 'plugins/postgres', 'plugins/s3', 'plugins/kafka', 'plugins/snowflake', 'plugins/webhook'];

/** The newest modification time of the files below `dir`, in ms (0 when there are none). */
function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

function stale(pkg) {
  const dist = join(ROOT, pkg, 'dist');
  if (!existsSync(join(dist, 'index.js'))) return true;
  return newest(join(ROOT, pkg, 'src')) > statSync(join(dist, 'index.js')).mtimeMs;
}

const needed = PACKAGES.filter(stale);
if (needed.length > 0) {
  process.stderr.write(`building ${needed.join(', ')} (once; later starts use the build)\n`);
  const result = spawnSync('npx', ['turbo', 'run', 'build', '--filter=@ferry/server...', '--output-logs=errors-only'], {
    cwd: ROOT,
    // turbo's summary goes to stderr with the rest.
    stdio: ['ignore', 2, 2],
    // What running needs only (tsup.base.ts): ESM without declarations, a fraction of the full build.
    env: { ...process.env, FERRY_BUILD: 'run', TURBO_TELEMETRY_DISABLED: '1', TURBO_NO_UPDATE_NOTIFIER: '1', DO_NOT_TRACK: '1' },
  });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

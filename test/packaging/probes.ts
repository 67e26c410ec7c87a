/**
 * The programs the blank app runs with Node: one ES module and one CommonJS script, each loading
 * every entry its module system may load and starting an engine on SQLite, then writing what it
 * saw to a JSON file (not stdout, which a module may write to while loading).
 */

/** What loading one entry gave. */
export type Loaded = { names: string[] } | { error: { message: string; code?: string; stack?: string } };

/** What a probe saw. */
export interface ProbeReport {
  /** By specifier. */
  entries: Record<string, Loaded>;
  /** The engine round trip: `ok`, or the error. */
  engine: 'ok' | { message: string; stack?: string };
  /** The console's built files as the installed package serves them: status and size of each, or the error. */
  console: Record<string, { status: number; bytes: number }> | { message: string; stack?: string };
}

/**
 * Starts an engine from the packed core on an in-memory SQLite database, with a plugin, and
 * creates a connector: this loads better-sqlite3's native addon (in the engine's writer thread
 * too), knex's dialect classes (which core loads by path) and the migrations, none of which
 * importing an entry touches.
 */
const ENGINE_ROUND_TRIP = `
  const engine = await core.createEngine({
    storage: core.sqliteStorage({ filename: ':memory:' }),
    plugins: [webhookPlugin.webhook()],
    secretKey: core.generateSecretKey(),
    runtime: false,
    webhookDelivery: false,
  });
  await engine.start();
  try {
    const created = await engine.connectors.create('default', { type: 'webhook', direction: 'destination', config: { url: 'https://example.com/hook' } });
    if (!created.id.startsWith('con_')) throw new Error('unexpected connector id ' + created.id);
  } finally {
    await engine.stop();
  }
`;

/**
 * The console's page from the installed package: its built files must be in the tarball and
 * found from the built module, under ESM and CommonJS alike.
 */
const CONSOLE_FILES = `
  const handle = consolePackage.createConsoleHandler();
  report.console = {};
  for (const path of ['/', '/assets/console.js', '/assets/console.css']) {
    const answer = handle({ method: 'GET', path, basePath: '/console', headers: {} });
    report.console[path] = { status: answer.status, bytes: answer.body ? answer.body.length : 0 };
  }
`;

/** Shared by both probes: `load(specifier)` returns the module or throws. */
const BODY = (load: string) => `
const report = { entries: {}, engine: 'ok', console: {} };
for (const specifier of specifiers) {
  try {
    report.entries[specifier] = { names: Object.keys(${load}).sort() };
  } catch (error) {
    report.entries[specifier] = { error: { message: String(error?.message ?? error), code: error?.code, stack: error?.stack } };
  }
}
try {
  const core = ${load.replace('specifier', "'@ferry/core'")};
  const webhookPlugin = ${load.replace('specifier', "'@ferry/webhook'")};
  ${ENGINE_ROUND_TRIP}
} catch (error) {
  report.engine = { message: String(error?.message ?? error), stack: error?.stack };
}
try {
  const consolePackage = ${load.replace('specifier', "'@ferry/console'")};
  ${CONSOLE_FILES}
} catch (error) {
  report.console = { message: String(error?.message ?? error), stack: error?.stack };
}
writeFileSync(process.argv[2], JSON.stringify(report));
`;

/**
 * The ES module probe (`probe.mjs`): `import()` of each specifier, which resolves (the `import`
 * condition) and loads as `import * as m from '...'` does, but lets one failing entry be
 * reported without hiding the others.
 */
export function esmProbe(specifiers: readonly string[]): string {
  return `import { writeFileSync } from 'node:fs';\nconst specifiers = ${JSON.stringify(specifiers)};\n${BODY('await import(specifier)')}`;
}

/** The CommonJS probe (`probe.cjs`): `require` of each specifier. */
export function cjsProbe(specifiers: readonly string[]): string {
  return `'use strict';\nconst { writeFileSync } = require('node:fs');\nconst specifiers = ${JSON.stringify(specifiers)};\n(async () => {\n${BODY('require(specifier)')}\n})().catch((error) => { console.error(error); process.exit(1); });\n`;
}

/**
 * The TypeScript files the blank app type-checks against the installed packages: every entry
 * imported, and a few lines of what an application writes (an engine with every plugin, a
 * connector of its own, the HTTP API on Express and Fastify, the test kit), so the declarations
 * are used, not only loaded. Written as text because they target the packed packages: checked
 * inside the repository they would resolve to the workspace's sources instead.
 */
import type { Entry } from './public-packages.js';

/** Uses of the declarations, valid in an ES module and in a CommonJS one (no top-level await). */
const APPLICATION = `
import type { ConnectorDefinition, Engine, EngineOptions, JsonObject } from '@ferry/core';
import { createEngine, defineConnector, generateSecretKey, isFerryError, sqliteStorage } from '@ferry/core';
import type { FerryStorage } from '@ferry/core/internal';
import { createHttpApi, type HttpApi, type HttpApiOptions } from '@ferry/http';
import { ferryRouter } from '@ferry/express';
import { ferryPlugin, type FerryPluginOptions } from '@ferry/fastify';
import { runCli } from '@ferry/server';
import { MemoryHub, VirtualClock, memoryConnector } from '@ferry/testing';
import { startTestPostgres, type TestPostgres } from '@ferry/test-servers';
import { webhook, webhookConfigSchema, type WebhookConfig } from '@ferry/webhook';
import { postgres } from '@ferry/postgres';
import { s3 } from '@ferry/s3';
import { snowflake } from '@ferry/snowflake';
import { kafka } from '@ferry/kafka';
import express from 'express';
import Fastify from 'fastify';

/** A connector of the application's own, its config typed by a schema a plugin ships. */
export const relay: ConnectorDefinition<typeof webhookConfigSchema> = defineConnector({
  type: 'relay',
  version: '1.0.0',
  directions: ['destination'],
  configSchema: webhookConfigSchema,
  check: async (ctx) => ({ health: ctx.config.url?.startsWith('https:') ? 'healthy' : 'down', latencyMs: 0 }),
  destination: () => ({ write: async (events) => events.map(() => ({ ok: true as const })) }),
});

export async function serve(): Promise<Engine> {
  const options: EngineOptions = {
    storage: sqliteStorage({ filename: ':memory:' }),
    plugins: [relay, webhook(), postgres(), s3(), snowflake(), kafka(), memoryConnector(new MemoryHub())],
    secretKey: generateSecretKey(),
    clock: new VirtualClock(),
  };
  const engine: Engine = await createEngine(options);
  const httpOptions: HttpApiOptions = { bodyLimit: 1 << 20 };
  const api: HttpApi = createHttpApi(engine, httpOptions);
  express().use('/v2', ferryRouter(engine, httpOptions));
  await Fastify().register(ferryPlugin, { engine, ...httpOptions } satisfies FerryPluginOptions);
  const config: WebhookConfig = { url: 'https://example.com/hook' };
  const payload: JsonObject = { config };
  try {
    await engine.connectors.create('default', { type: 'relay', direction: 'destination', config: payload });
  } catch (error) {
    if (!isFerryError(error)) throw error;
    const code: string = error.code;
    void code;
  }
  void api;
  return engine;
}

export async function scratchDatabase(): Promise<string> {
  const server: TestPostgres = await startTestPostgres();
  return server.createDatabase('app');
}

export const cli: (argv: readonly string[]) => Promise<number> = runCli;
export type Storage = FerryStorage;
`;

/**
 * The suites in use: their module is ESM only (it imports vitest). A CommonJS file names its
 * types with `resolution-mode: import`, as a CommonJS user of an ES-only module does.
 */
function suites(typeImport: string): string {
  return `
${typeImport}
export function registerSuite(suites: { runConnectorSuite(name: string, options: ConnectorSuiteOptions): void }): void {
  suites.runConnectorSuite('relay', {
    plugin: relay,
    secretFields: ['signing_secret'],
    serverless: ['destination'],
    unreachable: async () => ({ url: 'https://127.0.0.1:1/hook' }),
  });
}
`;
}

/** An ES module (`.mts` under nodenext, `.ts` under bundler): every entry imported statically. */
export function esmFixture(entries: readonly Entry[]): string {
  const imports = entries.map((e, i) => `import * as entry${i} from '${e.specifier}';`);
  return [
    '// Every entry of every package, so each declaration file is loaded and checked.',
    ...imports,
    `export const entries = [${entries.map((_, i) => `entry${i}`).join(', ')}];`,
    APPLICATION,
    "import * as suites from '@ferry/testing/suites';",
    suites("import type { ConnectorSuiteOptions } from '@ferry/testing/suites';"),
    'registerSuite(suites);',
    '',
  ].join('\n');
}

/**
 * A CommonJS module (`.cts` under nodenext): the entries with CommonJS types imported (compiled
 * to `require`), the others (`@ferry/testing/suites`, whose `require` leads to a file that
 * throws, and which has no `.d.cts` on purpose) reached with `import()`, as a CommonJS user must;
 * `require`-ing them is expected to fail to compile.
 */
export function cjsFixture(entries: readonly Entry[]): string {
  const lines = ['// Every entry of every package: required where CommonJS may, imported otherwise.'];
  const esmOnly: string[] = [];
  entries.forEach((e, i) => {
    if (e.requireTypes) {
      lines.push(`import * as entry${i} from '${e.specifier}';`, `void entry${i};`);
    } else {
      if (e.requireTarget) {
        lines.push(`// @ts-expect-error: '${e.specifier}' has no CommonJS types; its require target only throws to say so.`);
        lines.push(`import required${i} = require('${e.specifier}');`, `void required${i};`);
      }
      esmOnly.push(`  void (await import('${e.specifier}'));`);
    }
  });
  return [
    ...lines,
    APPLICATION,
    suites("import type { ConnectorSuiteOptions } from '@ferry/testing/suites' with { 'resolution-mode': 'import' };"),
    'export async function esmOnlyEntries(): Promise<void> {',
    ...esmOnly,
    "  registerSuite(await import('@ferry/testing/suites'));",
    '}',
    '',
  ].join('\n');
}

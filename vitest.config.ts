import { defaultClientConditions, defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

/**
 * One vitest run for the whole repository: a project per package plus the cross-package suites
 * in test/. Workspace packages resolve to their TypeScript sources through the `ferry-source`
 * export condition, so tests never depend on a prior build.
 */
export default defineConfig({
  resolve: { conditions: ['ferry-source', ...defaultClientConditions] },
  // Without `module`: a bundler's condition, which Node never applies. Packages such as the AWS
  // SDK list it before `node` and point it at builds with extensionless imports that only a
  // bundler can load; tests run in Node and must resolve what Node resolves.
  ssr: { resolve: { conditions: ['ferry-source', ...defaultServerConditions.filter((c) => c !== 'module')] } },
  test: {
    // Storage suites share one embedded Postgres per worker; keep the load bounded on 2 cores.
    maxWorkers: 2,
    hookTimeout: 60_000,
    testTimeout: 30_000,
    projects: [
      {
        extends: true,
        test: { name: 'core', include: ['packages/core/src/**/*.test.ts'] },
      },
      {
        extends: true,
        test: { name: 'testing', include: ['packages/testing/src/**/*.test.ts', 'packages/test-servers/src/**/*.test.ts'] },
      },
      {
        extends: true,
        test: { name: 'http', include: ['packages/http/src/**/*.test.ts'] },
      },
      {
        extends: true,
        test: { name: 'adapters', include: ['packages/express/src/**/*.test.ts', 'packages/fastify/src/**/*.test.ts', 'packages/console/src/**/*.test.ts'] },
      },
      {
        extends: true,
        test: { name: 'server', include: ['packages/server/src/**/*.test.ts'] },
      },
      {
        extends: true,
        test: { name: 'plugins', include: ['plugins/*/src/**/*.test.ts'] },
      },
      {
        extends: true,
        test: { name: 'examples', include: ['examples/*/src/**/*.test.ts', 'examples/*/*.test.ts'] },
      },
      {
        extends: true,
        test: { name: 'integration', include: ['test/**/*.test.ts'] },
      },
      {
        extends: true,
        test: { name: 'tools', include: ['tools/**/*.test.ts'] },
      },
    ],
  },
});

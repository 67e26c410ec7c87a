import type { Options } from 'tsup';

/**
 * The build every published package shares: ESM and CommonJS, each with its declarations and
 * source maps, for Node 20 and later. While bundling, a workspace import resolves to the other
 * package's sources (the `ferry-source` condition), as tests do; what ships resolves to its build.
 *
 * `shims` gives the CommonJS build `import.meta.url` (createRequire, knex's dialect classes,
 * s3rver's location): on for every package, since one that uses it without the shim throws on
 * `require`, which the packaging test caught once.
 *
 * @param entry - the package's entries (`src/index.ts`, ...).
 * @param options - what this package adds or changes (`splitting`, ...).
 */
export function packageBuild(entry: string[], options: Options = {}): Options {
  // `FERRY_BUILD=run` (scripts/ensure-built.mjs, before `npm start`) builds only what running
  // the server needs: ESM, no declarations (most of a build's time), no CommonJS. turbo.json
  // names the variable, so the two builds never share a cache entry.
  const runOnly = process.env.FERRY_BUILD === 'run';
  return {
    entry,
    format: runOnly ? ['esm'] : ['esm', 'cjs'],
    dts: !runOnly,
    sourcemap: true,
    clean: true,
    target: 'node20',
    shims: true,
    esbuildOptions(esbuild) {
      esbuild.conditions = ['ferry-source'];
    },
    ...options,
  };
}

import { defineConfig } from 'tsup';

/**
 * The page: one ES module and one style sheet in dist/assets, with Preact and uPlot bundled in,
 * so that nothing is fetched from anywhere but the host at run time. Runs after the server build
 * (which cleans dist), never in parallel with it.
 */
export default defineConfig({
  entry: { console: 'src/app/main.tsx' },
  outDir: 'dist/assets',
  format: ['esm'],
  platform: 'browser',
  target: ['chrome109', 'firefox115', 'safari16'],
  minify: true,
  sourcemap: false,
  clean: false,
  dts: false,
  splitting: false,
  noExternal: [/.*/],
  tsconfig: 'tsconfig.app.json',
  outExtension: () => ({ js: '.js' }),
  esbuildOptions(options) {
    options.jsx = 'automatic';
    options.jsxImportSource = 'preact';
    options.legalComments = 'none';
  },
});

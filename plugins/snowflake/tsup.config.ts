import { defineConfig } from 'tsup';

export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  // import.meta.url (createRequire for the driver's internals, in outbound.ts) also in the
  // CommonJS build: without the shim it is undefined there and require('@ferry/snowflake') throws.
  shims: true,
  // Tests live beside the code; they are not part of the published build.
  esbuildOptions(options) {
    options.conditions = ['ferry-source'];
  },
});

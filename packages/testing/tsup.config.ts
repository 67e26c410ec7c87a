import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.base.js';

// `suites` is built as CommonJS too, but package.json sends `require` to suites.cjs, which
// says why it cannot be required: the suites import vitest, which is ESM only.
export default defineConfig(packageBuild(['src/index.ts', 'src/suites.ts']));

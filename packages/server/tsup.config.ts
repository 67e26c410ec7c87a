import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.base.js';

// The library entry and the CLI (the ferry bin).
export default defineConfig(packageBuild(['src/index.ts', 'src/main.ts']));

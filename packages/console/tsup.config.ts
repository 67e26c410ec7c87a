import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.base.js';

// The server side: what serves the page. The page itself is built by tsup.app.config.ts.
export default defineConfig(packageBuild(['src/index.ts']));

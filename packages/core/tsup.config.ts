import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.base.js';

// The stable entry and the internal one (Ferry's own packages). They share one copy of every
// module (splitting, for CommonJS too), so a class has one identity whichever entry it came from.
export default defineConfig(packageBuild(['src/index.ts', 'src/internal.ts'], { splitting: true }));

import path from 'node:path';
import { RuleTester } from 'eslint';
import tseslint from 'typescript-eslint';
import { afterAll, describe, it } from 'vitest';
import plugin from './package-boundaries.js';

// RuleTester looks for mocha-style globals; hand it vitest's (its typings omit these hooks).
Object.assign(RuleTester, { afterAll, describe, it, itOnly: it.only });

const tester = new RuleTester({ languageOptions: { parser: tseslint.parser as never, ecmaVersion: 2022, sourceType: 'module' } });
const file = (rel: string) => path.join(process.cwd(), 'packages/core/src', rel);

tester.run('core-folders', plugin.rules['core-folders'], {
  valid: [
    { filename: file('pipelines/pipeline-flow.ts'), code: "import { x } from './batch-commit.js';" },
    { filename: file('pipelines/transforms/cast.ts'), code: "import { x } from '../event-processor.js';" },
    { filename: file('pipelines/pipeline-flow.ts'), code: "import { x } from '../storage/index.js';" },
    { filename: file('storage/repositories/runs-repo.ts'), code: "import { LeasedQueue } from '../../queue/index.js';" },
    { filename: file('index.ts'), code: "export { createEngine } from './engine/index.js';" },
    { filename: file('storage/repositories/runs-repo.ts'), code: "import { x } from '../sql-helpers.js';" },
    { filename: path.join(process.cwd(), 'packages/http/src/a.ts'), code: "import { x } from './b/c.js';" },
  ],
  invalid: [
    { filename: file('pipelines/pipeline-flow.ts'), code: "import { x } from '../storage/repositories/runs-repo.js';", errors: [{ messageId: 'pastIndex' }] },
    { filename: file('index.ts'), code: "export { createEngine } from './engine/engine.js';", errors: [{ messageId: 'pastIndex' }] },
    { filename: file('storage/repositories/runs-repo.ts'), code: "import { LeasedQueue } from '../../queue/leases.js';", errors: [{ messageId: 'pastIndex' }] },
    { filename: file('events/replay-worker.ts'), code: "const m = await import('../pipelines/pipeline-flow.js');", errors: [{ messageId: 'pastIndex' }] },
  ],
});

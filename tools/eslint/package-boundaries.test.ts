import path from 'node:path';
import { RuleTester } from 'eslint';
import tseslint from 'typescript-eslint';
import { afterAll, describe, it } from 'vitest';
import plugin from './package-boundaries.js';

// RuleTester looks for mocha-style globals; hand it vitest's (its typings omit these hooks).
Object.assign(RuleTester, { afterAll, describe, it, itOnly: it.only });

const tester = new RuleTester({ languageOptions: { parser: tseslint.parser as never, ecmaVersion: 2022, sourceType: 'module' } });
const file = (rel: string) => path.join(process.cwd(), rel);

tester.run('package-boundaries', plugin.rules['package-boundaries'], {
  valid: [
    { filename: file('packages/core/src/engine/engine.ts'), code: "import { x } from './engine-context.js';" },
    { filename: file('packages/core/src/events/a.ts'), code: "import { x } from '../common/index.js';" },
    { filename: file('packages/testing/src/index.ts'), code: "import { createEngine } from '@ferry/core';" },
    { filename: file('plugins/webhook/tsup.config.ts'), code: "import { packageBuild } from '../../tsup.base.js';" },
    { filename: file('plugins/postgres/src/index.ts'), code: "import { defineConnector } from '@ferry/core';" },
    { filename: file('plugins/postgres/src/source.test.ts'), code: "import { getSharedTestPostgres } from '@ferry/test-servers';" },
    { filename: file('plugins/s3/src/test-store.ts'), code: "import { startTestS3 } from '@ferry/test-servers';" },
    { filename: file('packages/express/src/index.ts'), code: "import { createHttpApi } from '@ferry/http';" },
    { filename: file('test/storage/sqlite.test.ts'), code: "import { runStorageSuite } from '@ferry/testing/suites';" },
    { filename: file('plugins/webhook/src/connector-suite.test.ts'), code: "import { runConnectorSuite } from '@ferry/testing/suites';" },
    { filename: file('packages/test-servers/src/snowflake-server.ts'), code: "import { listenLoopback } from '@ferry/testing';" },
    { filename: file('examples/embedded/src/main.ts'), code: "import { createEngine } from '@ferry/core';" },
    { filename: file('packages/http/src/a.ts'), code: "import { inputSchemas } from '@ferry/core/internal';" },
    { filename: file('packages/server/src/a.ts'), code: "import { openStorage } from '@ferry/core/internal';" },
    { filename: file('test/storage/a.test.ts'), code: "import { LeasesRepo } from '@ferry/core/internal';" },
    { filename: file('plugins/s3/src/s3.test.ts'), code: "import { createConnectorOutbound } from '@ferry/core/internal';" },
    { filename: file('packages/console/src/app/records.ts'), code: "import type { Connector } from '@ferry/core';" },
    { filename: file('packages/console/src/app/records.ts'), code: "export type { Run } from '@ferry/core';" },
    { filename: file('packages/console/src/app/records.ts'), code: "export type * from '@ferry/core';" },
  ],
  invalid: [
    { filename: file('packages/testing/src/a.ts'), code: "import { x } from '../../core/src/errors.js';", errors: [{ messageId: 'leavesPackage' }] },
    { filename: file('plugins/s3/src/a.ts'), code: "export * from '../../kafka/src/index.js';", errors: [{ messageId: 'leavesPackage' }] },
    { filename: file('test/a.test.ts'), code: "import { x } from '@ferry/core/src/errors.js';", errors: [{ messageId: 'deepImport' }] },
    { filename: file('packages/http/src/a.ts'), code: "import { x } from '@ferry/core/dist/index.js';", errors: [{ messageId: 'deepImport' }] },
    { filename: file('packages/core/src/a.ts'), code: "import { VirtualClock } from '@ferry/testing';", errors: [{ messageId: 'layer' }] },
    { filename: file('plugins/kafka/src/a.ts'), code: "import { createHttpApi } from '@ferry/http';", errors: [{ messageId: 'layer' }] },
    { filename: file('plugins/postgres/src/source.ts'), code: "import { getSharedTestPostgres } from '@ferry/test-servers';", errors: [{ messageId: 'layer' }] },
    { filename: file('plugins/s3/src/latest-test.ts'), code: "import { startTestS3 } from '@ferry/test-servers';", errors: [{ messageId: 'layer' }] },
    { filename: file('plugins/webhook/src/source.ts'), code: "import { runConnectorSuite } from '@ferry/testing/suites';", errors: [{ messageId: 'layer' }] },
    { filename: file('packages/test-servers/src/a.ts'), code: "import { createEngine } from '@ferry/core';", errors: [{ messageId: 'layer' }] },
    { filename: file('test/storage/a.test.ts'), code: "import { x } from '@ferry/testing/src/storage-suite.js';", errors: [{ messageId: 'deepImport' }] },
    { filename: file('plugins/postgres/src/source.test.ts'), code: "import { createHttpApi } from '@ferry/http';", errors: [{ messageId: 'layer' }] },
    { filename: file('packages/http/src/a.ts'), code: "const m = await import('@ferry/express');", errors: [{ messageId: 'layer' }] },
    { filename: file('plugins/s3/src/source.ts'), code: "import { openStorage } from '@ferry/core/internal';", errors: [{ messageId: 'layer' }] },
    { filename: file('packages/express/src/a.ts'), code: "import { ERROR_STATUS } from '@ferry/core/internal';", errors: [{ messageId: 'layer' }] },
    { filename: file('examples/embedded/src/main.ts'), code: "import { openStorage } from '@ferry/core/internal';", errors: [{ messageId: 'layer' }] },
    { filename: file('test/a.test.ts'), code: "import { x } from '@ferry/core/internal/more';", errors: [{ messageId: 'deepImport' }] },
    { filename: file('packages/console/src/app/data.ts'), code: "import { isFerryError } from '@ferry/core';", errors: [{ messageId: 'typesOnly' }] },
    { filename: file('packages/console/src/app/data.ts'), code: "import { type Connector } from '@ferry/core';", errors: [{ messageId: 'typesOnly' }] },
    { filename: file('packages/console/src/index.ts'), code: "export { type Run } from '@ferry/core';", errors: [{ messageId: 'typesOnly' }] },
    { filename: file('packages/console/src/index.ts'), code: "export * from '@ferry/core';", errors: [{ messageId: 'typesOnly' }] },
    { filename: file('packages/console/src/app/data.ts'), code: "const core = await import('@ferry/core');", errors: [{ messageId: 'typesOnly' }] },
    { filename: file('packages/console/src/app/records.ts'), code: "import type { ConnectorRow } from '@ferry/core/internal';", errors: [{ messageId: 'layer' }] },
    { filename: file('packages/console/src/app/records.ts'), code: "import type { Connector } from '@ferry/http';", errors: [{ messageId: 'layer' }] },
  ],
});

'use strict';
// The suites register vitest tests, and vitest can only be imported, never required.
throw new Error("@ferry/testing/suites runs under vitest, which is ESM only: import it (import { runConnectorSuite } from '@ferry/testing/suites') from a test file instead of require().");

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sqliteStorage } from '@ferry/core';
import { runRuntimeSuite } from './runtime-suite.js';

// A file, not :memory:, so a second engine (a restart, another instance) opens the same database.
runRuntimeSuite('sqlite', async () => {
  const filename = join(mkdtempSync(join(tmpdir(), 'ferry-runtime-')), 'ferry.db');
  return { config: () => sqliteStorage({ filename }) };
});

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sqliteStorage } from '@ferry/core';
import { runDeliverySuite } from './delivery-suite.js';

// A file, not :memory:, so a second engine opens the same database.
runDeliverySuite('sqlite', async () => {
  const filename = join(mkdtempSync(join(tmpdir(), 'ferry-webhooks-')), 'ferry.db');
  return { config: () => sqliteStorage({ filename }) };
});

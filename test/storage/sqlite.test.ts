import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sqlite } from '@ferry/core';
import { runEngineStorageSuite, runStorageSuite } from '@ferry/testing';

runStorageSuite('sqlite (memory)', async () => sqlite({ filename: ':memory:' }));
runEngineStorageSuite('sqlite (memory)', async () => sqlite({ filename: ':memory:' }));

// A file database runs with WAL and BEGIN IMMEDIATE, as `ferry serve` does.
const dir = mkdtempSync(join(tmpdir(), 'ferry-sqlite-'));
let n = 0;
runStorageSuite('sqlite (file)', async () => sqlite({ filename: join(dir, `db-${++n}.sqlite`) }));

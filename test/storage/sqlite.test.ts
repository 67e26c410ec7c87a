import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sqliteStorage } from '@ferry/core';
import { runEngineStorageSuite, runStorageSuite } from '@ferry/testing/suites';

runStorageSuite('sqliteStorage (memory)', async () => sqliteStorage({ filename: ':memory:' }));
runEngineStorageSuite('sqliteStorage (memory)', async () => sqliteStorage({ filename: ':memory:' }));

// A file database runs with WAL and BEGIN IMMEDIATE, as `ferry serve` does.
const dir = mkdtempSync(join(tmpdir(), 'ferry-sqlite-'));
let n = 0;
runStorageSuite('sqliteStorage (file)', async () => sqliteStorage({ filename: join(dir, `db-${++n}.sqlite`) }));

import { postgresStorage } from '@ferry/core';
import { runEngineStorageSuite, runStorageSuite } from '@ferry/testing/suites';
import { getSharedTestPostgres } from '@ferry/test-servers';

const factory = async () => postgresStorage({ connectionString: await (await getSharedTestPostgres()).createDatabase('storage') });

runStorageSuite('postgres', factory);
runEngineStorageSuite('postgres', factory);

import { postgresStorage } from '@ferry/core';
import { getSharedTestPostgres, runEngineStorageSuite, runStorageSuite } from '@ferry/testing';

const factory = async () => postgresStorage({ connectionString: await (await getSharedTestPostgres()).createDatabase('storage') });

runStorageSuite('postgres', factory);
runEngineStorageSuite('postgres', factory);

import { postgresStorage } from '@ferry/core';
import { getSharedTestPostgres } from '@ferry/test-servers';
import { runRuntimeSuite } from './runtime-suite.js';

runRuntimeSuite('postgres', async () => {
  const connectionString = await (await getSharedTestPostgres()).createDatabase('runtime');
  return { config: () => postgresStorage({ connectionString }) };
});

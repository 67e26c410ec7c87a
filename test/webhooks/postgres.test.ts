import { postgresStorage } from '@ferry/core';
import { getSharedTestPostgres } from '@ferry/test-servers';
import { runDeliverySuite } from './delivery-suite.js';

runDeliverySuite('postgres', async () => {
  const connectionString = await (await getSharedTestPostgres()).createDatabase('webhooks');
  return { config: () => postgresStorage({ connectionString }) };
});

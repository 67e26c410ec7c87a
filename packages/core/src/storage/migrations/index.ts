import type { Knex } from 'knex';
import * as initial from './0001-initial.js';
import * as openStatusIndex from './0002-events-open-status-index.js';
import * as deliveriesDueIndex from './0003-deliveries-due-index.js';
import * as eventsListingIndexes from './0004-events-listing-indexes.js';
import * as pipelineMinutes from './0005-pipeline-minutes.js';
import * as pipelineEventLog from './0006-pipeline-event-log.js';
import * as pipelineHolds from './0007-pipeline-holds.js';
import * as eventLogUnits from './0008-event-log-units.js';
import * as backfills from './0009-backfills.js';
import * as eventKeySpans from './0010-event-key-spans.js';

interface Migration {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

const MIGRATIONS: ReadonlyArray<readonly [string, Migration]> = [
  ['0001-initial', initial],
  ['0002-events-open-status-index', openStatusIndex],
  ['0003-deliveries-due-index', deliveriesDueIndex],
  ['0004-events-listing-indexes', eventsListingIndexes],
  ['0005-pipeline-minutes', pipelineMinutes],
  ['0006-pipeline-event-log', pipelineEventLog],
  ['0007-pipeline-holds', pipelineHolds],
  ['0008-event-log-units', eventLogUnits],
  ['0009-backfills', backfills],
  ['0010-event-key-spans', eventKeySpans],
];

/**
 * Migrations compiled into the package rather than read from a folder, so they work the same
 * from the sources, from the bundled build and from any host application's bundle.
 */
export const migrationSource: Knex.MigrationSource<readonly [string, Migration]> = {
  getMigrations: async () => [...MIGRATIONS],
  getMigrationName: (migration) => migration[0],
  getMigration: async (migration) => migration[1],
};

/** The table knex records applied migrations in. */
export const MIGRATIONS_TABLE = 'ferry_migrations';

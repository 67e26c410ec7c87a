/**
 * Backfills: the service (asked for, listed, cancelled), the requests a pipeline's source is
 * given, what its reports record, and the feed of changes.
 */
export { BackfillFeed } from './backfill-feed.js';
export { backfillProgressOf, recordBackfillReport } from './backfill-reports.js';
export { backfillRequests, backfillRequestsVersion } from './backfill-requests.js';
export { BackfillsService } from './backfills-service.js';

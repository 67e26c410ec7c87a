/**
 * Work claimed under leases: named leases, the leased queue (runs, replays, deliveries), the lease
 * keeper, rounds of queue work, and the one retry policy (capped exponential backoff).
 */
export { CoalescedPump } from './coalesced-pump.js';
export { LeaseKeeper, pipelineLeaseName } from './lease-keeper.js';
export { LeasedQueue, LeasesRepo, type Claim, type ClaimOptions, type LeaseGrant, type LeasedQueueSpec } from './leases.js';
export { MAX_BACKOFF_ATTEMPT, backoffDelay, type BackoffPolicy } from './retry-policy.js';

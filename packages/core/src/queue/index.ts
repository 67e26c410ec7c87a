/**
 * Doing work under leases: the lease keeper (holds a lease, renews it, tells when it is lost),
 * rounds of queue work, and the one retry policy (capped exponential backoff). The leases and the
 * leased queue themselves are rows: `storage/leases.ts`.
 */
export { CoalescedPump } from './coalesced-pump.js';
export { LeaseKeeper, pipelineLeaseName } from './lease-keeper.js';
export { MAX_BACKOFF_ATTEMPT, backoffDelay, type BackoffPolicy } from './retry-policy.js';

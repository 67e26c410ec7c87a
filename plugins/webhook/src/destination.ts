import { createHash } from 'node:crypto';
import { ConnectorError, webhookHeaders, type Clock, type Destination, type DestinationEvent, type OutboundClient, type WriteResult } from '@ferry/core';

/** What an open destination needs, resolved and checked when it is opened. */
export interface DestinationSettings {
  url: string;
  /** The connector's signing secret (`whsec_...`). */
  secret: string;
  batchSize: number;
  /** Most requests of one write in flight at once. */
  concurrency: number;
  timeoutMs: number;
  headers: Record<string, string>;
  clock: Clock;
  userAgent: string;
}

/**
 * The `webhook-id` of a batch request: derived from its event ids, so a batch sent again after a
 * failure carries the same id and receivers can deduplicate it like a single event.
 */
export function batchId(eventIds: readonly string[]): string {
  return 'bat_' + createHash('sha256').update(eventIds.join('\n')).digest('hex').slice(0, 26);
}

/** The wire form of one event (the README's `batch_size`: `{ id, type, occurred_at, payload }`). */
function wire(event: DestinationEvent) {
  return { id: event.id, type: event.type, occurred_at: event.occurredAt, payload: event.payload };
}

// Every accepted event gets this one result: a write of thousands of events need not allocate
// thousands of identical objects. Frozen, as it is shared.
const ACCEPTED: WriteResult = Object.freeze({ ok: true as const });

/**
 * A destination that POSTs each chunk of `batchSize` events as one signed request, up to
 * `concurrency` of a write's chunks at once, taken in order. A 2xx accepts the chunk; 408, 429,
 * 5xx, a timeout or a network error fail the whole write as retryable; any other status (3xx
 * included: redirects are never followed) rejects the chunk's events. Results come back in the
 * order of the events, whatever order the answers arrive in.
 */
export function webhookDestination(settings: DestinationSettings, client: OutboundClient): Destination {
  return {
    async write(events, signal) {
      const size = settings.batchSize;
      const chunks = Math.ceil(events.length / size);
      const results: WriteResult[] = new Array<WriteResult>(events.length);
      let next = 0;
      // The failure of the earliest failed chunk: the write throws it once every request in
      // flight has settled, so a retry of the batch never overlaps requests of this attempt.
      let failedAt = Infinity;
      let failure: unknown;
      const lane = async () => {
        // After a failure no new chunk starts: the whole batch is going to be sent again.
        while (failedAt === Infinity && next < chunks) {
          const index = next++;
          const start = index * size;
          const end = Math.min(start + size, events.length);
          try {
            const result = await sendChunk(events.slice(start, end), settings, client, signal);
            results.fill(result, start, end);
          } catch (error) {
            if (index < failedAt) [failedAt, failure] = [index, error];
          }
        }
      };
      const lanes: Promise<void>[] = [];
      for (let n = Math.min(settings.concurrency, chunks); n > 0; n--) lanes.push(lane());
      await Promise.all(lanes);
      if (failedAt !== Infinity) throw failure;
      return results;
    },
  };
}

/**
 * Sends one chunk. Resolves with the result of each of its events (one object, shared: a
 * request is accepted or refused as a whole); throws a retryable error for the whole write.
 */
async function sendChunk(chunk: readonly DestinationEvent[], s: DestinationSettings, client: OutboundClient, signal: AbortSignal): Promise<WriteResult> {
  const single = s.batchSize === 1;
  // Serialized and encoded once: the same bytes are signed and sent.
  const body = Buffer.from(JSON.stringify(single ? wire(chunk[0]!) : { events: chunk.map(wire) }));
  const id = single ? chunk[0]!.id : batchId(chunk.map((e) => e.id));
  const headers = {
    ...s.headers,
    'content-type': 'application/json',
    'user-agent': s.userAgent,
    ...webhookHeaders({ id, timestamp: Math.floor(s.clock.now() / 1000), body }, [s.secret]),
  };
  const outcome = await client.send({ url: s.url, method: 'POST', headers, body, timeoutMs: s.timeoutMs, signal, clock: s.clock });
  switch (outcome.kind) {
    case 'timeout':
      throw new ConnectorError('timeout', `The webhook receiver did not answer within ${s.timeoutMs} ms.`, { retryable: true });
    case 'network':
      throw new ConnectorError('unreachable', `The webhook receiver could not be reached (${outcome.code}).`, { retryable: true });
    // The URL passed the policy when the destination opened, so this is its resolved address
    // (or a rule the client adds): not retryable, as the address will not become public by waiting.
    case 'blocked':
      return rejected('url_not_allowed', outcome.reason);
    case 'response': {
      const status = outcome.status;
      if (status >= 200 && status < 300) return ACCEPTED;
      if (status === 408 || status === 429 || status >= 500) {
        throw new ConnectorError(status === 429 ? 'throttled' : 'receiver_failed', `HTTP ${status}`, { retryable: true });
      }
      return rejected('rejected', `HTTP ${status}`);
    }
  }
}

/** The one result every event of a refused request gets: a request is refused as a whole. */
function rejected(code: string, message: string): WriteResult {
  return Object.freeze({ ok: false as const, error: new ConnectorError(code, message, { retryable: false }) });
}

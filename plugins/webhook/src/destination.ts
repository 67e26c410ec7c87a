import { createHash } from 'node:crypto';
import { ConnectorError, webhookHeaders, type Clock, type Destination, type DestinationEvent, type OutboundClient, type WriteResult } from '@ferry/core';

/** What an open destination needs, resolved and checked when it is opened. */
export interface DestinationSettings {
  url: string;
  /** The connector's signing secret (`whsec_...`). */
  secret: string;
  batchSize: number;
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

/** The wire form of one event (contract section 13). */
function wire(event: DestinationEvent) {
  return { id: event.id, type: event.type, occurred_at: event.occurredAt, payload: event.payload };
}

function rejectAll(count: number, code: string, message: string): WriteResult[] {
  const error = new ConnectorError(code, message, { retryable: false });
  return Array.from({ length: count }, () => ({ ok: false as const, error }));
}

/**
 * A destination that POSTs each chunk of `batchSize` events as one signed request. A 2xx accepts
 * the chunk; 408, 429, 5xx, a timeout or a network error fail the whole write as retryable; any
 * other status (3xx included: redirects are never followed) rejects the chunk's events.
 */
export function webhookDestination(settings: DestinationSettings, client: OutboundClient): Destination {
  return {
    async write(events, signal) {
      const results: WriteResult[] = [];
      for (let start = 0; start < events.length; start += settings.batchSize) {
        const chunk = events.slice(start, start + settings.batchSize);
        results.push(...(await sendChunk(chunk, settings, client, signal)));
      }
      return results;
    },
  };
}

async function sendChunk(chunk: readonly DestinationEvent[], s: DestinationSettings, client: OutboundClient, signal: AbortSignal): Promise<WriteResult[]> {
  const single = s.batchSize === 1;
  const body = JSON.stringify(single ? wire(chunk[0]!) : { events: chunk.map(wire) });
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
      return rejectAll(chunk.length, 'url_not_allowed', outcome.reason);
    case 'response': {
      const status = outcome.status;
      if (status >= 200 && status < 300) return chunk.map(() => ({ ok: true as const }));
      if (status === 408 || status === 429 || status >= 500) {
        throw new ConnectorError(status === 429 ? 'throttled' : 'receiver_failed', `HTTP ${status}`, { retryable: true });
      }
      return rejectAll(chunk.length, 'rejected', `HTTP ${status}`);
    }
  }
}

import { createHash } from 'node:crypto';
import { ConnectorError, sleep, webhookHeaders, type Clock, type Destination, type DestinationEvent, type OutboundClient, type WriteResult } from '@ferry/core';

/** How one request ended, as the outbound client tells it. */
type OutboundResult = Awaited<ReturnType<OutboundClient['send']>>;

/** What an open destination needs, resolved and checked when it is opened. */
export interface DestinationSettings {
  url: string;
  /** The connector's signing secret (`whsec_...`). */
  secret: string;
  batchSize: number;
  /** Most requests of one write in flight at once. */
  concurrency: number;
  timeoutMs: number;
  /** Times a request that failed transiently is sent again within one write (0: never). */
  retries: number;
  headers: Record<string, string>;
  clock: Clock;
  userAgent: string;
  /** Draws the jitter of retry delays, in [0, 1); default `Math.random` (tests pin it). */
  random?: () => number;
}

/**
 * Ceiling of the first delayed retry's delay, in milliseconds; each further retry doubles it, up
 * to {@link RETRY_MAX_DELAY_MS}, and the delay is drawn uniformly below the ceiling (full
 * jitter, so a write's lanes, and several engines, do not retry in step).
 *
 * The first retry of a failure other than a 429 is not delayed at all: retries happen only
 * while the receiver has been accepting requests, and there one bad answer (a bad backend, a
 * connection dropped) is most often followed by a good one at once. A delay there is paid in
 * full by the write, which waits for its slowest request: with 5 % of the requests failing, a
 * first delay of up to 50 ms halved the throughput against a nearby receiver
 * (`bench/connectors/webhook.bench.ts`, the transient case), while with an immediate first retry
 * it stayed within the runs' noise of the rate without failures. Failing again says the
 * receiver needs a moment: the next retries wait. A 429 asks the sender to slow down, so its
 * first retry waits too.
 */
export const RETRY_BASE_DELAY_MS = 50;
/**
 * The longest delay before one retry, in milliseconds. A receiver that needs longer is failing,
 * not blipping: that is for the engine's hold (about a second, doubling up to a minute), which
 * reports the connector's health and which a config change cuts short.
 */
export const RETRY_MAX_DELAY_MS = 1000;
/**
 * The longest `Retry-After` a retry waits for, in milliseconds; the longest delay, for the same
 * reason. A longer one fails the write at once and leaves the wait to the engine.
 */
export const MAX_RETRY_AFTER_MS = RETRY_MAX_DELAY_MS;

/**
 * The `webhook-id` of a batch request: derived from its event ids, so a batch sent again after a
 * failure carries the same id and receivers can deduplicate it like a single event.
 */
export function batchId(eventIds: readonly string[]): string {
  return 'bat_' + createHash('sha256').update(eventIds.join('\n')).digest('hex').slice(0, 26);
}

/**
 * The delay before a retry, in milliseconds: none for the first retry of a failure that is not a
 * throttling (`retry` 1, `throttled` false), then drawn uniformly below a ceiling of
 * {@link RETRY_BASE_DELAY_MS} that doubles at each further retry, capped at
 * {@link RETRY_MAX_DELAY_MS} (full jitter). A throttled request's first retry already waits.
 */
export function retryDelay(retry: number, throttled: boolean, random: () => number = Math.random): number {
  const step = throttled ? retry : retry - 1;
  if (step < 1) return 0;
  const ceiling = Math.min(RETRY_MAX_DELAY_MS, RETRY_BASE_DELAY_MS * 2 ** Math.min(step - 1, 30));
  return Math.floor(random() * ceiling);
}

/**
 * A `Retry-After` header's wait in milliseconds from `now`: delta-seconds or an HTTP date (one
 * in the past is 0); undefined when absent or not understood.
 */
export function retryAfterMs(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // An HTTP date starts with its day name (`Sun, 06 Nov 1994 08:49:37 GMT`, or an obsolete
  // form): checked first, as Date.parse takes about anything, `-1` included, for a date.
  if (!/^[A-Za-z]{3,9},? /.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** The wire form of one event (the README's `batch_size`: `{ id, type, occurred_at, payload }`). */
function wire(event: DestinationEvent) {
  return { id: event.id, type: event.type, occurred_at: event.occurredAt, payload: event.payload };
}

// Every accepted event gets this one result: a write of thousands of events need not allocate
// thousands of identical objects. Frozen, as it is shared.
const ACCEPTED: WriteResult = Object.freeze({ ok: true as const });

/** A failed request: the error the write throws if it is not retried, and whether to retry. */
interface Failure {
  error: ConnectorError;
  /** Worth sending again within the write: a timeout, a broken connection, 408, 429, 500, 502, 503, 504. */
  transient: boolean;
  /** A 429: the receiver asks for fewer requests, so no retry is sent at once. */
  throttled: boolean;
  /** The receiver's `Retry-After`, in milliseconds, when it sent one. */
  retryAfterMs?: number;
}

/**
 * The statuses a retry within the write may fix. Other 5xx (501, 505...) say the receiver cannot
 * take the request at all: they still fail the write as retryable, for the engine's hold.
 */
const TRANSIENT_STATUSES = new Set([408, 429, 500, 502, 503, 504]);

/**
 * A destination that POSTs each chunk of `batchSize` events as one signed request, up to
 * `concurrency` of a write's chunks at once, taken in order. A 2xx accepts the chunk. A timeout,
 * a network error, 408, 429, 500, 502, 503 or 504 is sent again (the same events and
 * `webhook-id`, signed anew) up to `retries` times within the write, at once and then after
 * short jittered delays on the context clock (see {@link retryDelay}): one bad answer among many
 * does not hold the engine's flow. When the retries run out, a `Retry-After` is longer than
 * {@link MAX_RETRY_AFTER_MS}, or another 5xx answers, the whole write fails as retryable and the
 * engine holds the flow. Any other status (3xx included: redirects are never followed) rejects
 * the chunk's events. Results come back in the order of the events, whatever order the answers
 * arrive in.
 *
 * Retries within a write start only once the receiver has accepted a request of this
 * destination, and stop after a write failed until it accepts one again. A receiver that has
 * not shown it works (a wrong url, a receiver down) is the engine hold's case: the hold reports
 * it, and a config change cuts it short and sends the batch with the new settings, where retries
 * inside the write would keep sending it to the old url.
 */
export function webhookDestination(settings: DestinationSettings, client: OutboundClient): Destination {
  const random = settings.random ?? Math.random;
  // See above: whether a failed request may be retried within its write.
  let accepting = false;
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
      // Ends the retry delays of the write: on the caller's abort, or once a chunk failed for
      // good (the whole batch is going to be sent again, so retrying the others is waste).
      const stop = new AbortController();
      const onAbort = () => stop.abort(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });

      /** Sends one chunk, and again while it fails transiently and retries are allowed. */
      const deliver = async (chunk: readonly DestinationEvent[]): Promise<WriteResult> => {
        const request = requestOf(chunk, settings.batchSize === 1);
        for (let retry = 1; ; retry++) {
          const outcome = judge(await send(request, settings, client, signal), settings);
          if (!('transient' in outcome)) {
            if (outcome === ACCEPTED) accepting = true;
            return outcome;
          }
          if (!outcome.transient || retry > settings.retries || !accepting || failedAt !== Infinity) throw outcome.error;
          // A receiver asking for longer than a retry may wait gets the engine's hold instead.
          if (outcome.retryAfterMs !== undefined && outcome.retryAfterMs > MAX_RETRY_AFTER_MS) throw outcome.error;
          const delay = Math.max(outcome.retryAfterMs ?? 0, retryDelay(retry, outcome.throttled, random));
          if (delay > 0) {
            try {
              await sleep(settings.clock, delay, stop.signal);
            } catch {
              throw signal.aborted ? signal.reason : outcome.error;
            }
          }
        }
      };

      const lane = async () => {
        // After a failure no new chunk starts: the whole batch is going to be sent again.
        while (failedAt === Infinity && next < chunks) {
          const index = next++;
          const start = index * size;
          const end = Math.min(start + size, events.length);
          try {
            results.fill(await deliver(events.slice(start, end)), start, end);
          } catch (error) {
            if (index < failedAt) [failedAt, failure] = [index, error];
            stop.abort();
          }
        }
      };
      const lanes: Promise<void>[] = [];
      for (let n = Math.min(settings.concurrency, chunks); n > 0; n--) lanes.push(lane());
      try {
        await Promise.all(lanes);
      } finally {
        signal.removeEventListener('abort', onAbort);
      }
      if (failedAt !== Infinity) {
        // Failing for good: no more retries until the receiver accepts a request again.
        accepting = false;
        throw signal.aborted ? signal.reason : failure;
      }
      return results;
    },
  };
}

/** A chunk's request, made once for all its attempts: the same body and `webhook-id` each time. */
interface ChunkRequest {
  id: string;
  body: Buffer;
}

function requestOf(chunk: readonly DestinationEvent[], single: boolean): ChunkRequest {
  // Serialized and encoded once: the same bytes are signed and sent, on every attempt.
  const body = Buffer.from(JSON.stringify(single ? wire(chunk[0]!) : { events: chunk.map(wire) }));
  return { id: single ? chunk[0]!.id : batchId(chunk.map((e) => e.id)), body };
}

/**
 * Sends one attempt of a request, signed with the clock's time now (an attempt's timestamp is
 * when it was sent, as for a webhook delivery's retry). Rejects only with the caller's abort.
 */
function send(request: ChunkRequest, s: DestinationSettings, client: OutboundClient, signal: AbortSignal): Promise<OutboundResult> {
  const { id, body } = request;
  const headers = {
    ...s.headers,
    'content-type': 'application/json',
    'user-agent': s.userAgent,
    ...webhookHeaders({ id, timestamp: Math.floor(s.clock.now() / 1000), body }, [s.secret]),
  };
  return client.send({ url: s.url, method: 'POST', headers, body, timeoutMs: s.timeoutMs, signal, clock: s.clock });
}

/**
 * What an attempt's outcome means: the result of each of the chunk's events (one object, shared:
 * a request is accepted or refused as a whole), or a failure of the whole write.
 */
function judge(outcome: OutboundResult, s: DestinationSettings): WriteResult | Failure {
  switch (outcome.kind) {
    case 'timeout':
      return { error: new ConnectorError('timeout', `The webhook receiver did not answer within ${s.timeoutMs} ms.`, { retryable: true }), transient: true, throttled: false };
    case 'network':
      return { error: new ConnectorError('unreachable', `The webhook receiver could not be reached (${outcome.code}).`, { retryable: true }), transient: true, throttled: false };
    // The URL passed the policy when the destination opened, so this is its resolved address
    // (or a rule the client adds): not retryable, as the address will not become public by waiting.
    case 'blocked':
      return rejected('url_not_allowed', outcome.reason);
    case 'response': {
      const status = outcome.status;
      if (status >= 200 && status < 300) return ACCEPTED;
      if (status === 408 || status === 429 || status >= 500) {
        const error = new ConnectorError(status === 429 ? 'throttled' : 'receiver_failed', `HTTP ${status}`, { retryable: true });
        const wait = retryAfterMs(outcome.headers['retry-after'], s.clock.now());
        return { error, transient: TRANSIENT_STATUSES.has(status), throttled: status === 429, ...(wait === undefined ? {} : { retryAfterMs: wait }) };
      }
      return rejected('rejected', `HTTP ${status}`);
    }
  }
}

/** The one result every event of a refused request gets: a request is refused as a whole. */
function rejected(code: string, message: string): WriteResult {
  return Object.freeze({ ok: false as const, error: new ConnectorError(code, message, { retryable: false }) });
}

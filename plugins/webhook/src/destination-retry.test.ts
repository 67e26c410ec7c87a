import { createHmac, timingSafeEqual } from 'node:crypto';
import { ConnectorError, generateWebhookSecret, OutboundClient, type Clock, type DestinationEvent } from '@ferry/core';
import { connectorContext, VirtualClock } from '@ferry/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_RETRY_AFTER_MS, RETRY_BASE_DELAY_MS, RETRY_MAX_DELAY_MS, retryAfterMs, retryDelay, webhookDestination } from './destination.js';
import { webhook, type WebhookConfig } from './index.js';
import { receiverForFile, type ReceivedRequest, type Reply, type TestReceiver } from './test-receiver.js';

// Retries within a write, against a real receiver on loopback. Every delay runs on a virtual
// clock that the tests move: nothing here waits in real time.

const NOW_MS = 1_760_000_000_123;
/** The requests' timeout in these tests, unless one says otherwise. */
const TIMEOUT_MS = 60_000;
const clock = new VirtualClock(NOW_MS, { settleRealMs: 1 });
/**
 * The delays the destination waited for, in order: its timers of at most a retry's longest
 * delay (a request's timeout is at least a second longer in these tests).
 */
const delays: number[] = [];
/** How many of `delays` {@link drive} has moved the clock past. */
let driven = 0;
const recording: Clock = {
  now: () => clock.now(),
  setTimeout: (fn, ms) => {
    if (ms <= RETRY_MAX_DELAY_MS) delays.push(ms);
    return clock.setTimeout(fn, ms);
  },
};
const secret = generateWebhookSecret();
const plugin = webhook({ allowHttp: ['127.0.0.1'] });

let receiver!: TestReceiver;
receiverForFile((r) => (receiver = r));
beforeEach(() => {
  delays.length = 0;
  driven = 0;
});
afterEach(() => {
  // A settled write leaves no timer behind: no delay still running, no request timeout.
  expect(clock.pendingTimers()).toBe(0);
});

function events(n: number): DestinationEvent[] {
  return Array.from({ length: n }, (_, i) => ({ id: `evt_${i}`, type: 'order.created', occurredAt: '2025-01-01T00:00:00.000Z', payload: { n: i } }));
}

/** A destination as the plugin opens it, on the recording clock. */
function open(config: Partial<WebhookConfig> = {}) {
  return plugin.destination!(connectorContext({ signing_secret: secret, url: receiver.url, timeout_ms: TIMEOUT_MS, ...config }, { clock: recording, connectorId: 'con_1', pipelineId: 'pip_1' }));
}

/**
 * A destination whose receiver has accepted a request already, as one that has been delivering
 * (retries within a write start only then); the requests of that first write are forgotten.
 */
async function opened(config: Partial<WebhookConfig> = {}) {
  const destination = await open(config);
  const warm: DestinationEvent = { id: 'evt_warm', type: 'order.created', occurredAt: '2025-01-01T00:00:00.000Z', payload: {} };
  expect(await destination.write([warm], new AbortController().signal)).toEqual([{ ok: true }]);
  receiver.requests.length = 0;
  return destination;
}

/** Resolves once `check` holds, turn after turn of the event loop: no real waiting. */
function until(check: () => boolean): Promise<void> {
  return new Promise<void>((resolve) => {
    const poll = () => (check() ? resolve() : setImmediate(poll));
    poll();
  });
}

/**
 * Settles a write, moving the clock past each retry delay once the destination has started it,
 * and returns its value or its error.
 */
async function drive<T>(writing: Promise<T>): Promise<{ value?: T; error?: unknown }> {
  let outcome: { value?: T; error?: unknown } | undefined;
  void writing.then(
    (value) => (outcome = { value }),
    (error: unknown) => (outcome = { error }),
  );
  while (!outcome) {
    if (delays.length > driven) {
      driven++;
      await clock.advance(RETRY_MAX_DELAY_MS);
    } else {
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }
  return outcome;
}

/** The event ids of a request's body, in the order they were sent (one bare event when `batch_size` is 1). */
function idsOf(request: ReceivedRequest): string[] {
  const body = JSON.parse(request.body) as { id: string } | { events: { id: string }[] };
  return 'events' in body ? body.events.map((e) => e.id) : [body.id];
}

/** Answers each request with the next reply of `script` for its first event, 200 once it runs out. */
function script(replies: Record<string, Reply[]>): void {
  receiver.reply((request) => replies[idsOf(request)[0]!]?.shift() ?? { status: 200 });
}

/** Verifies a request's signature independently of the plugin's own code. */
function verify(request: ReceivedRequest): boolean {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const expected = createHmac('sha256', key).update(`${request.headers['webhook-id']}.${request.headers['webhook-timestamp']}.${request.body}`).digest();
  const [version, mac] = String(request.headers['webhook-signature']).split(',');
  const given = Buffer.from(mac ?? '', 'base64');
  return version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected);
}

const failureOf = (error: unknown) => {
  expect(error).toBeInstanceOf(ConnectorError);
  const e = error as ConnectorError;
  return [e.code, e.message, e.retryable];
};

describe('webhook destination retries within a write', () => {
  it('sends a request answered 500 again, and the write succeeds with each request accepted once', async () => {
    const destination = await opened({ batch_size: 2, concurrency: 3 });
    script({ evt_2: [{ status: 500 }] });
    const { value, error } = await drive(destination.write(events(6), new AbortController().signal));
    expect(error).toBeUndefined();
    expect(value).toEqual(Array.from({ length: 6 }, () => ({ ok: true })));
    // Three requests and one retry: the failed one went again, the others once.
    const sent = receiver.requests.map((r) => idsOf(r).join(','));
    expect(sent.sort()).toEqual(['evt_0,evt_1', 'evt_2,evt_3', 'evt_2,evt_3', 'evt_4,evt_5']);
    // The retry is the same request: same body, same webhook-id, signed anew.
    const [first, again] = receiver.requests.filter((r) => idsOf(r)[0] === 'evt_2');
    expect(again!.body).toBe(first!.body);
    expect(again!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    expect([verify(first!), verify(again!)]).toEqual([true, true]);
    // The first retry of a 500 goes at once.
    expect(delays).toEqual([]);
  });

  it('fails the write as retryable once the retries are spent, after delays that grow', async () => {
    const destination = await opened({ batch_size: 1 });
    receiver.reply(() => ({ status: 500 }));
    const { error } = await drive(destination.write(events(1), new AbortController().signal));
    expect(failureOf(error)).toEqual(['receiver_failed', 'HTTP 500', true]);
    // The first attempt and three retries (the default): the first at once, then after delays.
    expect(receiver.requests).toHaveLength(4);
    expect(delays).toHaveLength(2);
    delays.forEach((delay, i) => expect(delay).toBeLessThan(RETRY_BASE_DELAY_MS * 2 ** i));
  });

  it('retries as many times as `retries` says, and not at all with 0', async () => {
    const once = await opened({ batch_size: 1, retries: 1 });
    receiver.reply(() => ({ status: 503 }));
    expect(failureOf((await drive(once.write(events(1), new AbortController().signal))).error)).toEqual(['receiver_failed', 'HTTP 503', true]);
    expect(receiver.requests).toHaveLength(2);

    receiver.reply(() => ({ status: 200 }));
    const never = await opened({ batch_size: 1, retries: 0 });
    receiver.reply(() => ({ status: 503 }));
    expect(failureOf((await drive(never.write(events(1), new AbortController().signal))).error)).toEqual(['receiver_failed', 'HTTP 503', true]);
    expect(receiver.requests).toHaveLength(1);
  });

  it('retries 408, 429, 502, 503 and 504 too, a 429 after a delay', async () => {
    const destination = await opened({ batch_size: 1 });
    for (const status of [408, 429, 502, 503, 504]) {
      receiver.requests.length = 0;
      delays.length = driven = 0;
      script({ evt_0: [{ status }] });
      const { value } = await drive(destination.write(events(1), new AbortController().signal));
      expect([status, value]).toEqual([status, [{ ok: true }]]);
      expect(receiver.requests).toHaveLength(2);
      // A throttled receiver asks for fewer requests: not even its first retry goes at once.
      expect([status, delays.length]).toEqual([status, status === 429 ? 1 : 0]);
      if (status === 429) expect(delays[0]).toBeLessThan(RETRY_BASE_DELAY_MS);
    }
  });

  it('does not retry a 400 (its events are rejected) nor another 5xx (the write fails at once)', async () => {
    const destination = await opened({ batch_size: 2 });
    for (const status of [400, 401, 403, 404, 410, 413, 422]) {
      receiver.requests.length = 0;
      receiver.reply(() => ({ status }));
      const results = await destination.write(events(2), new AbortController().signal);
      expect(results.map((r) => (r.ok ? 'ok' : [r.error.code, r.error.message, r.error.retryable]))).toEqual([
        ['rejected', `HTTP ${status}`, false],
        ['rejected', `HTTP ${status}`, false],
      ]);
      expect(receiver.requests).toHaveLength(1);
    }
    receiver.requests.length = 0;
    receiver.reply(() => ({ status: 501 }));
    const { error } = await drive(destination.write(events(2), new AbortController().signal));
    expect(failureOf(error)).toEqual(['receiver_failed', 'HTTP 501', true]);
    expect(receiver.requests).toHaveLength(1);
    expect(delays).toEqual([]);
  });

  it('retries a request that timed out', async () => {
    const destination = await opened({ batch_size: 1, timeout_ms: 2000 });
    script({ evt_0: ['hang'] });
    const writing = destination.write(events(1), new AbortController().signal);
    await until(() => receiver.requests.length === 1);
    await clock.advance(2000);
    expect((await drive(writing)).value).toEqual([{ ok: true }]);
    expect(receiver.requests).toHaveLength(2);
  });

  it('retries a request whose connection broke', async () => {
    const destination = await opened({ batch_size: 1 });
    script({ evt_0: ['drop'] });
    expect((await drive(destination.write(events(1), new AbortController().signal))).value).toEqual([{ ok: true }]);
    expect(receiver.requests).toHaveLength(2);
  });

  it('waits what a short Retry-After asks, and leaves a long one to the engine', async () => {
    const destination = await opened({ batch_size: 1 });
    script({ evt_0: [{ status: 429, headers: { 'retry-after': '1' } }] });
    expect((await drive(destination.write(events(1), new AbortController().signal))).value).toEqual([{ ok: true }]);
    expect(delays).toEqual([MAX_RETRY_AFTER_MS]);

    receiver.requests.length = 0;
    delays.length = 0;
    script({ evt_0: [{ status: 429, headers: { 'retry-after': '2' } }] });
    expect(failureOf((await drive(destination.write(events(1), new AbortController().signal))).error)).toEqual(['throttled', 'HTTP 429', true]);
    expect(receiver.requests).toHaveLength(1);
    expect(delays).toEqual([]);
  });

  it('stops at once when the write is aborted during a retry delay', async () => {
    const destination = await opened({ batch_size: 1 });
    receiver.reply(() => ({ status: 500 }));
    const abort = new AbortController();
    let settled = false;
    const writing = destination.write(events(1), abort.signal).then(
      () => null,
      (e: unknown) => e,
    ).finally(() => (settled = true));
    // The first retry goes at once; the second waits.
    await until(() => delays.length === 1);
    abort.abort(new Error('engine stopping'));
    // Without moving the clock: the delay is cut short, not waited out.
    expect(((await writing) as Error).message).toBe('engine stopping');
    expect(settled).toBe(true);
    expect(receiver.requests).toHaveLength(2);
  });

  it('keeps the order of the events within each request and in the results', async () => {
    const destination = await opened({ batch_size: 3, concurrency: 2 });
    script({ evt_3: [{ status: 500 }, { status: 502 }], evt_6: [{ status: 422 }] });
    const { value } = await drive(destination.write(events(9), new AbortController().signal));
    expect(value!.map((r) => (r.ok ? 'ok' : r.error.message))).toEqual(['ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'HTTP 422', 'HTTP 422', 'HTTP 422']);
    for (const request of receiver.requests) {
      const ids = idsOf(request);
      const first = Number(ids[0]!.slice(4));
      expect(ids).toEqual([`evt_${first}`, `evt_${first + 1}`, `evt_${first + 2}`]);
    }
    expect(receiver.requests.filter((r) => idsOf(r)[0] === 'evt_3')).toHaveLength(3);
  });

  it('stops the retries of a write once another of its requests failed for good', async () => {
    const destination = await opened({ batch_size: 1, concurrency: 2 });
    const held: { request: ReceivedRequest; answer: (reply: Reply) => void }[] = [];
    receiver.reply((request) => new Promise<Reply>((answer) => held.push({ request, answer })));
    /** Answers the held request of event `id`, once it is held. */
    const answer = async (id: string, reply: Reply) => {
      await until(() => held.some((h) => idsOf(h.request)[0] === id));
      held.splice(held.findIndex((h) => idsOf(h.request)[0] === id), 1)[0]!.answer(reply);
    };
    const writing = destination.write(events(4), new AbortController().signal).then(
      () => null,
      (e: unknown) => e,
    );
    // The first chunk fails twice (its first retry goes at once), then waits to retry.
    await answer('evt_0', { status: 500 });
    await answer('evt_0', { status: 500 });
    await until(() => delays.length === 1);
    // The other request fails for good: the whole batch is going to be sent again, so the first
    // one's retry is dropped, without waiting out its delay; the write reports the first chunk.
    await answer('evt_1', { status: 501 });
    expect(failureOf(await writing)).toEqual(['receiver_failed', 'HTTP 500', true]);
    expect(receiver.requests.map((r) => idsOf(r)[0])).toEqual(['evt_0', 'evt_1', 'evt_0']);
  });

  it('does not retry before the receiver has accepted a request, nor after a write failed until it accepts one again', async () => {
    // Fresh: nothing says this url reaches a working receiver; the engine's hold reports it, and
    // a config change made meanwhile is what the next attempt uses.
    const destination = await open({ batch_size: 1 });
    receiver.reply(() => ({ status: 500 }));
    expect(failureOf((await drive(destination.write(events(1), new AbortController().signal))).error)).toEqual(['receiver_failed', 'HTTP 500', true]);
    expect(receiver.requests).toHaveLength(1);

    receiver.reply(() => ({ status: 200 }));
    expect(await destination.write(events(1), new AbortController().signal)).toEqual([{ ok: true }]);
    receiver.requests.length = 0;
    receiver.reply(() => ({ status: 500 }));
    expect(failureOf((await drive(destination.write(events(1), new AbortController().signal))).error)).toEqual(['receiver_failed', 'HTTP 500', true]);
    expect(receiver.requests).toHaveLength(4);
    // Failing for good: the next attempts are one request each, as the engine's hold paces them.
    receiver.requests.length = 0;
    expect(failureOf((await drive(destination.write(events(1), new AbortController().signal))).error)).toEqual(['receiver_failed', 'HTTP 500', true]);
    expect(receiver.requests).toHaveLength(1);
    // An accepted request makes retries worth it again.
    receiver.requests.length = 0;
    script({ evt_1: [{ status: 500 }] });
    expect((await drive(destination.write(events(2), new AbortController().signal))).value).toEqual([{ ok: true }, { ok: true }]);
    expect(receiver.requests.map((r) => idsOf(r)[0]).sort()).toEqual(['evt_0', 'evt_1', 'evt_1']);
  });
});

describe('retry delays', () => {
  it('are none for a first retry, then drawn below a ceiling that doubles from the base up to the cap', () => {
    const highest = () => 0.999_999;
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((retry) => retryDelay(retry, false, highest))).toEqual([0, 49, 99, 199, 399, 799, 999, 999]);
    // A throttled request waits from its first retry.
    expect([1, 2, 3, 4, 5, 6, 7].map((retry) => retryDelay(retry, true, highest))).toEqual([49, 99, 199, 399, 799, 999, 999]);
    expect(retryDelay(3, false, () => 0)).toBe(0);
    expect(retryDelay(2, false, () => 0.5)).toBe(RETRY_BASE_DELAY_MS / 2);
  });

  it('follow the injected jitter in a destination', async () => {
    const client = new OutboundClient({ allow: ['127.0.0.1'] });
    try {
      const destination = webhookDestination(
        { url: receiver.url, secret, batchSize: 1, concurrency: 1, timeoutMs: TIMEOUT_MS, retries: 5, headers: {}, clock: recording, userAgent: 'test', random: () => 0.5 },
        client,
      );
      expect(await destination.write(events(1), new AbortController().signal)).toEqual([{ ok: true }]);
      receiver.reply(() => ({ status: 500 }));
      expect(failureOf((await drive(destination.write(events(1), new AbortController().signal))).error)).toEqual(['receiver_failed', 'HTTP 500', true]);
      expect(delays).toEqual([25, 50, 100, 200]);
    } finally {
      await client.close();
    }
  });

  it('read Retry-After as seconds or as an HTTP date', () => {
    expect(retryAfterMs(undefined, NOW_MS)).toBeUndefined();
    expect(retryAfterMs(' 3 ', NOW_MS)).toBe(3000);
    expect(retryAfterMs('0', NOW_MS)).toBe(0);
    expect(retryAfterMs(new Date(NOW_MS + 5000).toUTCString(), NOW_MS)).toBeGreaterThan(4000);
    expect(retryAfterMs(new Date(NOW_MS - 5000).toUTCString(), NOW_MS)).toBe(0);
    expect(retryAfterMs('soon', NOW_MS)).toBeUndefined();
    expect(retryAfterMs('-1', NOW_MS)).toBeUndefined();
    expect(retryAfterMs('1.5', NOW_MS)).toBeUndefined();
  });
});

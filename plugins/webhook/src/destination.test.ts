import { createHmac, timingSafeEqual } from 'node:crypto';
import { ConnectorError, generateWebhookSecret, webhookSecretBytes, type DestinationEvent } from '@ferry/core';
import { describe, expect, it } from 'vitest';
import { webhook, type WebhookConfig } from './index.js';
import { connectorContext, VirtualClock } from '@ferry/testing';
import { receiverForFile, startReceiver, type ReceivedRequest, type Reply, type TestReceiver } from './test-receiver.js';

const NOW_MS = 1_760_000_000_123;
const clock = new VirtualClock(NOW_MS, { settleRealMs: 1 });
const secret = generateWebhookSecret();
const plugin = webhook({ allowHttp: ['127.0.0.1'] });

const ctx = (config: WebhookConfig) => connectorContext(config, { clock, connectorId: 'con_1', pipelineId: 'pip_1' });

function events(n: number): DestinationEvent[] {
  return Array.from({ length: n }, (_, i) => ({ id: `evt_${i}`, type: 'order.created', occurredAt: '2025-01-01T00:00:00.000Z', payload: { n: i } }));
}

/** Verifies a request's signature independently of the plugin's own code. */
function verify(request: ReceivedRequest, signingSecret: string): boolean {
  const key = Buffer.from(signingSecret.slice('whsec_'.length), 'base64');
  const expected = createHmac('sha256', key).update(`${request.headers['webhook-id']}.${request.headers['webhook-timestamp']}.${request.body}`).digest();
  const header = String(request.headers['webhook-signature']);
  return header.split(' ').some((sig) => {
    const [version, mac] = sig.split(',');
    const given = Buffer.from(mac ?? '', 'base64');
    return version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected);
  });
}

async function open(config: Partial<WebhookConfig>, p = plugin) {
  return p.destination!(ctx({ signing_secret: secret, url: receiver.url, ...config }));
}

/** Resolves once the receiver has got `count` requests, without real waiting. */
function receivedAtLeast(count: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const poll = () => (receiver.requests.length >= count ? resolve() : setImmediate(poll));
    poll();
  });
}

/** The id of the first event of a batch request: which chunk of a write it is. */
const firstId = (request: ReceivedRequest) => (JSON.parse(request.body) as { events: { id: string }[] }).events[0]!.id;
/**
 * Lets 20 turns of the event loop pass: on loopback, enough for a request already written (or an
 * answer already sent) to arrive. Not time: used only to see that something did NOT happen,
 * which a correct destination can never fail.
 */
async function turns(): Promise<void> {
  for (let turn = 0; turn < 20; turn++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Requests in the order of their events, whatever order they arrived in. */
const inEventOrder = (requests: readonly ReceivedRequest[]) => [...requests].sort((a, b) => Number(firstId(a).slice(4)) - Number(firstId(b).slice(4)));

/**
 * Holds every request until the test answers it: `held` is what is in flight at the receiver
 * (oldest first) and `most` the most it ever held at once.
 */
function holdRequests() {
  const held: { request: ReceivedRequest; answer: (reply: Reply) => void }[] = [];
  let most = 0;
  receiver.reply(
    (request) =>
      new Promise<Reply>((answer) => {
        held.push({ request, answer });
        most = Math.max(most, held.length);
      }),
  );
  return {
    held,
    most: () => most,
    /** Resolves once `count` requests are held, without real waiting. */
    holding: (count: number) =>
      new Promise<void>((resolve) => {
        const poll = () => (held.length >= count ? resolve() : setImmediate(poll));
        poll();
      }),
    /** Answers the held request whose first event is `id`. */
    answer(id: string, reply: Reply) {
      const at = held.findIndex((h) => firstId(h.request) === id);
      held.splice(at, 1)[0]!.answer(reply);
    },
  };
}

let receiver!: TestReceiver;
receiverForFile((r) => (receiver = r));

describe('webhook destination', () => {
  it('sends chunks of batch_size as { events } bodies, signed with the connector secret', async () => {
    const destination = await open({ batch_size: 2, headers: { Authorization: 'Bearer s3cret-token' } });
    const results = await destination.write(events(5), new AbortController().signal);
    expect(results).toEqual(Array.from({ length: 5 }, () => ({ ok: true })));
    expect(receiver.requests).toHaveLength(3);
    // The chunks of a write are sent concurrently: they may arrive in any order.
    const bodies = inEventOrder(receiver.requests).map((r) => JSON.parse(r.body) as { events: { id: string }[] });
    expect(bodies.map((b) => b.events.map((e) => e.id))).toEqual([['evt_0', 'evt_1'], ['evt_2', 'evt_3'], ['evt_4']]);
    expect(bodies[0]!.events[1]).toEqual({ id: 'evt_1', type: 'order.created', occurred_at: '2025-01-01T00:00:00.000Z', payload: { n: 1 } });
    for (const r of receiver.requests) {
      expect(r.method).toBe('POST');
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.headers.authorization).toBe('Bearer s3cret-token');
      expect(r.headers['webhook-timestamp']).toBe(String(Math.floor(NOW_MS / 1000)));
      expect(r.headers['webhook-id']).toMatch(/^bat_[0-9a-f]{26}$/);
      expect(r.headers['x-service-signature']).toBe(r.headers['webhook-signature']);
      expect(verify(r, secret)).toBe(true);
      expect(verify(r, generateWebhookSecret())).toBe(false);
    }
    // Distinct batches get distinct ids; the same batch sent again gets the same one.
    const ids = inEventOrder(receiver.requests).map((r) => r.headers['webhook-id']);
    expect(new Set(ids).size).toBe(3);
    await destination.write(events(2), new AbortController().signal);
    expect(receiver.requests[3]!.headers['webhook-id']).toBe(ids[0]);
  });

  it('sends one event per request as the bare event when batch_size is 1, with the event id as webhook-id', async () => {
    const destination = await open({ batch_size: 1 });
    expect(await destination.write(events(2), new AbortController().signal)).toEqual([{ ok: true }, { ok: true }]);
    const requests = [...receiver.requests].sort((a, b) => String(a.headers['webhook-id']).localeCompare(String(b.headers['webhook-id'])));
    expect(requests.map((r) => JSON.parse(r.body))).toEqual([
      { id: 'evt_0', type: 'order.created', occurred_at: '2025-01-01T00:00:00.000Z', payload: { n: 0 } },
      { id: 'evt_1', type: 'order.created', occurred_at: '2025-01-01T00:00:00.000Z', payload: { n: 1 } },
    ]);
    expect(requests.map((r) => r.headers['webhook-id'])).toEqual(['evt_0', 'evt_1']);
    expect(receiver.requests.every((r) => verify(r, secret))).toBe(true);
  });

  it('keeps up to `concurrency` requests of a write in flight and sends every event exactly once', async () => {
    const destination = await open({ batch_size: 2, concurrency: 3 });
    const hold = holdRequests();
    const writing = destination.write(events(11), new AbortController().signal);
    // Six chunks; each answer lets the next one go out, until fewer than three are left.
    for (let answered = 0; answered < 6; answered++) {
      await hold.holding(Math.min(3, 6 - answered));
      await turns(); // a fourth request would show up meanwhile
      hold.answer(firstId(hold.held[0]!.request), { status: 200 });
    }
    expect(await writing).toEqual(Array.from({ length: 11 }, () => ({ ok: true })));
    expect(hold.most()).toBe(3);
    const sent = receiver.requests.flatMap((r) => (JSON.parse(r.body) as { events: { id: string }[] }).events.map((e) => e.id));
    expect(sent.sort()).toEqual(events(11).map((e) => e.id).sort());
    // One signature and one batch id per request, as when they went one by one.
    expect(receiver.requests.every((r) => verify(r, secret))).toBe(true);
    expect(new Set(receiver.requests.map((r) => r.headers['webhook-id'])).size).toBe(6);
  });

  it('returns the results in event order whatever order the answers come in, a rejection marking only its chunk', async () => {
    const destination = await open({ batch_size: 2, concurrency: 3 });
    const hold = holdRequests();
    const writing = destination.write(events(6), new AbortController().signal);
    await hold.holding(3);
    hold.answer('evt_4', { status: 200 });
    hold.answer('evt_2', { status: 422 });
    hold.answer('evt_0', { status: 204 });
    const results = await writing;
    expect(results.map((r) => (r.ok ? 'ok' : [r.error.code, r.error.message, r.error.retryable]))).toEqual([
      'ok', 'ok', ['rejected', 'HTTP 422', false], ['rejected', 'HTTP 422', false], 'ok', 'ok',
    ]);
  });

  it('starts no chunk after a retryable failure and throws the earliest failed chunk once the others settled', async () => {
    const destination = await open({ batch_size: 2, concurrency: 2 });
    const hold = holdRequests();
    const writing = destination.write(events(10), new AbortController().signal).then(
      () => null,
      (e: unknown) => e,
    );
    await hold.holding(2);
    // The second chunk fails first; the first chunk's failure is what the write reports.
    hold.answer('evt_2', { status: 429 });
    hold.answer('evt_0', { status: 503 });
    const error = await writing;
    expect(error).toBeInstanceOf(ConnectorError);
    expect([(error as ConnectorError).code, (error as ConnectorError).message, (error as ConnectorError).retryable]).toEqual(['receiver_failed', 'HTTP 503', true]);
    // Five chunks, two in flight when they failed: the other three were never sent.
    expect(receiver.requests.map(firstId).sort()).toEqual(['evt_0', 'evt_2']);
  });

  it('waits for the requests still in flight before throwing a failure', async () => {
    const destination = await open({ batch_size: 2, concurrency: 2 });
    const hold = holdRequests();
    let settled = false;
    const writing = destination.write(events(4), new AbortController().signal).then(
      () => null,
      (e: unknown) => e,
    ).finally(() => (settled = true));
    await hold.holding(2);
    hold.answer('evt_0', { status: 500 });
    // The other chunk is still at the receiver: the write waits for it, so the engine's retry of
    // the batch never overlaps this attempt. A write that did not wait would settle meanwhile.
    await turns();
    expect(settled).toBe(false);
    hold.answer('evt_2', { status: 200 });
    expect(((await writing) as ConnectorError).message).toBe('HTTP 500');
  });

  it('signs with the key bytes of a 24-byte secret too', async () => {
    const short = `whsec_${Buffer.alloc(24, 9).toString('base64')}`;
    expect(webhookSecretBytes(short)).not.toBeNull();
    const destination = await open({ signing_secret: short });
    await destination.write(events(1), new AbortController().signal);
    expect(verify(receiver.requests[0]!, short)).toBe(true);
  });

  it('throws a retryable error on 500, 429 and 408', async () => {
    const destination = await open({});
    for (const status of [500, 503, 429, 408]) {
      receiver.reply(() => ({ status }));
      const error = await destination.write(events(3), new AbortController().signal).then(() => null, (e: unknown) => e);
      expect(error).toBeInstanceOf(ConnectorError);
      expect((error as ConnectorError).retryable).toBe(true);
      expect((error as ConnectorError).message).toBe(`HTTP ${status}`);
    }
  });

  it('rejects every event of a chunk answered with another 4xx, not retryable', async () => {
    receiver.reply((r) => ({ status: (JSON.parse(r.body) as { events: { id: string }[] }).events[0]!.id === 'evt_2' ? 400 : 204 }));
    const destination = await open({ batch_size: 2 });
    const results = await destination.write(events(4), new AbortController().signal);
    expect(results.map((r) => r.ok)).toEqual([true, true, false, false]);
    const failed = results[2]!;
    expect(failed.ok).toBe(false);
    if (!failed.ok) {
      expect(failed.error).toBeInstanceOf(ConnectorError);
      expect(failed.error.code).toBe('rejected');
      expect(failed.error.message).toBe('HTTP 400');
      expect(failed.error.retryable).toBe(false);
    }
  });

  it('treats a redirect as a failure and never follows it', async () => {
    receiver.reply((r) => (r.path === '/hook' ? { status: 302, headers: { location: '/elsewhere' } } : { status: 200 }));
    const destination = await open({ batch_size: 1 });
    const [result] = await destination.write(events(1), new AbortController().signal);
    expect(result!.ok).toBe(false);
    if (!result!.ok) expect([result!.error.code, result!.error.message]).toEqual(['rejected', 'HTTP 302']);
    expect(receiver.requests.map((r) => r.path)).toEqual(['/hook']);
  });

  it('reads at most 4 KiB of a large response body', async () => {
    receiver.reply(() => ({ status: 200, body: 'x'.repeat(1024 * 1024) }));
    const destination = await open({});
    expect(await destination.write(events(1), new AbortController().signal)).toEqual([{ ok: true }]);
  });

  it('throws a retryable timeout when the receiver never answers, on the context clock', async () => {
    receiver.reply(() => 'hang');
    const destination = await open({ timeout_ms: 1000 });
    const writing = destination.write(events(1), new AbortController().signal).then(() => null, (e: unknown) => e);
    await receivedAtLeast(1);
    await clock.advance(1000);
    const error = await writing;
    expect(error).toBeInstanceOf(ConnectorError);
    expect([(error as ConnectorError).code, (error as ConnectorError).retryable]).toEqual(['timeout', true]);
  });

  it('throws a retryable error when the receiver is unreachable, without secrets in the message', async () => {
    const closed = await startReceiver();
    await closed.close();
    const destination = await open({ url: closed.url, headers: { Authorization: 'Bearer s3cret-token' } });
    const error = await destination.write(events(1), new AbortController().signal).then(() => null, (e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectorError);
    expect([(error as ConnectorError).code, (error as ConnectorError).retryable]).toEqual(['unreachable', true]);
    expect((error as Error).message).not.toContain('s3cret');
    expect((error as Error).message).not.toContain(secret);
  });

  it('passes the caller abort through instead of turning it into a timeout', async () => {
    receiver.reply(() => 'hang');
    const destination = await open({ timeout_ms: 60_000 });
    const abort = new AbortController();
    const writing = destination.write(events(1), abort.signal).then(() => null, (e: unknown) => e);
    await receivedAtLeast(1);
    abort.abort(new Error('engine stopping'));
    expect(((await writing) as Error).message).toBe('engine stopping');
  });

  it('refuses to open without a url, without a valid secret, or with a url the policy refuses', async () => {
    const codeOf = async (config: WebhookConfig, p = plugin) => {
      try {
        await p.destination!(ctx(config));
        return null;
      } catch (e) {
        return [(e as ConnectorError).code, (e as ConnectorError).retryable];
      }
    };
    expect(await codeOf({ signing_secret: secret })).toEqual(['configuration_invalid', false]);
    expect(await codeOf({ url: receiver.url })).toEqual(['configuration_invalid', false]);
    expect(await codeOf({ url: receiver.url, signing_secret: 'whsec_bad' })).toEqual(['configuration_invalid', false]);
    expect(await codeOf({ url: receiver.url, signing_secret: secret }, webhook())).toEqual(['url_not_allowed', false]);
  });

  it('refuses at connect time a host name that resolves to a loopback address, unless allowed', async () => {
    // The name passes the URL rules when the destination opens; only the client's check of the
    // resolved address stands between it and the loopback receiver.
    const port = new URL(receiver.url).port;
    const lookup = async () => [{ address: '127.0.0.1', family: 4 as const }];
    const strict = await open({ url: `https://hooks.example.com:${port}/hook`, batch_size: 1 }, webhook({ lookup }));
    const results = await strict.write(events(2), new AbortController().signal);
    expect(results.map((r) => (r.ok ? 'ok' : [r.error.code, r.error.retryable]))).toEqual([
      ['url_not_allowed', false],
      ['url_not_allowed', false],
    ]);
    expect(receiver.requests).toHaveLength(0);

    const allowed = await open({ url: `http://hooks.example.com:${port}/hook` }, webhook({ lookup, allowHttp: ['hooks.example.com'] }));
    expect(await allowed.write(events(1), new AbortController().signal)).toEqual([{ ok: true }]);
    expect(receiver.requests).toHaveLength(1);
  });

  it('keeps plain http to a loopback name refused unless that name is allowed, as the engine does', async () => {
    const byName = receiver.url.replace('127.0.0.1', 'localhost');
    const codeOf = (p: ReturnType<typeof webhook>) => open({ url: byName }, p).then(() => null, (e: unknown) => (e as ConnectorError).code);
    expect(await codeOf(plugin)).toBe('url_not_allowed');
    const local = await open({ url: byName }, webhook({ allowHttp: ['localhost'] }));
    expect(await local.write(events(1), new AbortController().signal)).toEqual([{ ok: true }]);
  });
});

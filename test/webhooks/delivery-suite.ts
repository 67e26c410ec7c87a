import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createEngine, generateSecretKey, isFerryError, verifyWebhook, type Engine, type Logger, type StorageConfig } from '@ferry/core';
import type { DeliveryOptionsInput } from '@ferry/core/internal';
import { engineContext } from '@ferry/core/internal';
import { MemoryHub, memoryConnector, startWebhookReceiver, eventually, VirtualClock, type ReceivedWebhook, type WebhookReceiver, type WebhookReply } from '@ferry/testing';

/** A database two engines (or an engine and its successor) can open. */
export interface DeliveryDatabase {
  config(): StorageConfig;
}

const WS = 'default';
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const OFFSETS = [0, 5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 24 * HOUR];

const print = (level: string) => (obj: unknown, msg?: string) => console.log(level, msg ?? '', JSON.stringify(obj));
const quiet = () => undefined;
const logger: Logger | undefined = process.env.FERRY_TEST_LOG
  ? { trace: quiet, debug: quiet, info: quiet, warn: print('warn'), error: print('error'), fatal: print('fatal'), child: () => logger! }
  : undefined;

interface Harness {
  clock: VirtualClock;
  engine: Engine;
  receiver: WebhookReceiver;
  /** Another engine on the same database. */
  another(delivery?: DeliveryOptionsInput): Promise<Engine>;
  /** Records `n` platform events of type `pipeline.created`; returns their ids. */
  emit(n?: number): Promise<string[]>;
}

/**
 * Webhook delivery end to end on one storage dialect: platform events fanned out to a real
 * receiver on loopback, with a virtual clock driving the retry schedule. Every delivery the
 * receiver gets is also verified by the `standardwebhooks` package, an independent implementation.
 */
export function runDeliverySuite(name: string, factory: () => Promise<DeliveryDatabase>): void {
  describe(`webhook delivery (${name})`, () => {
    const cleanup: Array<() => Promise<void>> = [];
    /** Every receiver of the test, and every secret a subscription of the test signed with. */
    const receivers: WebhookReceiver[] = [];
    const secrets: string[] = [];
    // Every delivery any test received is also verified by an independent implementation.
    // In order: receivers close first, so an engine stopping is not left waiting on a request that hangs.
    afterEach(async () => {
      const requests = receivers.splice(0).flatMap((r) => r.received);
      const known = secrets.splice(0);
      for (const fn of cleanup.splice(0)) await fn();
      for (const request of requests) {
        const verifies = known.some((secret) => {
          try {
            independentlyVerified(request, secret);
            return true;
          } catch {
            return false;
          }
        });
        expect(verifies, `delivery ${request.id} at ${request.at} verifies with a subscription secret`).toBe(true);
        // Signed when the attempt began: never after it arrived.
        expect(request.timestamp * 1000).toBeLessThanOrEqual(request.at);
      }
    });

    async function setup(delivery: DeliveryOptionsInput = {}): Promise<Harness> {
      const db = await factory();
      const clock = new VirtualClock(undefined, { settleRealMs: 1 });
      const receiver = await startWebhookReceiver({ clock });
      receivers.push(receiver);
      cleanup.push(() => receiver.close());
      const secretKey = generateSecretKey();
      const hub = new MemoryHub({ clock });
      const start = async (options: DeliveryOptionsInput) => {
        const engine = await createEngine({
          storage: db.config(),
          clock,
          secretKey,
          plugins: [memoryConnector(hub)],
          runtime: false,
          outboundAllow: ['127.0.0.1'],
          // Polling is for other engines' work; the tests that need it step past it.
          webhookDelivery: { pollIntervalMs: HOUR, leaseTtlMs: 2 * HOUR, ...options },
          logger,
        });
        await engine.start();
        cleanup.push(() => engine.stop());
        return engine;
      };
      const engine = await start(delivery);
      let connectors: { source: string; destination: string } | undefined;
      const emit = async (n = 1) => {
        connectors ??= {
          source: (await engine.connectors.create(WS, { type: 'memory', direction: 'source', config: { name: 'in' } })).id,
          destination: (await engine.connectors.create(WS, { type: 'memory', direction: 'destination', config: { name: 'out' } })).id,
        };
        const ids: string[] = [];
        for (let i = 0; i < n; i++) {
          const p = await engine.pipelines.create(WS, { name: `p${Math.random().toString(36).slice(2, 10)}`, source_connector_id: connectors.source, destination_connector_id: connectors.destination });
          ids.push(p.id);
        }
        return ids;
      };
      return { clock, engine, receiver, emit, another: (o = {}) => start({ ...delivery, ...o }) };
    }

        const subscribe = async (h: Harness, extra: { secret?: string; url?: string } = {}) => {
      const sub = await h.engine.webhooks.create(WS, { url: extra.url ?? h.receiver.url, events: ['pipeline.created'], ...(extra.secret ? { secret: extra.secret } : {}) });
      secrets.push(sub.secret);
      return sub;
    };

    /** Lets requests started by the last step of time reach the receiver before asserting none did. */
    const settle = () => new Promise((resolve) => setTimeout(resolve, 100));

    const deliveries = async (h: Harness, subscriptionId: string) => (await h.engine.webhooks.listDeliveries(WS, subscriptionId, { limit: 100 })).data;

    /**
     * Verifies a received delivery with the standardwebhooks package, at the time it was signed:
     * tests move the virtual clock by whole minutes, so a request can arrive after its signature
     * went stale in virtual time. (Staleness itself: verifyWebhook's tests.)
     */
    function independentlyVerified(request: ReceivedWebhook, secret: string): unknown {
      const spy = vi.spyOn(Date, 'now').mockReturnValue(request.timestamp * 1000);
      try {
        return new Webhook(secret).verify(request.body, request.headers as Record<string, string>);
      } finally {
        spy.mockRestore();
      }
    }

    it('fans an event out to the subscriptions that name its type, signed by the Standard Webhooks scheme', async () => {
      const h = await setup();
      const wanted = await subscribe(h);
      const other = await h.engine.webhooks.create(WS, { url: h.receiver.url, events: ['pipeline.failed'] });
      const [pipelineId] = await h.emit();
      await eventually(h.clock, () => h.receiver.received.length >= 1);
      const [request] = h.receiver.received;
      const body = JSON.parse(request!.body) as { id: string; type: string; occurred_at: string; data: { pipeline_id: string } };
      expect(body).toMatchObject({ type: 'pipeline.created', data: { pipeline_id: pipelineId } });
      expect(Object.keys(body)).toEqual(['id', 'type', 'occurred_at', 'data']);
      expect(request!.id).toBe(body.id);
      expect(request!.headers['x-service-signature']).toBe(request!.headers['webhook-signature']);
      expect(request!.headers['content-type']).toBe('application/json');
      expect(independentlyVerified(request!, wanted.secret)).toEqual(body);
      expect(verifyWebhook(request!.body, request!.headers, wanted.secret, { now: request!.at }).id).toBe(body.id);
      await eventually(h.clock, async () => (await deliveries(h, wanted.id))[0]?.status === 'delivered');
      expect(await deliveries(h, other.id)).toEqual([]);
      const [delivery] = await deliveries(h, wanted.id);
      expect(delivery).toMatchObject({ event_id: body.id, event_type: 'pipeline.created', attempts: 1, last_response_status: 204, last_error: null, next_attempt_at: null });
      // Nothing else is sent, however long the engine runs.
      await h.clock.advance(2 * DAY);
      await settle();
      expect(h.receiver.received).toHaveLength(1);
    });

    it('makes exactly the scheduled attempts to a receiver that always fails, ends failed at 24 h, and redelivers by hand', async () => {
      const h = await setup();
      h.receiver.reply(() => ({ status: 500, body: 'é'.repeat(3000) }));
      const sub = await subscribe(h);
      await h.emit();
      await eventually(h.clock, () => h.receiver.received.length === 1);
      const t0 = h.receiver.received[0]!.at;
      for (let attempt = 1; ; attempt++) {
        await eventually(h.clock, async () => (await deliveries(h, sub.id))[0]!.attempts === attempt);
        const [d] = await deliveries(h, sub.id);
        if (d!.status === 'failed') break;
        expect(d!.status).toBe('retrying');
        await h.clock.advanceTo(Date.parse(d!.next_attempt_at!));
        await eventually(h.clock, () => h.receiver.received.length === attempt + 1);
      }
      const times = h.receiver.received.map((r) => r.at - t0);
      expect(times).toHaveLength(8);
      times.forEach((t, i) => {
        expect(t).toBeGreaterThanOrEqual(Math.floor(OFFSETS[i]! * 0.9));
        expect(t).toBeLessThanOrEqual(Math.ceil(OFFSETS[i]! * 1.1));
      });
      expect(times[7]).toBe(24 * HOUR);
      expect(new Set(h.receiver.received.map((r) => r.id)).size).toBe(1);
      expect(new Set(h.receiver.received.map((r) => r.body)).size).toBe(1);
      h.receiver.received.forEach((r) => independentlyVerified(r, sub.secret));

      const failed = (await h.engine.webhooks.listDeliveries(WS, sub.id, { status: 'failed' })).data;
      expect(failed).toHaveLength(1);
      expect(failed[0]).toMatchObject({ attempts: 8, last_response_status: 500, next_attempt_at: null, last_error: 'HTTP 500.' });
      const detail = await h.engine.webhooks.getDelivery(WS, sub.id, failed[0]!.id);
      expect(detail.attempt_history).toHaveLength(8);
      expect(Buffer.byteLength(detail.attempt_history[0]!.response_body!, 'utf8')).toBeLessThanOrEqual(1024);
      expect(detail.attempt_history[0]!.response_body!.startsWith('éé')).toBe(true);
      await h.clock.advance(3 * DAY);
      await settle();
      expect(h.receiver.received).toHaveLength(8);

      // Redelivery: a fresh cycle with the same webhook-id; 409 while it is in progress.
      h.receiver.reply(() => 'hang');
      await h.engine.webhooks.redeliver(WS, sub.id, failed[0]!.id);
      await expect(h.engine.webhooks.redeliver(WS, sub.id, failed[0]!.id)).rejects.toSatisfy((e) => isFerryError(e) && e.code === 'delivery_in_progress');
      await eventually(h.clock, () => h.receiver.received.length === 9);
      h.receiver.reply(() => ({ status: 200 }));
      // The attempt times out at 15 s; the 5 s slot is behind it, so the retry follows at once.
      await h.clock.advance(15 * SECOND);
      await eventually(h.clock, async () => (await h.engine.webhooks.getDelivery(WS, sub.id, failed[0]!.id)).status === 'delivered');
      const redelivered = await h.engine.webhooks.getDelivery(WS, sub.id, failed[0]!.id);
      expect(redelivered).toMatchObject({ attempts: 2, last_response_status: 200, last_error: null });
      expect(redelivered.attempt_history[8]).toMatchObject({ error: 'No response within 15 s.', response_status: null, duration_ms: 15 * SECOND });
      expect(new Set(h.receiver.received.map((r) => r.id)).size).toBe(1);
      expect((await h.engine.webhooks.getDelivery(WS, sub.id, failed[0]!.id)).attempt_history).toHaveLength(10);
    });

    it('delivers everything to a receiver that recovers at hour 23', async () => {
      const h = await setup();
      const recoverAt = h.clock.now() + 23 * HOUR;
      h.receiver.reply(() => (h.clock.now() >= recoverAt ? { status: 204 } : { status: 503 }));
      const sub = await subscribe(h);
      const emitted: string[] = [];
      for (const at of [0, 1, 6, 12, 20]) {
        await h.clock.advanceTo(recoverAt - 23 * HOUR + at * HOUR);
        emitted.push(...(await h.emit(2)));
      }
      await eventually(h.clock, async () => (await deliveries(h, sub.id)).every((d) => d.status === 'delivered'), 30 * MINUTE, 200);
      const all = await deliveries(h, sub.id);
      expect(all).toHaveLength(10);
      expect(h.receiver.acknowledged.size).toBe(10);
      expect(all.map((d) => d.event_id).sort()).toEqual([...h.receiver.acknowledged].sort());
      expect(h.receiver.received.every((r) => r.at < recoverAt || r.at <= Date.parse('2026-01-02T00:00:00.000Z') + 20 * HOUR)).toBe(true);
      expect(emitted).toHaveLength(10);
    });

    it('disables the subscription at a 410, fails its open deliveries, and recovers them once re-enabled', async () => {
      const h = await setup({ perSubscription: 1 });
      h.receiver.reply(() => 'hang');
      const sub = await subscribe(h);
      await h.emit(3);
      await eventually(h.clock, () => h.receiver.received.length === 1);
      h.receiver.reply(() => ({ status: 410 }));
      await h.clock.advance(15 * SECOND);
      await eventually(h.clock, async () => (await h.engine.webhooks.get(WS, sub.id)).enabled === false);
      expect(await h.engine.webhooks.get(WS, sub.id)).toMatchObject({ enabled: false, disabled_reason: 'endpoint_gone' });
      await eventually(h.clock, async () => (await deliveries(h, sub.id)).every((d) => d.status === 'failed'));
      const gone = (await deliveries(h, sub.id)).find((d) => d.last_response_status === 410);
      expect(gone?.last_error).toMatch(/410/);
      // While disabled, new events create no delivery for it.
      await h.emit();
      await h.clock.advance(HOUR);
      expect(await deliveries(h, sub.id)).toHaveLength(3);

      h.receiver.reply(() => ({ status: 204 }));
      await h.engine.webhooks.update(WS, sub.id, { enabled: true });
      expect(await h.engine.webhooks.recover(WS, sub.id, { since: '2025-12-31T00:00:00Z' })).toEqual({ count: 3 });
      await eventually(h.clock, async () => (await deliveries(h, sub.id)).every((d) => d.status === 'delivered'));
      // Oldest first: one at a time (perSubscription 1), in creation order.
      const order = h.receiver.received.filter((r) => r.status === 204).map((r) => r.id);
      expect(order.slice(-3), JSON.stringify(h.receiver.received.map((r) => [r.id, r.at]))).toEqual((await deliveries(h, sub.id)).map((d) => d.event_id));
    });

    it('honours Retry-After on 429 and 503, and never follows a redirect', async () => {
      const h = await setup();
      let internalHits = 0;
      const internal = createServer((_req, res) => {
        internalHits++;
        res.end('secret');
      });
      await new Promise<void>((resolve) => internal.listen(0, '127.0.0.1', resolve));
      cleanup.push(() => new Promise<void>((resolve) => internal.close(() => resolve())));
      const internalUrl = `http://127.0.0.1:${(internal.address() as AddressInfo).port}/latest/meta-data`;
      const replies: WebhookReply[] = [
        { status: 429, headers: { 'retry-after': '120' } },
        { status: 503, headers: { 'retry-after': new Date(h.clock.now() + 2 * HOUR + 120 * SECOND + 3 * HOUR).toUTCString() } },
        { status: 302, headers: { location: internalUrl } },
        { status: 200 },
      ];
      h.receiver.reply(() => replies.shift()!);
      const sub = await subscribe(h);
      await h.emit();
      await eventually(h.clock, async () => (await deliveries(h, sub.id))[0]?.attempts === 1);
      const t0 = h.receiver.received[0]!.at;
      let [d] = await deliveries(h, sub.id);
      expect(Date.parse(d!.next_attempt_at!) - t0).toBe(120 * SECOND);
      await h.clock.advanceTo(Date.parse(d!.next_attempt_at!));
      await eventually(h.clock, async () => (await deliveries(h, sub.id))[0]?.attempts === 2);
      [d] = await deliveries(h, sub.id);
      // The HTTP date asks for 5 h after the second attempt's slot: later than the schedule's next (5 min).
      expect(Date.parse(d!.next_attempt_at!) - t0).toBe(2 * HOUR + 120 * SECOND + 3 * HOUR);
      await h.clock.advanceTo(Date.parse(d!.next_attempt_at!));
      await eventually(h.clock, async () => (await deliveries(h, sub.id))[0]?.attempts === 3);
      [d] = await deliveries(h, sub.id);
      expect(d).toMatchObject({ status: 'retrying', last_response_status: 302, last_error: 'HTTP 302: redirects are not followed.' });
      await h.clock.advanceTo(Date.parse(d!.next_attempt_at!));
      await eventually(h.clock, async () => (await deliveries(h, sub.id))[0]?.status === 'delivered');
      expect(internalHits).toBe(0);
    });

    it('times out a receiver that never answers and caps a huge response', async () => {
      const h = await setup();
      h.receiver.reply(() => 'hang');
      const sub = await subscribe(h);
      await h.emit();
      await eventually(h.clock, () => h.receiver.received.length === 1);
      // The next request gets an endless body.
      h.receiver.reply(() => 'huge');
      await h.clock.advance(14 * SECOND);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect((await deliveries(h, sub.id))[0]!.attempts).toBe(0);
      await h.clock.advance(1 * SECOND);
      await eventually(h.clock, async () => (await deliveries(h, sub.id))[0]!.status === 'delivered');
      const [d] = await deliveries(h, sub.id);
      expect(d).toMatchObject({ attempts: 2, last_response_status: 200 });
      const history = (await h.engine.webhooks.getDelivery(WS, sub.id, d!.id)).attempt_history;
      expect(history[0]).toMatchObject({ response_status: null, error: 'No response within 15 s.', duration_ms: 15 * SECOND });
      expect(history[1]).toMatchObject({ response_status: 200, error: null });
      expect(history[1]!.response_body).toBe('x'.repeat(1024));
    });

    it('signs with both secrets while a rotated one overlaps, then with the new one only', async () => {
      const h = await setup();
      const sub = await subscribe(h);
      const rotated = await h.engine.webhooks.rotateSecret(WS, sub.id, { previous_secret_expires_in: 3600 });
      secrets.push(rotated.secret);
      await h.emit();
      await eventually(h.clock, () => h.receiver.received.length === 1);
      const during = h.receiver.received[0]!;
      expect(during.signatures).toHaveLength(2);
      for (const secret of [sub.secret, rotated.secret]) {
        independentlyVerified(during, secret);
        verifyWebhook(during.body, during.headers, secret, { now: during.at });
      }
      await h.clock.advance(3600 * SECOND + 1);
      await h.emit();
      await eventually(h.clock, () => h.receiver.received.length === 2);
      const after = h.receiver.received[1]!;
      expect(after.signatures).toHaveLength(1);
      independentlyVerified(after, rotated.secret);
      expect(() => independentlyVerified(after, sub.secret)).toThrow();
      expect(() => verifyWebhook(after.body, after.headers, sub.secret, { now: after.at })).toThrow();
    });

    it('signs the very next delivery after a rotation with both secrets, even one a moment after a delivery', async () => {
      const h = await setup();
      const sub = await subscribe(h);
      await h.emit();
      await eventually(h.clock, () => h.receiver.received.length === 1);
      expect(h.receiver.received[0]!.signatures).toHaveLength(1);
      // No time passes: the subscription read for the first delivery is as fresh as it gets.
      const rotated = await h.engine.webhooks.rotateSecret(WS, sub.id);
      secrets.push(rotated.secret);
      await h.emit();
      await eventually(h.clock, () => h.receiver.received.length === 2);
      const next = h.receiver.received[1]!;
      expect(next.signatures).toHaveLength(2);
      for (const secret of [sub.secret, rotated.secret]) verifyWebhook(next.body, next.headers, secret, { now: next.at });
    });

    it('disables a subscription whose deliveries have all failed for 5 days', async () => {
      const h = await setup();
      h.receiver.reply(() => ({ status: 500 }));
      const sub = await subscribe(h);
      // Each step waits until every attempt due by then was made and recorded (durable state).
      const settled = async () => (await deliveries(h, sub.id)).every((d) => d.status === 'failed' || (d.status === 'retrying' && Date.parse(d.next_attempt_at!) > h.clock.now()));
      for (let day = 0; day <= 5 && (await h.engine.webhooks.get(WS, sub.id)).enabled; day++) {
        await h.emit();
        for (let hour = 0; hour < 24; hour++) {
          await eventually(h.clock, settled);
          await h.clock.advance(HOUR);
        }
      }
      await eventually(h.clock, async () => !(await h.engine.webhooks.get(WS, sub.id)).enabled, HOUR, 48);
      expect(await h.engine.webhooks.get(WS, sub.id)).toMatchObject({ enabled: false, disabled_reason: 'failing_for_too_long' });
      // Measured on the attempts' recorded start times, which the rule is about: the receiver's
      // arrival times also hold the virtual time that passed while a request was in flight.
      const attempted: number[] = [];
      for (const d of await deliveries(h, sub.id)) {
        for (const a of (await h.engine.webhooks.getDelivery(WS, sub.id, d.id)).attempt_history) attempted.push(Date.parse(a.attempted_at));
      }
      const last = Math.max(...attempted) - Math.min(...attempted);
      expect(last).toBeGreaterThanOrEqual(5 * DAY);
      expect(last).toBeLessThan(6 * DAY);
      expect((await deliveries(h, sub.id)).every((d) => d.status === 'failed')).toBe(true);
    });

    it('keeps a receiver that hangs from holding up another subscription', async () => {
      const h = await setup({ perSubscription: 2, maxInFlight: 8 });
      const slow = await startWebhookReceiver({ clock: h.clock });
      receivers.push(slow);
      cleanup.unshift(() => slow.close());
      slow.reply(() => 'hang');
      const stuck = await subscribe(h, { url: slow.url });
      const fast = await subscribe(h);
      await h.emit(12);
      // Small steps of virtual time (well under the 15 s timeout): the look past a full lane is paced on the clock.
      await eventually(h.clock, async () => (await deliveries(h, fast.id)).filter((d) => d.status === 'delivered').length === 12, 50, 100);
      expect(h.receiver.acknowledged.size).toBe(12);
      // The hanging receiver never holds more than its lane: 2 requests at once.
      expect(slow.received).toHaveLength(2);
      expect((await deliveries(h, stuck.id)).every((d) => d.status === 'pending')).toBe(true);
    });

    it('keeps going past what it cannot send: an orphan delivery, an unreadable secret, a response with NUL bytes', async () => {
      const h = await setup();
      const good = await subscribe(h);
      const broken = await subscribe(h);
      // A secret sealed under another key, as after a wrong secret-key change: it cannot be opened.
      await engineContext(h.engine).storage.knex('webhook_subscriptions').where({ id: broken.id }).update({ secret: (await engineContext(h.engine).storage.knex('webhook_subscriptions').where({ id: good.id }).first()).secret });
      const at = new Date(h.clock.now()).toISOString();
      // A delivery whose subscription no longer exists (a delete racing a fan-out).
      await engineContext(h.engine).storage.repos.deliveries.insertMany([{ id: 'dlv_orphan', workspace_id: WS, subscription_id: 'whk_gone', event_id: 'evt_orphan', event_type: 'pipeline.created', body: '{}', status: 'pending', attempts: 0, next_attempt_at: at, cycle_started_at: at, last_attempt_at: null, last_response_status: null, last_error: null, created_at: at, updated_at: at }]);
      h.receiver.reply((r) => (h.receiver.of(r.id).length === 1 ? { status: 500, body: 'bad\u0000bytes' } : { status: 204 }));
      await h.emit(3);
      await eventually(h.clock, async () => (await deliveries(h, good.id)).filter((d) => d.status === 'retrying').length === 3);
      const [first] = await deliveries(h, good.id);
      expect((await h.engine.webhooks.getDelivery(WS, good.id, first!.id)).attempt_history[0]!.response_body).toBe('bad\uFFFDbytes');
      await h.clock.advance(6 * SECOND);
      await eventually(h.clock, async () => (await deliveries(h, good.id)).every((d) => d.status === 'delivered'));
      const unsent = await deliveries(h, broken.id);
      expect(unsent.map((d) => [d.status, d.attempts])).toEqual([['failed', 0], ['failed', 0], ['failed', 0]]);
      expect(unsent[0]!.last_error).toMatch(/signing secret cannot be read/);
      expect(await engineContext(h.engine).storage.knex('deliveries').where({ id: 'dlv_orphan' }).first()).toBeUndefined();
      expect(h.receiver.received.every((r) => r.id !== 'evt_orphan')).toBe(true);
      secrets.splice(secrets.indexOf(broken.secret), 1);
    });

    it('shares the work between two engines without ever sending one attempt twice', async () => {
      // Small hands (4 deliveries each) and a short poll, so both engines claim while requests hang.
      const h = await setup({ perSubscription: 2, maxInFlight: 4, pollIntervalMs: SECOND });
      const second = await h.another();
      h.receiver.reply(() => 'hang');
      const sub = await subscribe(h);
      await h.emit(24);
      await eventually(h.clock, () => h.receiver.received.length === 4, 250);
      // Both engines hold claims at once (two requests each in flight, two waiting), on distinct deliveries.
      const holders = (await engineContext(h.engine).storage.knex('deliveries').whereNotNull('lease_token').select('lease_holder')) as Array<{ lease_holder: string }>;
      expect(new Set(holders.map((r) => r.lease_holder))).toEqual(new Set([h.engine.instanceId, second.instanceId]));
      expect(new Set(h.receiver.received.map((r) => r.id)).size).toBe(4);
      h.receiver.reply(() => ({ status: 204 }));
      await h.clock.advance(15 * SECOND);
      await eventually(h.clock, async () => (await deliveries(h, sub.id)).filter((d) => d.status === 'delivered').length === 24, 250);
      // Each delivery answered once; only the four that hung were sent a second time, after their timeout.
      expect(h.receiver.acknowledged.size).toBe(24);
      const sends = new Map<string, number>();
      for (const r of h.receiver.received) sends.set(r.id, (sends.get(r.id) ?? 0) + 1);
      expect([...sends.values()].filter((n) => n === 2)).toHaveLength(4);
      expect([...sends.values()].every((n) => n <= 2)).toBe(true);
      for (const r of h.receiver.received.filter((x) => x.status === 204)) expect(h.receiver.of(r.id).filter((x) => x.status === 204)).toHaveLength(1);
    });

    it('drops the open deliveries of a deleted subscription', async () => {
      const h = await setup();
      h.receiver.reply(() => ({ status: 500 }));
      const sub = await subscribe(h);
      await h.emit(2);
      await eventually(h.clock, async () => {
        const all = await deliveries(h, sub.id);
        return all.length === 2 && all.every((d) => d.attempts === 1);
      });
      await h.engine.webhooks.delete(WS, sub.id);
      await h.clock.advance(DAY);
      await settle();
      expect(h.receiver.received).toHaveLength(2);
    });
  });
}

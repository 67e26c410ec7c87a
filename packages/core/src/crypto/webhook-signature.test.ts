import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { generateWebhookSecret } from './webhook-secret.js';
import { signWebhook, verifyWebhook, webhookHeaders, WebhookVerificationError } from './webhook-signature.js';

// The Standard Webhooks known-answer vector.
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const ID = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
const TS = 1614265330;
const BODY = '{"test": 2432232314}';
const SIGNATURE = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';
const NOW = TS * 1000;

const reasonOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(WebhookVerificationError);
    expect((error as WebhookVerificationError).code).toBe('unauthenticated');
    return (error as WebhookVerificationError).reason;
  }
};

describe('webhook signatures (Standard Webhooks)', () => {
  it('signs the known-answer vector', () => {
    expect(signWebhook({ id: ID, timestamp: TS, body: BODY }, [SECRET])).toBe(SIGNATURE);
    expect(webhookHeaders({ id: ID, timestamp: TS, body: BODY }, [SECRET])).toEqual({
      'webhook-id': ID,
      'webhook-timestamp': String(TS),
      'webhook-signature': SIGNATURE,
      'x-service-signature': SIGNATURE,
    });
  });

  it('verifies the vector, from either signature header, with any casing and Fetch headers', () => {
    expect(verifyWebhook(BODY, { 'webhook-id': ID, 'webhook-timestamp': String(TS), 'webhook-signature': SIGNATURE }, SECRET, { now: NOW })).toEqual({ id: ID, timestamp: TS });
    expect(verifyWebhook(Buffer.from(BODY), { 'Webhook-Id': ID, 'Webhook-Timestamp': String(TS), 'X-Service-Signature': SIGNATURE }, SECRET, { now: NOW }).id).toBe(ID);
    const fetchHeaders = new Headers({ 'webhook-id': ID, 'webhook-timestamp': String(TS), 'webhook-signature': SIGNATURE });
    expect(verifyWebhook(BODY, fetchHeaders, [generateWebhookSecret(), SECRET], { now: NOW }).id).toBe(ID);
  });

  it('signs with every overlapping secret; a receiver with either verifies', () => {
    const other = generateWebhookSecret();
    const headers = webhookHeaders({ id: ID, timestamp: TS, body: BODY }, [other, SECRET]);
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(verifyWebhook(BODY, headers, SECRET, { now: NOW }).id).toBe(ID);
    expect(verifyWebhook(BODY, headers, other, { now: NOW }).id).toBe(ID);
  });

  it('rejects the negative cases', () => {
    const h = { 'webhook-id': ID, 'webhook-timestamp': String(TS), 'webhook-signature': SIGNATURE };
    expect(reasonOf(() => verifyWebhook(BODY, {}, SECRET, { now: NOW }))).toBe('missing_headers');
    expect(reasonOf(() => verifyWebhook(BODY, { ...h, 'webhook-id': undefined }, SECRET, { now: NOW }))).toBe('missing_headers');
    expect(reasonOf(() => verifyWebhook(BODY, { ...h, 'webhook-timestamp': 'yesterday' }, SECRET, { now: NOW }))).toBe('bad_timestamp');
    expect(reasonOf(() => verifyWebhook(BODY, { ...h, 'webhook-timestamp': '-5' }, SECRET, { now: NOW }))).toBe('bad_timestamp');
    expect(reasonOf(() => verifyWebhook(BODY, h, SECRET, { now: NOW + 301_000 }))).toBe('stale');
    expect(reasonOf(() => verifyWebhook(BODY, h, SECRET, { now: NOW - 301_000 }))).toBe('stale');
    expect(verifyWebhook(BODY, h, SECRET, { now: NOW + 299_000 }).id).toBe(ID);
    expect(reasonOf(() => verifyWebhook(BODY, h, generateWebhookSecret(), { now: NOW }))).toBe('bad_signature');
    expect(reasonOf(() => verifyWebhook(BODY + ' ', h, SECRET, { now: NOW }))).toBe('bad_signature');
    expect(reasonOf(() => verifyWebhook(BODY, { ...h, 'webhook-id': ID + 'x' }, SECRET, { now: NOW }))).toBe('bad_signature');
    expect(reasonOf(() => verifyWebhook(BODY, { ...h, 'webhook-signature': SIGNATURE.replace('v1,', 'v2,') }, SECRET, { now: NOW }))).toBe('bad_signature');
    expect(reasonOf(() => verifyWebhook(BODY, { ...h, 'webhook-signature': 'v1,@@@@' }, SECRET, { now: NOW }))).toBe('bad_signature');
    expect(reasonOf(() => verifyWebhook(BODY, { ...h, 'webhook-signature': 'garbage' }, SECRET, { now: NOW }))).toBe('bad_signature');
    expect(reasonOf(() => verifyWebhook(BODY, { ...h, 'webhook-signature': SIGNATURE.slice(0, -4) + 'AAA=' }, SECRET, { now: NOW }))).toBe('bad_signature');
  });

  it('fails when any byte of id, timestamp or body changes (property)', () => {
    const secret = generateWebhookSecret();
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 40 }).filter((s) => !s.includes(' ') && s.trim() === s),
        fc.uint8Array({ minLength: 1, maxLength: 200 }),
        fc.nat({ max: 2 }),
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        (id, body, field, at, flip) => {
          const timestamp = 1_700_000_000;
          const headers = webhookHeaders({ id, timestamp, body }, [secret]);
          const now = timestamp * 1000;
          expect(verifyWebhook(body, headers, secret, { now }).id).toBe(id);
          if (field === 0) {
            const bytes = Buffer.from(id);
            bytes[at % bytes.length]! ^= flip;
            const changed = bytes.toString();
            if (changed === id) return;
            expect(() => verifyWebhook(body, { ...headers, 'webhook-id': changed }, secret, { now })).toThrow(WebhookVerificationError);
          } else if (field === 1) {
            const changed = String(timestamp + 1 + (at % 100));
            expect(() => verifyWebhook(body, { ...headers, 'webhook-timestamp': changed }, secret, { now })).toThrow(WebhookVerificationError);
          } else {
            const changed = Uint8Array.from(body);
            changed[at % changed.length]! ^= flip;
            expect(() => verifyWebhook(changed, headers, secret, { now })).toThrow(WebhookVerificationError);
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});
